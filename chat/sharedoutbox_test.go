package chat

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/memory/pgtest"
	"github.com/recallbot/recall/pipeline"
)

// editRecorder is a recorder that edits messages too.
type editRecorder struct {
	recorder
	mu    sync.Mutex
	edits map[string]string
}

func (r *editRecorder) Edit(_ context.Context, _ pipeline.Key, id, text string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.edits == nil {
		r.edits = map[string]string{}
	}
	r.edits[id] = text
	return nil
}

// TestSharedOutboxResume: a replica died at some step of delivering a
// reply; the replica that takes the turn over reads the shared journal and
// finishes as a restart would: a stored reply never handed over is sent
// (once: the turn needs nothing more), a reply cut while being handed over
// gets the "may be lost" note instead of a second copy, a reply not stored
// lets the turn run again, and a cut stream is replaced by a note.
func TestSharedOutboxResume(t *testing.T) {
	ctx := context.Background()
	store, err := memory.Open(ctx, memory.Options{Dir: t.TempDir(), DatabaseURL: pgtest.URL(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(ctx)
	dead := NewSharedOutbox(store.Postgres(), nil)  // the replica that died
	taker := NewSharedOutbox(store.Postgres(), nil) // the one that takes over
	defer dead.Close()
	defer taker.Close()
	k := pipeline.Key{Channel: "telegram", Chat: "77"}
	stored := func(id, reply string) {
		t.Helper()
		must(t, store.Append(ctx,
			memory.Message{Key: k, Role: memory.RoleUser, SenderID: "77", PlatformID: id, Text: "question " + id, Time: time.Now()},
			memory.Message{Key: k, Role: memory.RoleAssistant, ReplyTo: id, Text: reply, Time: time.Now()}))
	}
	cases := []struct {
		name         string
		leave        func(id string) // what the dead replica got done
		finished     bool
		sent, edited string
	}{
		{name: "stored, never handed over", leave: func(id string) {
			must(t, dead.Reply(k, id, "the answer "+id))
			stored(id, "the answer "+id)
		}, finished: true, sent: "the answer m1"},
		{name: "cut while handed over", leave: func(id string) {
			must(t, dead.Reply(k, id, "the answer "+id))
			stored(id, "the answer "+id)
			must(t, dead.Sending(k, id))
		}, finished: true, sent: MaybeLostReply},
		{name: "not stored", leave: func(id string) {
			must(t, dead.Reply(k, id, "the answer "+id))
		}, finished: false},
		{name: "stream cut before it was stored", leave: func(id string) {
			must(t, dead.Shown(k, id, "900"))
		}, finished: false, edited: CutReplyFollows},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "m" + string(rune('1'+i))
			c.leave(id)
			out := &editRecorder{}
			turn := &pipeline.Turn{In: pipeline.Inbound{Key: k, SenderID: "77", MessageID: id, Text: "question " + id}, Out: out}
			finished, err := taker.Resume(ctx, store, turn)
			if err != nil {
				t.Fatal(err)
			}
			if finished != c.finished {
				t.Errorf("finished = %v, want %v", finished, c.finished)
			}
			got := strings.Join(out.texts(), "|")
			want := strings.ReplaceAll(c.sent, "m1", id)
			if got != want {
				t.Errorf("sent %q, want %q", got, want)
			}
			if c.edited != "" && out.edits["900"] != c.edited {
				t.Errorf("the shown message became %q, want %q", out.edits["900"], c.edited)
			}
			if _, open, _ := store.Postgres().OutboxEntry(ctx, k, id); open {
				t.Error("the journal still has the reply")
			}
			// Taken over again (the taker died too): nothing more is sent.
			again := &editRecorder{}
			turn.Out = again
			if _, err := taker.Resume(ctx, store, turn); err != nil || len(again.texts()) != 0 {
				t.Errorf("a second resume sent %q (%v)", again.texts(), err)
			}
		})
	}
}

// TestSharedOutboxRetriedByOneReplica: a reply the platform did not take
// is sent again by one replica, whichever retries first, once.
func TestSharedOutboxRetriedByOneReplica(t *testing.T) {
	ctx := context.Background()
	store, err := memory.Open(ctx, memory.Options{Dir: t.TempDir(), DatabaseURL: pgtest.URL(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(ctx)
	a := NewSharedOutbox(store.Postgres(), nil)
	b := NewSharedOutbox(store.Postgres(), nil)
	defer a.Close()
	defer b.Close()
	k := pipeline.Key{Channel: "telegram", Chat: "78"}
	must(t, a.Reply(k, "5", "late answer"))
	must(t, a.Failed(k, "5"))
	outA, outB := &recorder{}, &recorder{}
	var wg sync.WaitGroup
	wg.Go(func() { a.retry(ctx, "telegram", outA) })
	wg.Go(func() { b.retry(ctx, "telegram", outB) })
	wg.Wait()
	all := append(outA.texts(), outB.texts()...)
	if strings.Join(all, "|") != "late answer" {
		t.Fatalf("sent %q, want the answer once", all)
	}
}

// TestSharedOutboxDropsStaleReplies: a reply left open for more than a day
// (its turn was given up) leaves the journal, text and all; one the
// platform did not take yet stays to be sent.
func TestSharedOutboxDropsStaleReplies(t *testing.T) {
	ctx := context.Background()
	store, err := memory.Open(ctx, memory.Options{Dir: t.TempDir(), DatabaseURL: pgtest.URL(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(ctx)
	pg := store.Postgres()
	k := pipeline.Key{Channel: "telegram", Chat: "79"}
	old := time.Now().Add(-48 * time.Hour)
	must(t, pg.OutboxReply(ctx, k, "1", "given up", old))
	must(t, pg.OutboxReply(ctx, k, "2", "not taken yet", old))
	must(t, pg.OutboxState(ctx, k, "2", memory.OutboxFailed))
	must(t, pg.OutboxReply(ctx, k, "3", "under way", time.Now()))
	must(t, pg.OutboxSweep(ctx, time.Now().Add(-staleReply)))
	for id, want := range map[string]bool{"1": false, "2": true, "3": true} {
		if _, ok, _ := pg.OutboxEntry(ctx, k, id); ok != want {
			t.Errorf("reply to %s in the journal: %v, want %v", id, ok, want)
		}
	}
}
