package whatsapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"

	"github.com/recallbot/recall/adapters/adaptertest"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// promptHas reports whether any message of the prompt contains sub.
func promptHas(msgs []llm.Message, sub string) bool {
	for _, m := range msgs {
		if strings.Contains(m.Content, sub) {
			return true
		}
	}
	return false
}

// A direct conversation goes on after a restart: the prompt after the
// restart carries the turns from before it.
func TestDirectConversationSurvivesRestart(t *testing.T) {
	s := newStack(t, stackOptions{})
	if !s.dm(pnJID, s.id(), "my favourite colour is teal") {
		t.Fatal("message not taken")
	}
	s.waitText(pnJID, "echo: my favourite colour is teal")

	s.restart()
	s.dm(pnJID, s.id(), "what is my favourite colour?")
	s.waitText(pnJID, "echo: what is my favourite colour?")
	p := s.lastPrompt()
	if !promptHas(p, "my favourite colour is teal") || !promptHas(p, "echo: my favourite colour is teal") {
		t.Errorf("the prompt after the restart lacks the earlier turns: %+v", p)
	}
}

// /summary asks with numbered choices and takes numbers as answers.
func TestSummaryFlowByNumbers(t *testing.T) {
	s := newStack(t, stackOptions{})
	s.dm(pnJID, s.id(), "/summary")
	q := s.waitText(pnJID, "Step 1 of 2")
	for _, want := range []string{"1. SQLite (recommended)", "2. JSON file", "3. Cancel"} {
		if !strings.Contains(q.Text(), want) {
			t.Errorf("question %q lacks %q", q.Text(), want)
		}
	}
	s.dm(pnJID, s.id(), "2")
	s.waitText(pnJID, "Step 2 of 2")
	s.dm(pnJID, s.id(), "15")
	s.waitText(pnJID, "Long-term memory is configured")
	st, err := s.store.Settings(context.Background(), dmKey(pnJID).Owner())
	if err != nil {
		t.Fatal(err)
	}
	if st.Storage != memory.StorageJSON || st.Threshold != 15 {
		t.Errorf("settings = %+v, want json / 15", st)
	}
	if len(s.llm.Requests()) != 0 {
		t.Errorf("the LLM was asked %d times during a command flow", len(s.llm.Requests()))
	}
}

// In a group the bot answers when mentioned or replied to, and not other
// chatter; with "always" it answers everything.
func TestGroupMentionGating(t *testing.T) {
	s := newStack(t, stackOptions{})
	s.group(pnJID, "G1", "just chatting among us", false)
	s.group(user2JID, "G2", "what is the capital of France?", true)
	reply := s.waitText(groupJID, "echo: what is the capital of France?")
	if reply.Quoted() != "G2" {
		t.Errorf("group reply quotes %q, want G2", reply.Quoted())
	}
	if n := s.count(groupJID, "just chatting"); n != 0 {
		t.Errorf("answered a message without mention %d times", n)
	}
	// A quoted reply to the bot is addressed to it.
	s.wa.deliver(quotedReply(groupJID, pnJID, "G3", "and of Spain?", reply.ID))
	s.waitText(groupJID, "echo: and of Spain?")
	if st, _ := s.lookup(dmKey(groupJID), "G1"); st {
		t.Error("unaddressed group chatter was stored")
	}

	a := newStack(t, stackOptions{groupsReply: GroupsReplyAlways})
	a.group(pnJID, "G1", "anyone here?", false)
	a.waitText(groupJID, "echo: anyone here?")
}

// A reply longer than the split limit arrives in several messages, each
// within the limit, formatted spans closed and reopened at the cuts.
func TestLongReplySplit(t *testing.T) {
	para := strings.Repeat("**Recall** keeps every word you say. ", 12)
	long := strings.TrimSpace(para) + "\n\n" + strings.TrimSpace(para) + "\n\n" + strings.TrimSpace(para)
	s := newStack(t, stackOptions{splitLimit: 500, llm: func(llmtest.Request) llmtest.Response { return llmtest.Response{Text: long} }})
	s.dm(pnJID, s.id(), "tell me a lot")
	s.waitText(pnJID, "word you say.")
	// The whole reply is sent before "paused".
	s.wa.waitFor("the typing indicator to be cleared", func() bool {
		n := len(s.wa.presences)
		return n > 0 && s.wa.presences[n-1].State == types.ChatPresencePaused
	})
	msgs := s.wa.sentMsgs()
	if len(msgs) < 3 {
		t.Fatalf("got %d messages, want the reply split in at least 3", len(msgs))
	}
	var total int
	for _, m := range msgs {
		text := m.Text()
		if n := utf8.RuneCountInString(text); n > 500 {
			t.Errorf("message of %d characters > 500", n)
		}
		if strings.Count(text, "*")%2 != 0 {
			t.Errorf("unbalanced bold in %q", text)
		}
		if !strings.HasPrefix(text, "*Recall*") {
			t.Errorf("part does not start at a span or paragraph: %q", text[:30])
		}
		total += strings.Count(text, "*Recall*")
		if m.Quoted() != "" {
			t.Error("a reply in a direct chat quotes the message")
		}
	}
	if total != 36 {
		t.Errorf("%d of 36 bold words arrived", total)
	}
}

// A duplicate delivery is answered once, also after a restart.
func TestDuplicateDeliveryAnsweredOnce(t *testing.T) {
	s := newStack(t, stackOptions{})
	id := s.id()
	s.dm(pnJID, id, "only once please")
	s.waitText(pnJID, "echo: only once please")
	if !s.dm(pnJID, id, "only once please") {
		t.Error("a duplicate was not acknowledged")
	}
	// Turns of one conversation run in order: once the next message is
	// answered, a second answer to the duplicate would have been sent.
	s.dm(pnJID, s.id(), "barrier one")
	s.waitText(pnJID, "echo: barrier one")

	s.restart()
	s.dm(pnJID, id, "only once please")
	s.dm(pnJID, s.id(), "barrier two")
	s.waitText(pnJID, "echo: barrier two")
	if n := s.count(pnJID, "echo: only once please"); n != 1 {
		t.Errorf("answered %d times, want once", n)
	}
	if n := len(s.llm.Requests()); n != 3 {
		t.Errorf("the LLM was asked %d times, want 3", n)
	}
}

// A person writing from their @lid id is the same user and conversation as
// from their phone number: one history, one access entry, replies to the
// phone JID.
func TestLIDSenderIsSameUser(t *testing.T) {
	s := newStack(t, stackOptions{allowed: []string{"whatsapp:" + userPhone}})
	s.dm(pnJID, s.id(), "I live in Lisbon")
	s.waitText(pnJID, "echo: I live in Lisbon")
	s.wa.deliver(lidEvent(s.id(), "where do I live?"))
	s.waitText(pnJID, "echo: where do I live?")
	if !promptHas(s.lastPrompt(), "I live in Lisbon") {
		t.Error("the @lid message did not continue the phone-number conversation")
	}
	for _, m := range s.wa.sentMsgs() {
		if m.To != pnJID {
			t.Errorf("sent to %s, want %s", m.To, pnJID)
		}
	}
}

// Messages queued while the bot was offline: older than the backlog window
// they are stored but not answered (nor after a restart); younger ones are
// answered.
func TestOfflineBacklog(t *testing.T) {
	s := newStack(t, stackOptions{})
	old := msgEvent(pnJID, pnJID, "OLD1", "are you there? (sent long ago)")
	old.Info.Timestamp = time.Now().Add(-30 * time.Minute)
	young := msgEvent(pnJID, pnJID, "YOUNG1", "hello again")
	young.Info.Timestamp = time.Now().Add(-2 * time.Minute)
	if !s.wa.deliver(old) || !s.wa.deliver(young) {
		t.Fatal("backlog not taken")
	}
	s.waitText(pnJID, "echo: hello again")
	if n := s.count(pnJID, "long ago"); n != 0 {
		t.Errorf("answered the stale message %d times", n)
	}
	stored, answered := s.lookup(dmKey(pnJID), "OLD1")
	if !stored || answered {
		t.Errorf("stale message stored=%v answered=%v, want stored, unanswered", stored, answered)
	}
	if !promptHas(s.lastPrompt(), "sent long ago") {
		t.Error("the stale message is not part of the history")
	}
	s.restart()
	s.dm(pnJID, s.id(), "barrier")
	s.waitText(pnJID, "echo: barrier")
	if n := s.count(pnJID, "long ago"); n != 0 {
		t.Errorf("answered the stale message after a restart")
	}
}

// LoggedOut stops only this adapter, with a clear error; the pipeline goes
// on serving other channels.
func TestLoggedOutStopsOnlyThisAdapter(t *testing.T) {
	s := newStack(t, stackOptions{allowed: []string{"whatsapp:" + userPhone, pipeline.ConsoleUser}})
	s.wa.deliver(&events.LoggedOut{Reason: events.ConnectFailureLoggedOut})
	var err error
	select {
	case err = <-s.runErr:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after LoggedOut")
	}
	s.cancel = nil
	if !errors.Is(err, ErrLoggedOut) || !strings.Contains(err.Error(), "bot whatsapp login") {
		t.Errorf("Run = %v, want ErrLoggedOut naming the login command", err)
	}
	if !strings.Contains(s.logs.String(), "linked device was removed") {
		t.Error("the log does not say the device was removed")
	}
	// Another channel on the same dispatcher is still answered.
	out := &recorder{got: make(chan string, 4)}
	in := pipeline.Inbound{Key: pipeline.Key{Channel: "console", Chat: "local"}, SenderID: "local", MessageID: "c1", Text: "still alive?", Time: time.Now()}
	if err := s.disp.Submit(in, out); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-out.got:
		if got != "echo: still alive?" {
			t.Errorf("console got %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other channel was not answered")
	}
	// Messages arriving after the stop are not taken.
	if s.dm(pnJID, s.id(), "hello?") {
		t.Error("a message was taken after LoggedOut")
	}
	s.shutdown()
}

// recorder is a Sender of another channel.
type recorder struct{ got chan string }

func (r *recorder) Send(_ context.Context, out pipeline.Outbound) (string, error) {
	r.got <- out.Text
	return "", nil
}

// StreamReplaced (a second copy of the bot) stops this channel.
func TestStreamReplacedStops(t *testing.T) {
	s := newStack(t, stackOptions{})
	s.wa.deliver(&events.StreamReplaced{})
	if err := <-s.runErr; !errors.Is(err, ErrStreamReplaced) {
		t.Errorf("Run = %v, want ErrStreamReplaced", err)
	}
	s.cancel = nil
	s.shutdown()
}

func TestRunWithoutSession(t *testing.T) {
	fc := newFakeClient(t)
	fc.session = false
	a, err := New(Options{Client: fc}, func(pipeline.Inbound, pipeline.Sender) error { return nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = a.Run(context.Background())
	if !errors.Is(err, ErrNotLinked) || !strings.Contains(err.Error(), "bot whatsapp login") {
		t.Errorf("Run = %v, want ErrNotLinked naming the login command", err)
	}
	if fc.connects != 0 {
		t.Error("connected without a session")
	}
}

// A 405 "client outdated" fetches the current version and reconnects with
// it; a 405 that persists (the fetched version is the rejected one) stops
// the channel with an error, in the log and /healthz, that says what to do.
func TestClientOutdated(t *testing.T) {
	keepVersion(t)
	fc := newFakeClient(t)
	fc.onConnect = []any{&events.ClientOutdated{}, &events.Connected{}}
	v1, v2 := store.WAVersionContainer{2, 3000, 1000000001}, store.WAVersionContainer{2, 3000, 1000000002}
	var mu sync.Mutex
	fetched := []store.WAVersionContainer{v1, v2, v2}
	calls := 0
	logs := &adaptertest.SyncBuffer{}
	a, err := New(Options{Client: fc, DataDir: t.TempDir(), Log: slog.New(slog.NewTextHandler(logs, nil)),
		LatestVersion: func(context.Context) (store.WAVersionContainer, error) {
			mu.Lock()
			defer mu.Unlock()
			v := fetched[min(calls, len(fetched)-1)]
			calls++
			return v, nil
		}}, func(pipeline.Inbound, pipeline.Sender) error { return nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- a.Run(context.Background()) }()
	fc.waitFor("a reconnect", func() bool { return fc.connected && fc.connects == 2 })
	if got := currentClientVersion(); got != v2 {
		t.Errorf("reconnected with %s, want the fetched %s", got, v2)
	}
	fc.deliver(&events.ClientOutdated{})
	err = <-errc
	var oe *OutdatedError
	if !errors.As(err, &oe) || !errors.Is(err, ErrOutdated) || oe.Version != v2 {
		t.Fatalf("Run = %v, want an OutdatedError for %s", err, v2)
	}
	for what, text := range map[string]string{"error": err.Error(), "log": logs.String(), "healthz": fmt.Sprint(a.Health())} {
		if !strings.Contains(text, "whatsapp.client_version") || !strings.Contains(text, v2.String()) {
			t.Errorf("the %s does not say which version was refused and what to do: %s", what, text)
		}
	}
	a.Close()
}

// keepVersion restores whatsmeow's process-wide client version after the
// test.
func keepVersion(t *testing.T) {
	v := currentClientVersion()
	t.Cleanup(func() { setClientVersion(v) })
}

// A connect failure is retried with backoff.
func TestConnectRetried(t *testing.T) {
	fc := newFakeClient(t)
	fc.connectErr = []error{errors.New("network down"), errors.New("still down")}
	a, err := New(Options{Client: fc}, func(pipeline.Inbound, pipeline.Sender) error { return nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.retryBase, a.retryMax = time.Millisecond, time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	fc.waitFor("the third connect", func() bool { return fc.connected && fc.connects == 3 })
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("Run = %v", err)
	}
	a.Close()
}

// When accept fails the message is not acknowledged (WhatsApp delivers it
// again), and nothing is answered; the redelivery is.
func TestAcceptFailureLeavesMessageForRedelivery(t *testing.T) {
	var fail sync.Mutex
	failing := true
	s := newStack(t, stackOptions{accept: func(ctx context.Context, in pipeline.Inbound, next pipeline.AcceptFunc) error {
		fail.Lock()
		defer fail.Unlock()
		if failing {
			return errors.New("disk full")
		}
		return next(ctx, in)
	}})
	id := s.id()
	if s.dm(pnJID, id, "remember this") {
		t.Fatal("acknowledged a message that was not stored")
	}
	fail.Lock()
	failing = false
	fail.Unlock()
	if !s.dm(pnJID, id, "remember this") {
		t.Fatal("redelivery not taken")
	}
	s.waitText(pnJID, "echo: remember this")
	if n := s.count(pnJID, "echo: remember this"); n != 1 {
		t.Errorf("answered %d times", n)
	}
}

// Read receipts for answered messages, typing while the LLM works, paused
// after the reply; the account is marked online at connect.
func TestReceiptsAndTyping(t *testing.T) {
	s := newStack(t, stackOptions{})
	s.dm(pnJID, "R1", "hi")
	s.waitText(pnJID, "echo: hi")
	s.wa.waitFor("the read receipt", func() bool { return len(s.wa.reads) == 1 })
	s.wa.waitFor("paused", func() bool {
		n := len(s.wa.presences)
		return n >= 2 && s.wa.presences[n-1].State == types.ChatPresencePaused
	})
	s.wa.mu.Lock()
	defer s.wa.mu.Unlock()
	if r := s.wa.reads[0]; len(r.IDs) != 1 || r.IDs[0] != "R1" || r.Chat != pnJID {
		t.Errorf("read receipt %+v", r)
	}
	if p := s.wa.presences[0]; p.State != types.ChatPresenceComposing || p.Chat != pnJID {
		t.Errorf("first presence %+v, want composing in the chat", p)
	}
	if s.wa.online == 0 {
		t.Error("the account was not marked online")
	}
}

// /export arrives as a JSON document.
func TestExportIsADocument(t *testing.T) {
	s := newStack(t, stackOptions{})
	s.dm(pnJID, s.id(), "remember my cat is called Tom")
	s.waitText(pnJID, "echo: remember my cat")
	s.dm(pnJID, s.id(), "/export")
	m := s.wa.waitSent("the export", func(m sentMsg) bool { return docOf(m) != nil })
	d := docOf(m)
	if d.GetMimetype() != "application/json" || !strings.HasSuffix(d.GetFileName(), ".json") || d.GetURL() == "" {
		t.Errorf("document %q %q %q", d.GetMimetype(), d.GetFileName(), d.GetURL())
	}
	s.wa.mu.Lock()
	data := s.wa.uploads[0]
	s.wa.mu.Unlock()
	if !json.Valid(data) || !strings.Contains(string(data), "my cat is called Tom") {
		t.Errorf("uploaded %d bytes, not the export: %.200s", len(data), data)
	}
	if int(d.GetFileLength()) != len(data) {
		t.Errorf("file length %d, uploaded %d", d.GetFileLength(), len(data))
	}
}

// A strange sender gets one refusal with their id, nothing is stored.
func TestUnknownSenderRefused(t *testing.T) {
	s := newStack(t, stackOptions{allowed: []string{"whatsapp:" + user2}})
	s.dm(pnJID, "U1", "hi")
	s.waitText(pnJID, "whatsapp:"+userPhone)
	if st, _ := s.lookup(dmKey(pnJID), "U1"); st {
		t.Error("a stranger's message was stored")
	}
}

// Sends wait while the connection is down and go out once it is back —
// also during whatsmeow's keepalive reconnect, which sends no Disconnected
// event: the adapter asks the client, it does not trust events.
func TestSendWaitsForReconnect(t *testing.T) {
	s := newStack(t, stackOptions{})
	s.wa.keepaliveDrop()
	done := make(chan error, 1)
	go func() {
		_, err := s.ad.Send(context.Background(), pipeline.Outbound{Key: dmKey(pnJID), Text: "after the storm"})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Send returned while disconnected: %v", err)
	default:
	}
	s.wa.reconnected()
	if err := <-done; err != nil {
		t.Fatalf("Send: %v", err)
	}
	s.waitText(pnJID, "after the storm")
	if n := s.count(pnJID, "after the storm"); n != 1 {
		t.Errorf("sent %d times", n)
	}
}

func TestSendRejectsForeignKeys(t *testing.T) {
	s := newStack(t, stackOptions{})
	for _, key := range []pipeline.Key{
		{Channel: "telegram", Chat: "123"},
		{Channel: Channel, Chat: "status@broadcast"},
		{Channel: Channel, Chat: "bad:jid:x"},
	} {
		if _, err := s.ad.Send(context.Background(), pipeline.Outbound{Key: key, Text: "x"}); err == nil {
			t.Errorf("Send to %s succeeded", key)
		}
	}
	if _, err := s.ad.Send(context.Background(), pipeline.Outbound{Key: dmKey(pnJID), Text: "  "}); err == nil {
		t.Error("an empty message was sent")
	}
	if s.ad.Buttons() {
		t.Error("Buttons() = true")
	}
}

func TestNewValidates(t *testing.T) {
	submit := func(pipeline.Inbound, pipeline.Sender) error { return nil }
	fc := newFakeClient(t)
	if _, err := New(Options{Client: fc}, nil, nil); err == nil {
		t.Error("no submit accepted")
	}
	if _, err := New(Options{Client: fc, GroupsReply: "sometimes"}, submit, nil); err == nil || !strings.Contains(err.Error(), "whatsapp.groups.reply") {
		t.Errorf("bad groups.reply: %v", err)
	}
	if _, err := New(Options{Client: fc, SplitLimit: 50}, submit, nil); err == nil || !strings.Contains(err.Error(), "whatsapp.split_limit") {
		t.Errorf("bad split_limit: %v", err)
	}
	a, err := New(Options{Client: fc}, submit, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.opts.BacklogWindow != DefaultBacklogWindow || a.opts.SplitLimit != DefaultSplitLimit || a.opts.GroupsReply != GroupsReplyMention {
		t.Errorf("defaults: %+v", a.opts)
	}
}

// The socket drops after WhatsApp got a reply but before it answered (no
// Disconnected event, as in whatsmeow's keepalive reconnect): the send is
// tried again after the reconnect with the same message id, so the user
// sees the reply once.
func TestSendRetriedWithTheSameIDAfterASocketDrop(t *testing.T) {
	s := newStack(t, stackOptions{})
	s.wa.mu.Lock()
	s.wa.dropAfterSend = 1
	s.wa.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		_, err := s.ad.Send(context.Background(), pipeline.Outbound{Key: dmKey(pnJID), Text: "only once", ReplyTo: "M1"})
		done <- err
	}()
	s.wa.waitFor("the first attempt to reach WhatsApp and the socket to drop", func() bool { return len(s.wa.sent) == 1 && !s.wa.connected })
	s.wa.reconnected()
	if err := <-done; err != nil {
		t.Fatalf("Send: %v", err)
	}
	sent := s.wa.sentMsgs()
	if len(sent) != 2 || sent[0].ID != sent[1].ID {
		t.Fatalf("attempts %+v, want two with one id", sent)
	}
	if got := s.wa.delivered(); len(got) != 1 || got[0].Text() != "only once" {
		t.Errorf("the user sees %q, want the reply once", s.wa.texts())
	}
	// The same reply sent again later (the outbox, a restart) has the same
	// id; another reply has another.
	if _, err := s.ad.Send(context.Background(), pipeline.Outbound{Key: dmKey(pnJID), Text: "only once", ReplyTo: "M1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ad.Send(context.Background(), pipeline.Outbound{Key: dmKey(pnJID), Text: "another", ReplyTo: "M1"}); err != nil {
		t.Fatal(err)
	}
	if got := s.wa.delivered(); len(got) != 2 {
		t.Errorf("the user sees %d messages, want 2 (the resend is the same message)", len(got))
	}
}

// A send that cannot reach WhatsApp says pipeline.ErrNotDelivered, so the
// outbox keeps the reply and sends it after the reconnect.
func TestSendNotConnectedIsNotDelivered(t *testing.T) {
	s := newStack(t, stackOptions{})
	s.ad.sendWait = time.Millisecond
	s.wa.keepaliveDrop()
	_, err := s.ad.Send(context.Background(), pipeline.Outbound{Key: dmKey(pnJID), Text: "x", ReplyTo: "M1"})
	if !errors.Is(err, pipeline.ErrNotDelivered) || !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Send = %v, want ErrNotConnected and pipeline.ErrNotDelivered", err)
	}
	s.wa.reconnected()
}
