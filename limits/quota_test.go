package limits

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// Quota is what the responder records answers' tokens through (chat.Usage).
var _ interface {
	Add(ctx context.Context, userID string, tokens int) error
} = (*Quota)(nil)

var _ UsageStore = (*memory.Store)(nil)
var _ Discarder = (*memory.Store)(nil)

func openStore(t *testing.T, dir string) *memory.Store {
	t.Helper()
	s, err := memory.Open(context.Background(), memory.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// TestQuotaPersistsAndResets runs the quota stage over a real store: the
// count survives a reopen, the notice says when it resets, and at 00:00 UTC
// the user may write again.
func TestQuotaPersistsAndResets(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := openStore(t, dir)
	clk := &clock{now: time.Date(2030, 6, 1, 20, 47, 25, 0, time.UTC)}
	opts := Options{Now: clk.Now, Discard: store, Exempt: func(u string) bool { return u == "telegram:1" }}
	q := NewQuota(1000, store, opts)
	s := newStage(t, q.Middleware())
	user := private("5", "hello")

	if ok, _ := s.send(user); !ok {
		t.Fatal("refused before any usage")
	}
	if err := q.Add(ctx, "telegram:5", 600); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.send(user); !ok {
		t.Fatal("refused under the quota")
	}
	if err := q.Add(ctx, "telegram:5", 500); err != nil { // the answer that crossed it
		t.Fatal(err)
	}
	if err := q.Add(ctx, "telegram:1", 5000); err != nil { // an admin: recorded, never limited
		t.Fatal(err)
	}

	// A restart: the count is read from the store again.
	if err := store.Close(ctx); err != nil {
		t.Fatal(err)
	}
	store = openStore(t, dir)
	opts.Discard = store
	q = NewQuota(1000, store, opts)
	s = newStage(t, q.Middleware())
	if ok, used, _, err := q.Check(ctx, "telegram:5"); ok || used != 1100 || err != nil {
		t.Fatalf("after a reopen: Check = %v, %d, %v; want over, 1100", ok, used, err)
	}

	// The refused message was stored on arrival (as chat.Intake does); it goes.
	refused := user
	refused.MessageID, refused.Time = "m9", clk.Now()
	if err := store.Append(ctx, memory.Message{Key: refused.Key, Role: memory.RoleUser, SenderID: "5", PlatformID: "m9", Text: "hello", Time: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	ok, outs := s.send(refused)
	if ok || len(outs) != 1 {
		t.Fatalf("over the quota: passed=%v replies=%+v", ok, outs)
	}
	want := "You've used today's 1,000 tokens. The quota resets at 00:00 UTC, in 3 h 13 min. Commands such as /search and /export still work."
	if outs[0].Text != want || !outs[0].Plain || outs[0].ReplyTo != "m9" {
		t.Errorf("notice %+v\nwant %q", outs[0], want)
	}
	if stored, _, err := store.Lookup(ctx, refused.Key, "m9"); err != nil || stored {
		t.Errorf("the refused message is still stored (err %v)", err)
	}
	// Told at most once an hour.
	clk.Advance(30 * time.Minute)
	if ok, outs := s.send(user); ok || len(outs) != 0 {
		t.Errorf("30 min later: passed=%v replies=%+v; want refused silently", ok, outs)
	}
	clk.Advance(31 * time.Minute)
	if ok, outs := s.send(user); ok || len(outs) != 1 || outs[0].Text != QuotaText(1000, 2*time.Hour+11*time.Minute+35*time.Second) {
		t.Errorf("an hour later: passed=%v replies=%+v; want told again", ok, outs)
	}
	// Admins and commands-only users are not stopped (commands run before this stage).
	if ok, _ := s.send(private("1", "admin")); !ok {
		t.Error("an admin was refused")
	}
	// 00:00 UTC: a new day.
	clk.now = time.Date(2030, 6, 1, 23, 59, 59, 0, time.UTC)
	if ok, _ := s.send(user); ok {
		t.Error("allowed a second before midnight")
	}
	clk.Advance(time.Second)
	if ok, outs := s.send(user); !ok || len(outs) != 0 {
		t.Errorf("after 00:00 UTC: passed=%v replies=%+v; want a fresh quota", ok, outs)
	}
	st, err := store.Stats(ctx, time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC))
	if err != nil || st.TokensToday != 6100 || st.TokenUsers != 2 {
		t.Errorf("usage of the first day: %d tokens by %d users (%v); want 6100 by 2", st.TokensToday, st.TokenUsers, err)
	}
}

// failingUsage fails every read.
type failingUsage struct {
	mu    sync.Mutex
	added int
}

func (f *failingUsage) Usage(context.Context, string, time.Time) (int, error) {
	return 0, errors.New("database is locked")
}

func (f *failingUsage) AddUsage(_ context.Context, _ string, _ time.Time, n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.added += n
	return nil
}

func TestQuotaFailsOpen(t *testing.T) {
	f := &failingUsage{}
	q := NewQuota(10, f, Options{Now: (&clock{now: t0}).Now})
	s := newStage(t, q.Middleware())
	if ok, outs := s.send(private("5", "hi")); !ok || len(outs) != 0 {
		t.Errorf("with the usage unreadable: passed=%v replies=%+v; want answered", ok, outs)
	}
	if err := q.Add(context.Background(), "telegram:5", 0); err != nil || f.added != 0 {
		t.Errorf("Add(0) = %v, recorded %d", err, f.added)
	}
}

func TestQuotaIgnoresWhatIsNotForTheLLM(t *testing.T) {
	f := &failingUsage{}
	q := NewQuota(10, f, Options{Now: (&clock{now: t0}).Now})
	s := newStage(t, q.Middleware())
	for _, in := range []pipeline.Inbound{
		{Key: pipeline.Key{Channel: "telegram", Chat: "-1"}, SenderID: "5", IsGroup: true, Text: "chatter"},
		private("5", "  "),
	} {
		if ok, outs := s.send(in); !ok || len(outs) != 0 {
			t.Errorf("%q: passed=%v replies=%+v", in.Text, ok, outs)
		}
	}
}

// TestQuotaParallelConversationsDoNotOvershoot is the red team's case: a
// quota of 100 tokens, one user writing in five forum topics at once, each
// answer costing 60. Before reservations every turn read "0 used" and all
// five were answered (300 used); now the first turn reserves its estimate
// and the others are refused until it is counted.
func TestQuotaParallelConversationsDoNotOvershoot(t *testing.T) {
	ctx := context.Background()
	store := openStore(t, t.TempDir())
	q := NewQuota(100, store, Options{Now: (&clock{now: t0}).Now}) // estimate: DefaultTurnEstimate
	release := make(chan struct{})
	entered := make(chan struct{}, 5)
	h := pipeline.Chain(pipeline.HandlerFunc(func(ctx context.Context, turn *pipeline.Turn) error {
		entered <- struct{}{}
		<-release // the LLM is answering
		return q.Add(ctx, turn.In.UserID(), 60)
	}), q.Middleware())
	out := &recorder{}
	finished := make(chan struct{}, 5)
	var wg sync.WaitGroup
	for topic := range 5 {
		in := pipeline.Inbound{Key: pipeline.Key{Channel: "telegram", Chat: "-100", Thread: strconv.Itoa(topic + 1)},
			SenderID: "5", IsGroup: true, MentionsBot: true, MessageID: strconv.Itoa(topic + 1), Text: "@bot hi"}
		wg.Go(func() {
			if err := h.Handle(ctx, &pipeline.Turn{In: in, Out: out}); err != nil {
				t.Errorf("Handle: %v", err)
			}
			finished <- struct{}{}
		})
	}
	// Each turn either reaches the LLM or is refused at once.
	answered := 0
	for range 5 {
		select {
		case <-entered:
			answered++
		case <-finished: // refused
		}
	}
	close(release)
	wg.Wait()
	if answered != 1 {
		t.Errorf("%d turns reached the LLM at once under a 100-token quota; want 1", answered)
	}
	used, err := store.Usage(ctx, "telegram:5", t0)
	if err != nil || used > 100+60 {
		t.Errorf("used %d tokens (err %v) of a 100-token quota; want at most one turn over", used, err)
	}
	// Settled: the reservations are given back, the real tokens count.
	if len(q.reserved) != 0 {
		t.Errorf("reservations left after every turn ended: %+v", q.reserved)
	}
	if ok, _, rel, _ := q.reserve(ctx, "telegram:5"); !ok {
		t.Error("at 60 of 100 tokens, nothing in flight, the next turn was refused")
	} else {
		rel()
	}
}
