package summary

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/pipeline"
)

// A conversation whose summaries keep failing is told once, not at every
// retry; once a summary succeeds, the next failure is told again.
func TestFailureToldOncePerStreak(t *testing.T) {
	ctx := context.Background()
	var failing atomic.Bool
	failing.Store(true)
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if failing.Load() {
			return llmtest.Response{Status: http.StatusInternalServerError, Text: "boom"}
		}
		return llmtest.Response{Text: "Ann paid."}
	})
	st := openStore(t)
	s := New(st, newClient(srv, -1), llm.NewCounter("test-model"), Policy{KeepRecentTurns: 1}, nil)
	key := pipeline.Key{Channel: "telegram", Chat: "4711"}
	var mu sync.Mutex
	told := 0
	notify := func(_ context.Context, err error) {
		mu.Lock()
		told++
		mu.Unlock()
	}
	toldSoFar := func() int {
		mu.Lock()
		defer mu.Unlock()
		return told
	}
	i := 0
	trigger := func() {
		t.Helper()
		i++
		exchange(t, st, key, "ann", i)
		i++
		exchange(t, st, key, "ann", i)
		if !s.MaybeStart(ctx, key, 2, notify) {
			t.Fatalf("exchange %d: MaybeStart did not start a run", i)
		}
		waitIdle(s)
	}
	for range 3 {
		trigger()
	}
	if n := toldSoFar(); n != 1 {
		t.Fatalf("told %d times after three failed summaries, want once", n)
	}
	failing.Store(false)
	trigger()
	if n := toldSoFar(); n != 1 {
		t.Fatalf("told %d times after a summary succeeded, want still once", n)
	}
	failing.Store(true)
	trigger()
	trigger()
	if n := toldSoFar(); n != 2 {
		t.Errorf("told %d times after a new failure streak, want twice", n)
	}
}

// Close stops a background summary the model never answers: it returns
// once its context ends, the run is cancelled, nothing is archived and the
// conversation is not told of a failure.
func TestCloseCancelsAHangingSummary(t *testing.T) {
	ctx := context.Background()
	entered := make(chan struct{}, 1)
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		entered <- struct{}{}
		return llmtest.Response{Hang: true} // never answers
	})
	st := openStore(t)
	s := New(st, newClient(srv, -1), llm.NewCounter("test-model"), Policy{KeepRecentTurns: 1}, nil)
	key := pipeline.Key{Channel: "console", Chat: "local"}
	for i := 1; i <= 3; i++ {
		exchange(t, st, key, "ann", i)
	}
	var told atomic.Int32
	if !s.MaybeStart(ctx, key, 3, func(context.Context, error) { told.Add(1) }) {
		t.Fatal("MaybeStart did not start a run")
	}
	<-entered
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err := s.Close(cctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want it to say the run was cut at the deadline", err)
	}
	if s.Running(key) {
		t.Error("the run is still going after Close returned")
	}
	if n := told.Load(); n != 0 {
		t.Errorf("the conversation was told %d times of a failure; a stop is not one", n)
	}
	if got := status(t, st, key); got.Archived != 0 {
		t.Errorf("%d messages archived by a cancelled run", got.Archived)
	}
	if s.MaybeStart(ctx, key, 1, nil) {
		t.Error("MaybeStart started a run after Close")
	}
}
