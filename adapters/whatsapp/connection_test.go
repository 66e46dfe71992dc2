package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mau.fi/whatsmeow/proto/waCommon"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"
	"google.golang.org/protobuf/proto"

	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// A temporary ban (after which whatsmeow does not reconnect) stops the
// channel until the ban's expiry, says so with the reason and the expiry
// in /healthz, then reconnects.
func TestTemporaryBanWaitsForTheExpiry(t *testing.T) {
	s := newStack(t, stackOptions{})
	waits := make(chan time.Duration, 1)
	fire := make(chan time.Time)
	s.ad.after = func(d time.Duration) <-chan time.Time { waits <- d; return fire }
	// As whatsmeow: the connection is closed, no Disconnected event.
	s.wa.keepaliveDrop()
	s.wa.deliver(&events.TemporaryBan{Code: events.TempBanSentToTooManyPeople, Expire: 90 * time.Minute})
	if d := <-waits; d != 90*time.Minute {
		t.Errorf("waits %s before reconnecting, want the ban's 1h30m", d)
	}
	h := fmt.Sprint(s.ad.Health())
	if !strings.Contains(h, "temporarily banned") || !strings.Contains(h, "too many messages") || !strings.Contains(h, "until") || strings.Contains(h, "reconnecting;") {
		t.Errorf("/healthz says %q, want the ban, its reason and its expiry", h)
	}
	if !strings.Contains(s.logs.String(), "expires=") {
		t.Error("the log does not give the ban's expiry")
	}
	fire <- time.Now()
	s.wa.waitFor("the login at the expiry", func() bool { return s.wa.logins == 2 })
	if err := s.ad.Health(); err != nil {
		t.Errorf("after the ban: Health = %v", err)
	}
}

// A refused connection (whatsmeow gives up on it) is reported and retried
// later.
func TestRefusedConnectionIsRetried(t *testing.T) {
	s := newStack(t, stackOptions{})
	waits := make(chan time.Duration, 1)
	fire := make(chan time.Time)
	s.ad.after = func(d time.Duration) <-chan time.Time { waits <- d; return fire }
	s.wa.keepaliveDrop()
	s.wa.deliver(&events.ConnectFailure{Reason: events.ConnectFailureBadUserAgent, Message: "bad ua"})
	<-waits
	if h := fmt.Sprint(s.ad.Health()); !strings.Contains(h, "refused the connection (409") {
		t.Errorf("/healthz says %q, want the refusal and its code", h)
	}
	fire <- time.Now()
	s.wa.waitFor("the reconnect", func() bool { return s.wa.connects == 2 && s.wa.connected })
}

// The watchdog reconnects a connection that has been down too long while
// whatsmeow's own reconnecting got nowhere (and said nothing).
func TestWatchdogReconnects(t *testing.T) {
	s := newStack(t, stackOptions{tune: func(a *Adapter) { a.watchEvery, a.downAfter = time.Millisecond, 0 }})
	s.wa.keepaliveDrop()
	s.wa.waitFor("the watchdog's reconnect", func() bool { return s.wa.connects >= 2 && s.wa.connected })
	if !strings.Contains(s.logs.String(), "not connected for") {
		t.Error("the watchdog's reconnect is not logged")
	}
}

// A websocket that goes silent (keepalives unanswered) is detected and
// reconnected; the message received before the drop is answered once, its
// reply sent after the reconnect, and WhatsApp's redelivery of it (its ack
// was lost with the socket) is not answered again.
func TestSilentSocketIsReconnected(t *testing.T) {
	s := newStack(t, stackOptions{})
	s.wa.mu.Lock()
	s.wa.silent = true
	s.wa.mu.Unlock()
	id := s.id()
	if !s.dm(pnJID, id, "are you there?") {
		t.Fatal("message not taken")
	}
	s.wa.waitFor("the reply to hang on the silent socket", func() bool { return s.wa.blocked == 1 })
	s.wa.deliver(&events.KeepAliveTimeout{ErrorCount: 4, LastSuccess: time.Now().Add(-2 * time.Minute)})
	s.waitText(pnJID, "echo: are you there?")
	if s.wa.connects < 2 {
		t.Error("no reconnect")
	}
	s.dm(pnJID, id, "are you there?") // redelivered after the reconnect
	s.dm(pnJID, s.id(), "barrier")
	s.waitText(pnJID, "echo: barrier")
	if n := len(s.wa.delivered()); n != 2 {
		t.Errorf("the user sees %d messages, want 2: %q", n, s.wa.texts())
	}
}

// A message that could not be stored is not acknowledged, and the adapter
// reconnects (after a backoff) so WhatsApp delivers it again soon — not
// only at the next natural reconnect.
func TestAcceptFailureForcesAReconnect(t *testing.T) {
	failing := make(chan bool, 1)
	failing <- true
	s := newStack(t, stackOptions{accept: func(ctx context.Context, in pipeline.Inbound, next pipeline.AcceptFunc) error {
		f := <-failing
		failing <- false
		if f {
			return errors.New("disk full")
		}
		return next(ctx, in)
	}})
	id := s.id()
	if s.dm(pnJID, id, "keep this") {
		t.Fatal("acknowledged a message that was not stored")
	}
	s.wa.waitFor("a reconnect for the redelivery", func() bool { return s.wa.connects == 2 && s.wa.connected })
	if !s.dm(pnJID, id, "keep this") {
		t.Fatal("the redelivery was not taken")
	}
	s.waitText(pnJID, "echo: keep this")
}

// A handler that panics does not take the process down: the message is
// not acknowledged (WhatsApp delivers it again).
func TestHandlerPanicIsNotAcknowledged(t *testing.T) {
	fc := newFakeClient(t)
	panics := true
	a, err := New(Options{Client: fc}, func(pipeline.Inbound, pipeline.Sender) error {
		if panics {
			panics = false
			panic("boom")
		}
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	fc.waitFor("connected", func() bool { return fc.connected })
	ev := msgEvent(pnJID, pnJID, "P1", "hello")
	ev.Info.Timestamp = time.Now()
	if fc.deliver(ev) {
		t.Error("a message whose handler panicked was acknowledged")
	}
	if !fc.deliver(ev) {
		t.Error("the redelivery was not taken")
	}
	cancel()
	<-errc
	a.Close()
}

// A retry receipt (a recipient's device could not decrypt a reply) is
// answered with the reply as sent, by its id.
func TestMessageForRetry(t *testing.T) {
	s := newStack(t, stackOptions{})
	id, err := s.ad.Send(context.Background(), pipeline.Outbound{Key: dmKey(pnJID), Text: "decrypt me", ReplyTo: "M9"})
	if err != nil {
		t.Fatal(err)
	}
	if m := s.ad.messageForRetry(pnJID, types.MessageID(id)); m.GetConversation() != "decrypt me" {
		t.Errorf("message for retry = %v, want the reply", m)
	}
	if m := s.ad.messageForRetry(pnJID, "3EB0UNKNOWN"); m != nil {
		t.Errorf("an unknown id gave %v", m)
	}
}

// A retry receipt for a reply sent before a restart is answered from the
// stored replies: every part of a split reply, whether the receipt names
// the chat by phone number or by LID. Without it the recipient's phone
// shows "Waiting for this message" for good.
func TestMessageForRetryAfterRestart(t *testing.T) {
	long := strings.Repeat("word ", 60) + "END"
	s := newStack(t, stackOptions{splitLimit: 120, llm: func(llmtest.Request) llmtest.Response { return llmtest.Response{Text: long} }})
	s.dm(pnJID, "M1", "tell me a long story")
	s.waitText(pnJID, "END")
	var ids []types.MessageID
	var texts []string
	for _, m := range s.wa.sentMsgs() {
		if m.To == pnJID {
			ids, texts = append(ids, types.MessageID(m.ID)), append(texts, m.Text())
		}
	}
	if len(ids) < 2 {
		t.Fatalf("the reply went out in %d parts, want a split reply", len(ids))
	}
	s.restart()
	for i, id := range ids {
		for _, to := range []types.JID{pnJID, lidJID} {
			m := s.ad.messageForRetry(to, id)
			if got := m.GetExtendedTextMessage().GetText() + m.GetConversation(); got != texts[i] {
				t.Errorf("part %d asked in chat %s after a restart = %q, want %q", i+1, to, got, texts[i])
			}
		}
	}
	if m := s.ad.messageForRetry(lidJID, "3EB0000000000000000000"); m != nil {
		t.Errorf("an id the bot never sent gave %v", m)
	}
}

// A reply whose send failed while the connection was down is kept in the
// outbox and sent once the connection is back, once; a restart after that
// does not send it again.
func TestReplyFailedWhileDownIsSentAfterReconnect(t *testing.T) {
	s := newStack(t, stackOptions{tune: func(a *Adapter) { a.sendWait = 20 * time.Millisecond }})
	s.outbox.SetRetryBackoff(time.Millisecond, 5*time.Millisecond)
	s.wa.keepaliveDrop()
	id := s.id()
	if !s.dm(pnJID, id, "answer me later") {
		t.Fatal("message not taken")
	}
	s.wa.waitFor("a retry while down", func() bool { return s.wa.retries >= 1 })
	s.wa.reconnected()
	s.waitText(pnJID, "echo: answer me later")
	s.restart()
	s.dm(pnJID, s.id(), "barrier")
	s.waitText(pnJID, "echo: barrier")
	if n := s.count(pnJID, "echo: answer me later"); n != 1 {
		t.Errorf("the reply was sent %d times, want 1", n)
	}
}

// When the linked phone has not been seen for 12 days (WhatsApp unlinks
// companions after about 14), /healthz and the log say so; a receipt from
// the phone clears it. The sighting survives a restart.
func TestPhoneNotSeenWarns(t *testing.T) {
	var clock atomic.Int64
	now := func() time.Time { return time.Unix(clock.Load(), 0) }
	s := newStack(t, stackOptions{tune: func(a *Adapter) { a.now, a.watchEvery = now, time.Millisecond }})
	clock.Store(time.Now().Unix() + 1) // after the phone's first sighting
	if err := s.ad.Health(); err != nil {
		t.Fatalf("Health = %v", err)
	}
	clock.Add(int64(13 * 24 * time.Hour / time.Second))
	h := fmt.Sprint(s.ad.Health())
	if !strings.Contains(h, "phone has not been online for 13 days") || !strings.Contains(h, "open WhatsApp on the phone") {
		t.Errorf("/healthz says %q, want the phone warning", h)
	}
	phone := s.wa.Me().PN // device 0: the phone
	s.wa.deliver(&events.Receipt{MessageSource: types.MessageSource{Chat: pnJID, Sender: phone, IsFromMe: true}, Type: types.ReceiptTypeRead})
	if err := s.ad.Health(); err != nil {
		t.Errorf("after the phone was seen: Health = %v", err)
	}
	clock.Add(int64(2 * time.Hour / time.Second))
	s.wa.deliver(&events.Receipt{MessageSource: types.MessageSource{Chat: pnJID, Sender: phone, IsFromMe: true}, Type: types.ReceiptTypeRead})
	s.restart()
	if err := s.ad.Health(); err != nil {
		t.Errorf("after a restart: Health = %v (the sighting was not kept)", err)
	}
}

// A direct message that could not be decrypted and of which no readable
// copy came in time: the sender is asked to send it again. When the copy
// comes, nobody is asked.
func TestUndecryptableMessage(t *testing.T) {
	fires := make(chan func(), 2)
	s := newStack(t, stackOptions{tune: func(a *Adapter) {
		a.afterFunc = func(d time.Duration, f func()) func() bool {
			if d != 2*time.Minute {
				t.Errorf("waits %s for a readable copy, want 2m", d)
			}
			fires <- f
			return func() bool { return true }
		}
	}})
	undecryptable := func(id string) *events.UndecryptableMessage {
		return &events.UndecryptableMessage{Info: types.MessageInfo{
			MessageSource: types.MessageSource{Chat: pnJID, Sender: pnJID}, ID: id, Timestamp: time.Now()}}
	}
	// No copy comes: asked again, in reply to the lost message.
	s.wa.deliver(undecryptable("U1"))
	(<-fires)()
	m := s.waitText(pnJID, UnreadableReply)
	if m.Quoted() != "" && m.Quoted() != "U1" {
		t.Errorf("quotes %q", m.Quoted())
	}
	// The copy comes: the timer's end finds nothing to ask.
	s.wa.deliver(undecryptable("U2"))
	fire := <-fires
	s.dm(pnJID, "U2", "here it is")
	s.waitText(pnJID, "echo: here it is")
	fire()
	s.dm(pnJID, s.id(), "barrier")
	s.waitText(pnJID, "echo: barrier")
	if n := s.count(pnJID, UnreadableReply); n != 1 {
		t.Errorf("asked %d times, want once (not for the message that came readable)", n)
	}
	// Groups: not asked (the message may not have been for the bot).
	s.wa.deliver(&events.UndecryptableMessage{Info: types.MessageInfo{
		MessageSource: types.MessageSource{Chat: groupJID, Sender: pnJID, IsGroup: true}, ID: "U3"}})
	select {
	case <-fires:
		t.Error("waits for a group message")
	default:
	}
}

// In a chat with disappearing messages the reply carries the chat's timer
// (the phone warns about a message without it); once the timer is off,
// replies carry none.
func TestDisappearingMessagesTimer(t *testing.T) {
	s := newStack(t, stackOptions{})
	const week = 7 * 24 * 3600
	ev := extEvent(pnJID, pnJID, s.id(), "secret plans", &waE2E.ContextInfo{Expiration: proto.Uint32(week)})
	ev.Info.Timestamp = time.Now()
	s.wa.deliver(ev)
	m := s.waitText(pnJID, "echo: secret plans")
	if got := m.Msg.GetExtendedTextMessage().GetContextInfo().GetExpiration(); got != week {
		t.Errorf("the reply's timer is %d s, want the chat's %d", got, week)
	}
	s.dm(pnJID, s.id(), "timer off now")
	m = s.waitText(pnJID, "echo: timer off now")
	if got := m.Msg.GetExtendedTextMessage().GetContextInfo().GetExpiration(); got != 0 {
		t.Errorf("after the timer was turned off the reply carries %d s", got)
	}
}

// The account is "unavailable" (the phone keeps its notifications) except
// while it types: available, composing… paused, unavailable. "typing…" is
// not sent again within 10 seconds.
func TestPresenceOnlyWhileTyping(t *testing.T) {
	s := newStack(t, stackOptions{})
	s.wa.waitFor("unavailable at connect", func() bool { return s.wa.offline >= 1 })
	ctx := context.Background()
	for range 3 {
		if err := s.ad.Typing(ctx, dmKey(pnJID)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ad.Send(ctx, pipeline.Outbound{Key: dmKey(pnJID), Text: "done"}); err != nil {
		t.Fatal(err)
	}
	s.wa.mu.Lock()
	defer s.wa.mu.Unlock()
	got := strings.Join(s.wa.presenceLog, " ")
	if want := "unavailable available composing paused unavailable"; got != want {
		t.Errorf("presences %q, want %q", got, want)
	}
}

// Replies are paced: the parts of one reply a second or so apart (with
// jitter), and all chats together within a budget of messages a minute.
func TestSendingIsPaced(t *testing.T) {
	var mu sync.Mutex
	var waits []time.Duration
	at := time.Now()
	s := newStack(t, stackOptions{splitLimit: 100, tune: func(a *Adapter) {
		a.now = func() time.Time { return at } // the clock stands still: the budget does not refill
		a.pace, a.partGap = newPacer(2, 2), time.Second
		a.pause = func(_ context.Context, d time.Duration) bool {
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
			return true
		}
	}})
	text := strings.Repeat("word ", 50) // three parts of at most 100 characters
	if _, err := s.ad.Send(context.Background(), pipeline.Outbound{Key: dmKey(pnJID), Text: text, Plain: true}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) != 2 {
		t.Fatalf("waits %v, want 2 (before parts 2 and 3)", waits)
	}
	if waits[0] < time.Second || waits[0] > 1500*time.Millisecond {
		t.Errorf("gap before part 2 = %s, want 1–1.5 s", waits[0])
	}
	if waits[1] != 30*time.Second {
		t.Errorf("wait before part 3 = %s, want 30 s (a budget of 2 a minute, 2 spent)", waits[1])
	}
}

func TestPacer(t *testing.T) {
	p := newPacer(60, 2) // one a second, bursts of 2
	t0 := time.Unix(1000, 0)
	for i, tt := range []struct {
		at   time.Duration
		want time.Duration
	}{{0, 0}, {0, 0}, {0, time.Second}, {0, 2 * time.Second}, {10 * time.Second, 0}, {10 * time.Second, 0}, {10 * time.Second, time.Second}} {
		if got := p.reserve(t0.Add(tt.at)); got != tt.want {
			t.Errorf("message %d at +%s: wait %s, want %s", i+1, tt.at, got, tt.want)
		}
	}
	if (*pacer)(nil).reserve(t0) != 0 {
		t.Error("no pacer waits")
	}
}

// revokeEvent is sender deleting message id in chat for everyone.
func revokeEvent(chat, sender types.JID, id string) *events.Message {
	ev := msgEvent(chat, sender, "REV"+id, "")
	ev.Message = &waE2E.Message{ProtocolMessage: &waE2E.ProtocolMessage{
		Type: waE2E.ProtocolMessage_REVOKE.Enum(),
		Key:  &waCommon.MessageKey{RemoteJID: proto.String(chat.String()), ID: proto.String(id)},
	}}
	ev.Info.Timestamp = time.Now()
	return ev
}

// "Delete for everyone" removes the message from the bot's memory (as a
// purge of that one message); someone else's deletion in a group does not.
func TestRevokeForgetsTheMessage(t *testing.T) {
	s := newStack(t, stackOptions{})
	const secret = "zqxoops5512"
	id := s.id()
	s.dm(pnJID, id, "my pin is "+secret)
	s.waitText(pnJID, "echo: my pin is")
	if !s.wa.deliver(revokeEvent(pnJID, pnJID, id)) {
		t.Fatal("the deletion was not acknowledged")
	}
	if stored, _ := s.lookup(dmKey(pnJID), id); stored {
		t.Error("the deleted message is still stored")
	}
	if hits, err := s.store.Search(context.Background(), dmKey(pnJID), memory.Query{Text: secret}); err != nil || len(hits) != 0 {
		t.Errorf("search finds the deleted message: %v, %v", hits, err)
	}
	// In a group, another member deleting it (an admin) changes nothing.
	gid := s.id()
	s.group(pnJID, gid, "group words "+secret, true)
	s.waitText(groupJID, "echo: group words")
	s.wa.deliver(revokeEvent(groupJID, user2JID, gid))
	gkey := pipeline.Key{Channel: Channel, Chat: groupJID.String()}
	if stored, _ := s.lookup(gkey, gid); !stored {
		t.Error("another member's deletion removed the message")
	}
	s.wa.deliver(revokeEvent(groupJID, pnJID, gid))
	if stored, _ := s.lookup(gkey, gid); stored {
		t.Error("the author's deletion in a group did not remove the message")
	}
}
