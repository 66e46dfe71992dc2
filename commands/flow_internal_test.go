package commands

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// Questions nobody answers do not pile up: starting a question drops the
// ones of every conversation expired for longer than staleKeep (an answer
// to one expired since less is told it expired).
func TestExpiredFlowsAreDropped(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := New(nil, nil, nil, Options{FlowTTL: time.Minute, Now: func() time.Time { return now }})
	step := func(context.Context, *Call, string) error { return nil }
	call := &Call{Commands: c, Turn: &pipeline.Turn{In: pipeline.Inbound{SenderID: "1"}}}
	key := func(i int) pipeline.Key { return pipeline.Key{Channel: "telegram", Chat: fmt.Sprint(i)} }
	for i := range 100 {
		call.startFlow(t.Context(), key(i), askedPurgeWhat, "", step)
	}
	now = now.Add(30 * time.Second)
	call.startFlow(t.Context(), key(100), askedPurgeWhat, "", step)
	if n := len(c.flows); n != 101 {
		t.Fatalf("%d flows pending, want 101", n)
	}
	now = now.Add(31 * time.Second) // the first 100 have expired
	if c.flowFor(key(5)) != nil || c.staleFor(key(5)) == nil {
		t.Error("an expired flow is answered, or forgotten before staleKeep")
	}
	now = now.Add(staleKeep + time.Minute) // and a day more
	call.startFlow(t.Context(), key(101), askedPurgeWhat, "", step)
	if n := len(c.flows); n != 1 {
		t.Errorf("%d flows pending a day after expiry, want 1", n)
	}
	if c.flowFor(key(5)) != nil {
		t.Error("an expired flow is still answered")
	}
	if c.flowFor(key(101)) == nil {
		t.Error("a live flow was dropped")
	}
	now = now.Add(time.Hour)
	if c.endFlow(t.Context(), key(101)) {
		t.Error("endFlow reports an expired flow as pending")
	}
	if _, ok := c.flows[key(101)]; ok {
		t.Error("endFlow kept an expired flow")
	}
}
