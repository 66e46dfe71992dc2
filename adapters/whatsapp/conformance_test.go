package whatsapp

import (
	"testing"

	"go.mau.fi/whatsmeow/types"

	"github.com/recallbot/recall/adapters/adaptertest"
)

// TestConformance runs the suite every chat adapter passes.
func TestConformance(t *testing.T) { adaptertest.Run(t, waHarness{}) }

// waHarness runs the full stack on the fake client: user 0 is the test
// user, user 1 the second one, the group is groupJID.
type waHarness struct{}

func (waHarness) Start(t *testing.T) adaptertest.Bot {
	return &waBot{t: t, s: newStack(t, stackOptions{})}
}

type waBot struct {
	t *testing.T
	s *stack
}

var waUsers = []types.JID{pnJID, user2JID}

func (b *waBot) Deliver(m adaptertest.Message) {
	b.t.Helper()
	sender := waUsers[m.User]
	var ok bool
	if m.Group {
		ok = b.s.group(sender, m.ID, m.Text, m.Mention)
	} else {
		ok = b.s.dm(sender, m.ID, m.Text)
	}
	if !ok {
		b.t.Fatalf("the adapter did not take message %s", m.ID)
	}
}

func (b *waBot) Chat(user int, group bool) string {
	if group {
		return groupJID.String()
	}
	return waUsers[user].String()
}

func (b *waBot) WaitSent(what string, match func(adaptertest.Sent) bool) adaptertest.Sent {
	b.t.Helper()
	m := b.s.wa.waitSent(what, func(m sentMsg) bool { return match(toSent(m)) })
	return toSent(m)
}

func (b *waBot) Sent() []adaptertest.Sent {
	var out []adaptertest.Sent
	for _, m := range b.s.wa.sentMsgs() {
		out = append(out, toSent(m))
	}
	return out
}

func toSent(m sentMsg) adaptertest.Sent { return adaptertest.Sent{Chat: m.To.String(), Text: m.Text()} }
