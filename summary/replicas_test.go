package summary

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/memory/pgtest"
	"github.com/recallbot/recall/pipeline"
)

// TestOneSummaryAtATimeAcrossReplicas: two replicas on one PostgreSQL
// database see the same conversation reach its threshold. While one writes
// the summary, the other's trigger does nothing and its /summary_now says a
// summary is being written; in the end the conversation has one summary,
// and the model was asked once.
func TestOneSummaryAtATimeAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	db := pgtest.URL(t)
	entered := make(chan struct{}, 4)
	release := make(chan struct{})
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		entered <- struct{}{}
		<-release
		return llmtest.Response{Text: "Ann paid for things"}
	})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	replica := func() (*memory.Store, *Summarizer) {
		st, err := memory.Open(ctx, memory.Options{Dir: t.TempDir(), DatabaseURL: db})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close(context.Background()) })
		s := New(st, newClient(srv, -1), llm.NewCounter("test-model"), Policy{}, nil).Exclusive(DatabaseLock(st.Postgres()))
		return st, s
	}
	stA, a := replica()
	stB, b := replica()
	key := pipeline.Key{Channel: "telegram", Chat: "100"}
	for i := 1; i <= 10; i++ {
		exchange(t, stA, key, "alpha", i)
	}
	failed := func(ctx context.Context, err error) { t.Errorf("a run failed: %v", err) }
	if !a.MaybeStart(ctx, key, 10, failed) {
		t.Fatal("replica a did not start the summary")
	}
	<-entered // a holds the lock, waiting for the model
	if b.MaybeStart(ctx, key, 10, failed) {
		waitIdle(b) // it started, found the lock taken and did nothing
	}
	if _, err := b.Run(ctx, key); !errors.Is(err, ErrRunning) {
		t.Fatalf("replica b's /summary_now: %v, want ErrRunning", err)
	}
	releaseOnce.Do(func() { close(release) })
	waitIdle(a)
	// Once a is done, b's trigger finds nothing due.
	if b.MaybeStart(ctx, key, 10, failed) {
		waitIdle(b)
	}
	select {
	case <-entered:
		t.Fatal("the model was asked for a second summary")
	default:
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d summary requests, want 1", n)
	}
	if got := summaries(t, stB, key, false); len(got) != 1 {
		t.Fatalf("%d summaries, want 1: %+v", len(got), got)
	}
}
