package chat

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// ctxRecorder records whether the turn's context was still alive when each
// message was sent.
type ctxRecorder struct {
	recorder
	late []bool
}

func (r *ctxRecorder) Send(ctx context.Context, out pipeline.Outbound) (string, error) {
	r.mu.Lock()
	r.late = append(r.late, ctx.Err() != nil)
	r.mu.Unlock()
	return r.recorder.Send(ctx, out)
}

// While storage fails, a reply does not wait StoreTimeout to become durable
// before it is sent: it is queued (and lands once storage recovers).
func TestRepliesDoNotWaitForFailingStorage(t *testing.T) {
	f := newFixture(t, llmtest.Echo("echo: "), Options{StoreTimeout: time.Hour})
	rec := &ctxRecorder{}
	must(t, f.turn(t, inbound("1", "first"), rec))
	_, err := f.store.SQLite().DB().Exec(`PRAGMA query_only = 1`)
	must(t, err)
	must(t, f.store.Enqueue(memory.Message{Key: key, Role: memory.RoleUser, Text: "detects the failure"}))
	for f.store.WriteStats().Failing == nil {
		time.Sleep(time.Millisecond)
	}
	for _, id := range []string{"2", "3"} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = f.chain.Handle(ctx, &pipeline.Turn{In: inbound(id, "while failing "+id), Out: rec})
		cancel()
	}
	answers := 0
	for i, s := range rec.texts() {
		if strings.HasPrefix(s, "echo: ") {
			answers++
			if rec.late[i] {
				t.Errorf("the reply %q was sent only after the turn's deadline: it waited for the failing storage", s)
			}
		}
	}
	if answers != 3 {
		t.Fatalf("%d answers, want 3: %q", answers, rec.texts())
	}
	_, err = f.store.SQLite().DB().Exec(`PRAGMA query_only = 0`)
	must(t, err)
	must(t, f.store.Flush(context.Background()))
	if st, _ := f.store.SQLite().Status(context.Background(), key); st.Total != 7 {
		t.Errorf("after recovery %d messages stored, want 7", st.Total)
	}
}

// While storage fails, Accept lets the channel go on: the message stays
// queued (the adapter confirms it and the turn answers it), and it lands
// once, when storage recovers.
func TestIntakeDuringStorageOutage(t *testing.T) {
	f := newFixture(t, nil, Options{})
	in := &Intake{Store: f.store, Counter: llm.NewCounter("gpt-4o-mini"), Wait: 50 * time.Millisecond}
	healthy := &Intake{Store: f.store, Counter: in.Counter, Wait: 10 * time.Second} // a loaded machine
	ctx := context.Background()
	must(t, healthy.Accept(ctx, inbound("1", "stored at once")))
	_, err := f.store.SQLite().DB().Exec(`PRAGMA query_only = 1`)
	must(t, err)
	// The first message of the outage finds it out; the next ones go
	// straight to the queue.
	for _, id := range []string{"2", "3"} {
		if err := in.Accept(ctx, inbound(id, "during the outage "+id)); err != nil {
			t.Fatalf("Accept during the outage = %v, want nil (queued)", err)
		}
	}
	// Accepted again by the turn (chat.Responder enqueues what it answers):
	// the history shows it once.
	must(t, f.store.Enqueue(UserMessage(inbound("3", "during the outage 3"), nil)))
	recent, err := f.store.Recent(ctx, key, 0, 0)
	must(t, err)
	if len(recent) != 3 {
		t.Errorf("the history during the outage has %d messages, want 3: %+v", len(recent), recent)
	}
	_, err = f.store.SQLite().DB().Exec(`PRAGMA query_only = 0`)
	must(t, err)
	must(t, f.store.Flush(ctx))
	if st, _ := f.store.SQLite().Status(ctx, key); st.Total != 3 {
		t.Errorf("after recovery %d messages stored, want 3 (each once)", st.Total)
	}
}

// AcceptStored (for WhatsApp, which delivers again what it was not told
// arrived) refuses a message it could not commit, from the first message
// of an outage on, so the platform keeps it; after recovery the
// redelivery is taken and stored once.
func TestAcceptStoredRefusesDuringStorageOutage(t *testing.T) {
	f := newFixture(t, nil, Options{})
	// During the outage a short wait, so the refusal comes quickly; while
	// storage works, one long enough for a loaded machine.
	in := &Intake{Store: f.store, Counter: llm.NewCounter("gpt-4o-mini"), Wait: 50 * time.Millisecond}
	healthy := &Intake{Store: f.store, Counter: in.Counter, Wait: 10 * time.Second}
	ctx := context.Background()
	must(t, healthy.AcceptStored(ctx, inbound("1", "stored at once")))
	_, err := f.store.SQLite().DB().Exec(`PRAGMA query_only = 1`)
	must(t, err)
	for _, id := range []string{"2", "3"} {
		if err := in.AcceptStored(ctx, inbound(id, "during the outage "+id)); !errors.Is(err, ErrStorageFailing) {
			t.Fatalf("AcceptStored during the outage = %v, want ErrStorageFailing", err)
		}
	}
	_, err = f.store.SQLite().DB().Exec(`PRAGMA query_only = 0`)
	must(t, err)
	must(t, f.store.Flush(ctx))
	for _, id := range []string{"2", "3"} { // WhatsApp delivers them again
		must(t, healthy.AcceptStored(ctx, inbound(id, "during the outage "+id)))
	}
	must(t, f.store.Flush(ctx))
	if st, _ := f.store.SQLite().Status(ctx, key); st.Total != 3 {
		t.Errorf("after recovery %d messages stored, want 3 (each once)", st.Total)
	}
}
