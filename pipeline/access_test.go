package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestAccessAllowed(t *testing.T) {
	tests := []struct {
		name    string
		open    bool
		allowed []string
		user    string
		want    bool
	}{
		{"listed", false, []string{"telegram:123"}, "telegram:123", true},
		{"not listed", false, []string{"telegram:123"}, "telegram:456", false},
		{"other channel same id", false, []string{"telegram:123"}, "whatsapp:123", false},
		{"console always", false, nil, "console:local", true},
		{"empty list", false, nil, "telegram:1", false},
		{"open", true, nil, "whatsapp:4915112345678", true},
		{"entry trimmed and channel lowercased", false, []string{" Telegram:123 "}, "telegram:123", true},
		{"query normalized", false, []string{"telegram:123"}, "TELEGRAM:123", true},
		{"blank entry ignored", false, []string{"", "  "}, "", false},
	}
	for _, tt := range tests {
		a := NewAccess(tt.open, tt.allowed)
		if got := a.Allowed(tt.user); got != tt.want {
			t.Errorf("%s: Allowed(%q) = %v, want %v", tt.name, tt.user, got, tt.want)
		}
	}
}

func TestAccessAllowDeny(t *testing.T) {
	a := NewAccess(false, []string{"telegram:1"})
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			u := fmt.Sprintf("whatsapp:%d", i)
			a.Allow(u)
			_ = a.Allowed(u)
			if i%2 == 0 {
				a.Deny(u)
			}
		})
	}
	wg.Wait()
	if got := len(a.Users()); got != 26 {
		t.Errorf("%d users after concurrent Allow/Deny, want 26", got)
	}
	a.Deny("telegram:1")
	a.Deny(ConsoleUser)
	tests := []struct {
		user string
		want bool
	}{
		{"telegram:1", false},
		{"whatsapp:1", true},
		{"whatsapp:2", false},
		{ConsoleUser, true},
	}
	for _, tt := range tests {
		if got := a.Allowed(tt.user); got != tt.want {
			t.Errorf("Allowed(%q) = %v, want %v", tt.user, got, tt.want)
		}
	}
	if users := a.Users(); !slices.IsSorted(users) || slices.Contains(users, ConsoleUser) {
		t.Errorf("Users() = %v", users)
	}
}

func TestAccessMiddleware(t *testing.T) {
	private := Inbound{Key: Key{Channel: "telegram", Chat: "999"}, SenderID: "999", MessageID: "1", Text: "hi"}
	allowed := Inbound{Key: tgKey, SenderID: "123", MessageID: "2", Text: "hi"}
	groupChatter := Inbound{Key: grpKey, SenderID: "999", MessageID: "3", Text: "lunch?", IsGroup: true}
	groupMention := Inbound{Key: grpKey, SenderID: "999", MessageID: "4", Text: "@RecallBot hi", IsGroup: true, MentionsBot: true}
	groupAllowed := Inbound{Key: grpKey, SenderID: "123", MessageID: "5", Text: "@RecallBot hi", IsGroup: true, MentionsBot: true}

	type step struct {
		in       Inbound
		wantNext bool
		wantSent bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"unknown told once, then silent", []step{
			{private, false, true},
			{private, false, false},
			{private, false, false},
		}},
		{"allowed goes on", []step{{allowed, true, false}, {allowed, true, false}}},
		{"group checks the sender", []step{{groupAllowed, true, false}, {groupMention, false, true}}},
		{"group chatter draws no refusal", []step{{groupChatter, false, false}, {groupMention, false, true}, {groupMention, false, false}}},
		{"told once across chats", []step{{groupMention, false, true}, {private, false, false}}},
	}
	for _, tt := range tests {
		a := NewAccess(false, []string{"telegram:123"})
		h := Chain(HandlerFunc(func(context.Context, *Turn) error {
			return errors.New("next reached")
		}), a.Middleware())
		for i, s := range tt.steps {
			r := &recorder{}
			err := h.Handle(context.Background(), &Turn{In: s.in, Out: r})
			if reached := err != nil; reached != s.wantNext {
				t.Errorf("%s step %d: next called = %v, want %v", tt.name, i, reached, s.wantNext)
			}
			sent := r.Sent()
			if (len(sent) == 1) != s.wantSent || len(sent) > 1 {
				t.Errorf("%s step %d: sent %d messages, want sent=%v", tt.name, i, len(sent), s.wantSent)
				continue
			}
			if len(sent) == 0 {
				continue
			}
			out := sent[0]
			id := s.in.UserID()
			if !out.Plain || out.Key != s.in.Key || !strings.Contains(out.Text, "Your id is "+id+".") ||
				!strings.Contains(out.Text, "access.allowed_users") || !strings.Contains(out.Text, "RECALL_ACCESS_ALLOWED_USERS") {
				t.Errorf("%s step %d: refusal %+v", tt.name, i, out)
			}
			if wantReply := map[bool]string{true: s.in.MessageID}[s.in.IsGroup]; out.ReplyTo != wantReply {
				t.Errorf("%s step %d: ReplyTo %q, want %q", tt.name, i, out.ReplyTo, wantReply)
			}
		}
	}
}

func TestAccessMiddlewareSendFailureRetries(t *testing.T) {
	a := NewAccess(false, nil)
	h := Chain(HandlerFunc(func(context.Context, *Turn) error {
		t.Error("next reached")
		return nil
	}), a.Middleware())
	in := Inbound{Key: Key{Channel: "whatsapp", Chat: "4915112345678@s.whatsapp.net"}, SenderID: "4915112345678", Text: "hi"}
	r := &recorder{err: errors.New("offline")}
	if err := h.Handle(context.Background(), &Turn{In: in, Out: r}); err == nil || !strings.Contains(err.Error(), "whatsapp:4915112345678") {
		t.Errorf("err = %v, want the failed send naming the user", err)
	}
	r.setErr(nil)
	if err := h.Handle(context.Background(), &Turn{In: in, Out: r}); err != nil {
		t.Fatal(err)
	}
	if n := len(r.Sent()); n != 1 {
		t.Errorf("sent %d after a failed first try, want 1", n)
	}
}

func TestAccessAllowThenDenyTellsAgain(t *testing.T) {
	a := NewAccess(false, nil)
	h := Chain(HandlerFunc(func(context.Context, *Turn) error { return nil }), a.Middleware())
	in := Inbound{Key: Key{Channel: "telegram", Chat: "7"}, SenderID: "7", Text: "hi"}
	r := &recorder{}
	run := func() { _ = h.Handle(context.Background(), &Turn{In: in, Out: r}) }
	run()
	a.Allow("telegram:7")
	run()
	a.Deny("telegram:7")
	run()
	run()
	if n := len(r.Sent()); n != 2 {
		t.Errorf("sent %d refusals, want 2 (before Allow and after Deny)", n)
	}
}
