package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/recallbot/recall/ops"
)

// Start-up is over when every chat channel reports healthy, whatever the
// other parts say (an LLM down at start does not keep the free heap in the process).
func TestReadyWhenEveryChannelIsHealthy(t *testing.T) {
	ctx := context.Background()
	fail := func(context.Context) error { return errors.New("down") }
	ok := func(context.Context) error { return nil }
	h := ops.NewHealth(nil, ops.Check{Name: "llm", Run: fail})
	if !ready(ctx, h, nil) {
		t.Error("the terminal chat (no channels) is not ready")
	}
	if ready(ctx, h, []string{"telegram"}) {
		t.Error("ready before the telegram channel reports")
	}
	h.Add(ops.Check{Name: "telegram", Run: ok})
	h.Add(ops.Check{Name: "whatsapp", Run: fail})
	if !ready(ctx, h, []string{"telegram"}) {
		t.Error("not ready with telegram healthy and the LLM down")
	}
	if ready(ctx, h, []string{"telegram", "whatsapp"}) {
		t.Error("ready with whatsapp failing")
	}
}

// Memory is given back once start-up is over and nothing happened for
// quietAtStart, then once after each busy spell when nothing happened for
// quietAfterBusy — never while turns keep coming, never twice for one quiet
// spell.
func TestTrimWhenQuiet(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	q := newQuiet(t0, 5)
	steps := []struct {
		at       time.Duration
		activity int64
		want     bool
	}{
		{quietAtStart / 2, 5, false},                         // start-up just over
		{quietAtStart / 2, 6, false},                         // a first turn: wait again
		{quietAtStart, 6, false},                             // not quiet long enough since it
		{quietAtStart/2 + quietAtStart, 6, true},             // quiet: give back
		{2 * quietAtStart, 6, false},                         // once per quiet spell
		{time.Hour, 6, false},                                // nothing happened since
		{time.Hour + time.Second, 7, false},                  // a turn
		{time.Hour + 2*time.Second, 8, false},                // another
		{time.Hour + 2*time.Second + quietAtStart, 8, false}, // after a busy spell, the longer wait
		{time.Hour + 2*time.Second + quietAfterBusy, 8, true},
		{time.Hour + 2*time.Second + 2*quietAfterBusy, 8, false},
	}
	for i, s := range steps {
		if got := q.due(at(s.at), s.activity); got != s.want {
			t.Fatalf("step %d (at %s, activity %d): due = %v, want %v", i, s.at, s.activity, got, s.want)
		}
	}
}
