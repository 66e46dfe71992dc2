package chat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// crashJournal passes records to an Outbox up to a point, then drops them:
// the process "died" there (the send itself still happens in the test, to a
// sender standing for a platform that never got it or did).
type crashJournal struct {
	o      *Outbox
	before string // the first step not recorded: "sending" or "done"
}

func (c crashJournal) Reply(key pipeline.Key, replyTo, text string) error {
	return c.o.Reply(key, replyTo, text)
}

func (c crashJournal) Shown(key pipeline.Key, replyTo, id string) error {
	return c.o.Shown(key, replyTo, id)
}

func (c crashJournal) Sending(key pipeline.Key, replyTo string) error {
	if c.before == "sending" {
		return nil
	}
	return c.o.Sending(key, replyTo)
}

func (c crashJournal) Failed(key pipeline.Key, replyTo string) error {
	return c.o.Failed(key, replyTo)
}

func (c crashJournal) Done(key pipeline.Key, replyTo string) error {
	return nil // both crash points come before done
}

func openOutbox(t *testing.T, path string) *Outbox {
	t.Helper()
	o, err := OpenOutbox(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// The last run stored the reply and died before handing it to Telegram: the
// next start sends it, once, in reply to the message.
func TestStoredReplyNeverSentIsSentAtTheNextStart(t *testing.T) {
	f := newFixture(t, llmtest.Echo("echo: "), Options{})
	path := filepath.Join(f.dir, "outbox.jsonl")
	f.respond(Options{Journal: crashJournal{o: openOutbox(t, path), before: "sending"}})
	lost := &recorder{} // what the dead process would have sent: nothing reached the user
	if err := f.turn(t, inbound("m1", "hello"), lost); err != nil {
		t.Fatal(err)
	}

	for run := range 2 {
		out := &recorder{}
		sent, unsure, err := openOutbox(t, path).Redeliver(context.Background(), f.store, "telegram", out, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if run == 0 {
			if sent != 1 || unsure != 0 || len(out.sent) != 1 || out.sent[0].Text != "echo: hello" || out.sent[0].ReplyTo != "m1" || out.sent[0].Key != key {
				t.Fatalf("first start: sent %d, unsure %d: %+v; want the stored reply to m1", sent, unsure, out.sent)
			}
			continue
		}
		if sent != 0 || unsure != 0 || len(out.sent) != 0 {
			t.Fatalf("second start sent again: %d, %d, %+v", sent, unsure, out.sent)
		}
	}
	// Only the channel's replies go to its sender.
	if _, _, err := openOutbox(t, path).Redeliver(context.Background(), f.store, "whatsapp", &recorder{}, time.Hour); err != nil {
		t.Fatal(err)
	}
}

// The last run died while Telegram was being called: the reply may have been
// delivered. It is not sent again; the user is told, once.
func TestReplyCutMidSendIsNotSentTwice(t *testing.T) {
	f := newFixture(t, llmtest.Echo("echo: "), Options{})
	path := filepath.Join(f.dir, "outbox.jsonl")
	f.respond(Options{Journal: crashJournal{o: openOutbox(t, path), before: "done"}})
	delivered := &recorder{}
	if err := f.turn(t, inbound("m1", "hello"), delivered); err != nil {
		t.Fatal(err)
	}
	out := &recorder{}
	sent, unsure, err := openOutbox(t, path).Redeliver(context.Background(), f.store, "telegram", out, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if sent != 0 || unsure != 1 || len(out.sent) != 1 || out.sent[0].Text != MaybeLostReply || out.sent[0].ReplyTo != "m1" || !out.sent[0].Plain {
		t.Fatalf("sent %d, unsure %d: %+v; want only the notice, in reply to m1", sent, unsure, out.sent)
	}
	out = &recorder{}
	if _, _, err := openOutbox(t, path).Redeliver(context.Background(), f.store, "telegram", out, time.Hour); err != nil || len(out.sent) != 0 {
		t.Fatalf("second start: %v, %+v", err, out.sent)
	}
}

// A clean turn leaves nothing to redeliver; the records come in order: the
// reply before it is stored, sending after it is stored, done after the send.
func TestJournalOrder(t *testing.T) {
	f := newFixture(t, llmtest.Echo("echo: "), Options{})
	path := filepath.Join(f.dir, "outbox.jsonl")
	o := openOutbox(t, path)
	f.respond(Options{Journal: o})
	out := &recorder{onSend: func(pipeline.Outbound) {
		data, _ := os.ReadFile(path)
		if s := string(data); !strings.Contains(s, `"op":"reply"`) || !strings.Contains(s, `"op":"sending"`) || strings.Contains(s, `"op":"done"`) {
			t.Errorf("at send time the journal holds:\n%s", s)
		}
	}}
	if err := f.turn(t, inbound("m1", "hello"), out); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"op":"done"`) {
		t.Errorf("no done record after the send:\n%s", data)
	}
	o.Close()
	out = &recorder{}
	if sent, unsure, err := openOutbox(t, path).Redeliver(context.Background(), f.store, "telegram", out, time.Hour); err != nil || sent+unsure != 0 || len(out.sent) != 0 {
		t.Fatalf("after a clean turn: %d, %d, %v, %+v", sent, unsure, err, out.sent)
	}
}

// A reply recorded but never stored (the crash came first) is not sent: its
// message is unanswered and answered again. Nor is one older than the
// window, or a record cut by the crash.
func TestRedeliverSkipsWhatWasNotStored(t *testing.T) {
	f := newFixture(t, nil, Options{})
	path := filepath.Join(f.dir, "outbox.jsonl")
	o := openOutbox(t, path)
	if err := o.Reply(key, "m1", "never stored"); err != nil {
		t.Fatal(err)
	}
	old := memory.Message{Key: key, Role: memory.RoleAssistant, ReplyTo: "m0", Text: "old", Time: time.Now()}
	if err := f.store.Append(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	o.mu.Lock()
	o.open[outboxID{key.String(), "m0"}] = &outboxEntry{Op: "reply", outboxID: outboxID{key.String(), "m0"}, Text: "old", At: time.Now().Add(-2 * time.Hour)}
	if err := o.rewriteLocked(); err != nil {
		t.Fatal(err)
	}
	o.mu.Unlock()
	o.Close()
	fh, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	fh.WriteString(`{"op":"reply","key":"telegram:555:","reply_to":"m9","te`)
	fh.Close()

	out := &recorder{}
	sent, unsure, err := openOutbox(t, path).Redeliver(context.Background(), f.store, "telegram", out, time.Hour)
	if err != nil || sent+unsure != 0 || len(out.sent) != 0 {
		t.Fatalf("sent %d, unsure %d, err %v: %+v; want nothing", sent, unsure, err, out.sent)
	}
}

// The journal is rewritten with only the open replies once it grows.
func TestOutboxCompacts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.jsonl")
	o := openOutbox(t, path)
	o.compact = 10 << 10
	text := strings.Repeat("x", 500)
	for i := range 200 {
		id := "m" + strings.Repeat("1", i%7) + string(rune('a'+i%26))
		if err := o.Reply(key, id, text); err != nil {
			t.Fatal(err)
		}
		if err := o.Done(key, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Reply(key, "open", "still open"); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 12<<10 {
		t.Errorf("the journal is %d bytes after 200 finished replies, want it compacted", st.Size())
	}
	o.Close()
	if o2 := openOutbox(t, path); len(o2.open) != 1 || o2.open[outboxID{key.String(), "open"}] == nil {
		t.Errorf("open replies after reopening: %v", o2.open)
	}
}

// Only what the last run left is redelivered: a reply this run is sending
// (WhatsApp redelivers once connected, while new turns run) is not touched.
func TestRedeliverLeavesThisRunsReplies(t *testing.T) {
	f := newFixture(t, nil, Options{})
	o := openOutbox(t, filepath.Join(f.dir, "outbox.jsonl"))
	if err := o.Reply(key, "m1", "this run's reply"); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Append(context.Background(), memory.Message{Key: key, Role: memory.RoleAssistant, ReplyTo: "m1", Text: "this run's reply", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	out := &recorder{}
	if sent, unsure, err := o.Redeliver(context.Background(), f.store, "telegram", out, time.Hour); err != nil || sent+unsure != 0 || len(out.sent) != 0 {
		t.Fatalf("sent %d, unsure %d, err %v: %+v; want nothing", sent, unsure, err, out.sent)
	}
	if o.open[outboxID{key.String(), "m1"}] == nil {
		t.Error("this run's reply was closed by Redeliver")
	}
}

// The message showing a streamed reply is kept in the journal through the
// reply record and a rewrite; at the next start each one is replaced by the
// note that fits: the answer follows (the stored reply is sent, or the
// message is answered again), or, too old for that, please resend.
func TestRedeliverReplacesShownMessages(t *testing.T) {
	f := newFixture(t, nil, Options{})
	path := filepath.Join(f.dir, "outbox.jsonl")
	o := openOutbox(t, path)
	must(t, o.Shown(key, "m1", "41")) // stored, never sent
	must(t, o.Reply(key, "m1", "the full reply"))
	must(t, f.store.Append(context.Background(), memory.Message{Key: key, Role: memory.RoleAssistant, ReplyTo: "m1", Text: "the full reply", Time: time.Now()}))
	must(t, o.Shown(key, "m2", "42")) // cut before the reply
	must(t, o.Reply(key, "m3", "not stored"))
	must(t, o.Shown(key, "m3", "43")) // the shown record may come after the reply
	o.mu.Lock()
	o.open[outboxID{key.String(), "m4"}] = &outboxEntry{Op: "shown", outboxID: outboxID{key.String(), "m4"}, Shown: "44", At: time.Now().Add(-2 * time.Hour)}
	if err := o.rewriteLocked(); err != nil {
		t.Fatal(err)
	}
	o.mu.Unlock()
	must(t, o.Shown(key, "m5", "45"))
	must(t, o.Done(key, "m5")) // finished: nothing to replace
	o.Close()

	out := &shownStreamer{}
	sent, unsure, err := openOutbox(t, path).Redeliver(context.Background(), f.store, "telegram", out, time.Hour)
	if err != nil || sent != 1 || unsure != 0 {
		t.Fatalf("sent %d, unsure %d, %v", sent, unsure, err)
	}
	got := map[string]string{}
	for _, e := range out.edits {
		got[e.ReplyTo] = e.Text
	}
	want := map[string]string{"41": CutReplyFollows, "42": CutReplyFollows, "43": CutReplyFollows, "44": CutReplyResend}
	if len(got) != len(want) || len(out.edits) != len(want) {
		t.Errorf("edits %+v, want %v", out.edits, want)
	}
	for id, note := range want {
		if got[id] != note {
			t.Errorf("message %s became %q, want %q", id, got[id], note)
		}
	}
	if len(out.sent) != 1 || out.sent[0].Text != "the full reply" || out.sent[0].ReplyTo != "m1" {
		t.Errorf("sent %+v, want the stored reply to m1", out.sent)
	}
	again := &shownStreamer{}
	if sent, unsure, err := openOutbox(t, path).Redeliver(context.Background(), f.store, "telegram", again, time.Hour); err != nil || sent+unsure != 0 || len(again.edits)+len(again.sent) != 0 {
		t.Fatalf("second start: %d, %d, %v, %+v, %+v", sent, unsure, err, again.edits, again.sent)
	}
}

// flakySender fails with pipeline.ErrNotDelivered while down is set (a
// channel that is reconnecting, or rate limited), and records what it sent.
type flakySender struct {
	mu   sync.Mutex
	down bool
	sent []pipeline.Outbound
	got  chan pipeline.Outbound
}

func (f *flakySender) setDown(v bool) { f.mu.Lock(); f.down = v; f.mu.Unlock() }

func (f *flakySender) Send(_ context.Context, out pipeline.Outbound) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return "", fmt.Errorf("fake: not connected: %w", pipeline.ErrNotDelivered)
	}
	f.sent = append(f.sent, out)
	if f.got != nil {
		f.got <- out
	}
	return "id", nil
}

// A reply whose send failed because the channel was down is not given up:
// it stays pending and goes out, once, when the channel is back — for any
// channel whose sender says pipeline.ErrNotDelivered.
func TestFailedSendIsSentAfterReconnect(t *testing.T) {
	f := newFixture(t, llmtest.Echo("echo: "), Options{})
	path := filepath.Join(f.dir, "outbox.jsonl")
	o := openOutbox(t, path)
	o.retryBase, o.retryMax = time.Millisecond, 5*time.Millisecond
	f.respond(Options{Journal: o})
	out := &flakySender{down: true, got: make(chan pipeline.Outbound, 4)}
	if err := f.turn(t, inbound("m1", "hello"), out); !errors.Is(err, pipeline.ErrNotDelivered) {
		t.Fatalf("turn = %v, want the send failure", err)
	}
	if n := o.pendingFailed("telegram"); n != 1 {
		t.Fatalf("%d replies pending after the failed send, want 1", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.RunRetries(ctx, "telegram", out) }()
	out.setDown(false) // the channel is back
	got := <-out.got
	if got.Text != "echo: hello" || got.ReplyTo != "m1" || got.Key != key {
		t.Errorf("resent %+v, want the reply to m1", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := o.pendingFailed("telegram"); n != 0 {
		t.Errorf("%d still pending after the resend", n)
	}
	o.Close()
	// Delivered: the next start sends nothing again.
	rec := &recorder{}
	if sent, unsure, err := openOutbox(t, path).Redeliver(context.Background(), f.store, "telegram", rec, time.Hour); err != nil || sent+unsure != 0 || len(rec.sent) != 0 {
		t.Fatalf("next start after the resend: %d, %d, %v, %+v", sent, unsure, err, rec.sent)
	}
}

// A reply whose send failed and that was still pending when the process
// stopped is sent at the next start (the platform never took it, so it
// cannot show twice); one refused for good is not.
func TestFailedSendIsSentAtTheNextStart(t *testing.T) {
	f := newFixture(t, llmtest.Echo("echo: "), Options{})
	path := filepath.Join(f.dir, "outbox.jsonl")
	o := openOutbox(t, path)
	f.respond(Options{Journal: o})
	if err := f.turn(t, inbound("m1", "hello"), &flakySender{down: true}); err == nil {
		t.Fatal("the failed send was not reported")
	}
	if err := f.turn(t, inbound("m2", "refused"), &recorder{failErr: errors.New("403 blocked by the user")}); err == nil {
		t.Fatal("the refused send was not reported")
	}
	o.Close()
	out := &recorder{}
	sent, unsure, err := openOutbox(t, path).Redeliver(context.Background(), f.store, "telegram", out, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if sent != 1 || unsure != 0 || len(out.sent) != 1 || out.sent[0].Text != "echo: hello" || out.sent[0].ReplyTo != "m1" {
		t.Fatalf("next start: sent %d, unsure %d: %+v; want only the reply to m1", sent, unsure, out.sent)
	}
}

// A reply the last run left unsent, whose resend at start fails because
// the channel is not up yet, stays pending and goes out with the retries.
func TestRedeliveryWaitsForTheChannel(t *testing.T) {
	f := newFixture(t, llmtest.Echo("echo: "), Options{})
	path := filepath.Join(f.dir, "outbox.jsonl")
	f.respond(Options{Journal: crashJournal{o: openOutbox(t, path), before: "sending"}})
	if err := f.turn(t, inbound("m1", "hello"), &recorder{}); err != nil {
		t.Fatal(err)
	}
	o := openOutbox(t, path)
	o.SetRetryBackoff(time.Millisecond, time.Millisecond)
	out := &flakySender{down: true, got: make(chan pipeline.Outbound, 1)}
	if sent, _, err := o.Redeliver(context.Background(), f.store, "telegram", out, time.Hour); err != nil || sent != 0 {
		t.Fatalf("Redeliver while down: %d, %v", sent, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.RunRetries(ctx, "telegram", out) }()
	out.setDown(false)
	if got := <-out.got; got.Text != "echo: hello" || got.ReplyTo != "m1" {
		t.Errorf("sent %+v, want the reply to m1", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
