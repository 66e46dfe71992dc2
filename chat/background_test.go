package chat

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/summary"
)

// A background summary that fails is told to the conversation, through the
// sender of the turn that started it, once per failure streak: the retries
// at the next turns say nothing more until a summary succeeds.
func TestFailedSummaryIsToldOncePerStreak(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	echo := llmtest.Echo("echo: ")
	f := newFixture(t, func(r llmtest.Request) llmtest.Response {
		if r.Messages[0].Content == summary.Instructions {
			if failing.Load() {
				return llmtest.Response{Status: http.StatusInternalServerError, Text: "boom"}
			}
			return llmtest.Response{Text: "Ann said hello a lot."}
		}
		return echo(r)
	}, Options{})
	sum := summary.New(f.store, f.model.(*llm.Client), llm.NewCounter("gpt-4o-mini"), summary.Policy{}, nil)
	f.sum = sum
	f.respond(Options{})
	notices := func(rec *recorder) int {
		n := 0
		for _, s := range rec.texts() {
			if s == summaryFailed {
				n++
			}
		}
		return n
	}
	turns := 0
	talk := func(rec *recorder, n int) {
		t.Helper()
		for range n {
			turns++
			if err := f.turn(t, inbound(fmt.Sprint("m", turns), fmt.Sprint("hello ", turns)), rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The threshold is 10: turns 10 to 13 each start a summary, or find
	// one running; every one fails.
	rec := &recorder{}
	talk(rec, 13)
	sum.Wait() // the last run is over
	if n := notices(rec); n != 1 {
		t.Fatalf("the conversation was told %d times of failing summaries, want once:\n%q", n, rec.texts())
	}
	for _, o := range rec.sent {
		if o.Text == summaryFailed && (o.Key != key || !o.Plain) {
			t.Errorf("the notice went to %s (plain %v), want %s as plain text", o.Key, o.Plain, key)
		}
	}
}

// Close stops a fact extraction the model never answers: it returns once
// its context ends, with the extraction cancelled.
func TestCloseCancelsAHangingFactExtraction(t *testing.T) {
	entered := make(chan struct{}, 1)
	echo := llmtest.Echo("echo: ")
	f := newFixture(t, func(r llmtest.Request) llmtest.Response {
		if r.Messages[0].Content == FactPrompt {
			entered <- struct{}{}
			return llmtest.Response{Hang: true}
		}
		return echo(r)
	}, Options{Facts: true})
	if err := f.turn(t, inbound("m1", "I live in Lisbon"), &recorder{}); err != nil {
		t.Fatal(err)
	}
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := f.resp.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want it to say the extraction was cut at the deadline", err)
	}
	// Nothing is left running: Wait returns at once.
	f.resp.Wait()
}
