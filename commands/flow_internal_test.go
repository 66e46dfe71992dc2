package commands

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// Questions nobody answers do not pile up: starting a question drops the
// expired ones of every conversation.
func TestExpiredFlowsAreDropped(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := New(nil, nil, nil, Options{FlowTTL: time.Minute, Now: func() time.Time { return now }})
	step := func(context.Context, *Call, string) error { return nil }
	call := &Call{Commands: c, Turn: &pipeline.Turn{In: pipeline.Inbound{SenderID: "1"}}}
	key := func(i int) pipeline.Key { return pipeline.Key{Channel: "telegram", Chat: fmt.Sprint(i)} }
	for i := range 100 {
		call.startFlow(key(i), step)
	}
	now = now.Add(30 * time.Second)
	call.startFlow(key(100), step)
	if n := len(c.flows); n != 101 {
		t.Fatalf("%d flows pending, want 101", n)
	}
	now = now.Add(31 * time.Second) // the first 100 have expired
	call.startFlow(key(101), step)
	if n := len(c.flows); n != 2 {
		t.Errorf("%d flows pending after expiry, want 2", n)
	}
	if c.flowFor(key(5)) != nil {
		t.Error("an expired flow is still answered")
	}
	if c.flowFor(key(100)) == nil || c.flowFor(key(101)) == nil {
		t.Error("a live flow was dropped")
	}
	now = now.Add(time.Hour)
	if c.endFlow(key(101)) {
		t.Error("endFlow reports an expired flow as pending")
	}
	if _, ok := c.flows[key(101)]; ok {
		t.Error("endFlow kept an expired flow")
	}
}
