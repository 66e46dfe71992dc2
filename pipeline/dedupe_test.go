package pipeline

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// fakeSeen is an in-memory Seen: what is stored and answered per
// conversation, or an error for every lookup.
type fakeSeen struct {
	mu       sync.Mutex
	stored   map[seenID]bool
	answered map[seenID]bool
	err      error
	lookups  int
}

func newFakeSeen() *fakeSeen {
	return &fakeSeen{stored: map[seenID]bool{}, answered: map[seenID]bool{}}
}

func (f *fakeSeen) Lookup(_ context.Context, key Key, id string) (bool, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups++
	if f.err != nil {
		return false, false, f.err
	}
	k := seenID{key, id}
	return f.stored[k], f.answered[k], nil
}

func TestDedupe(t *testing.T) {
	in := Inbound{Key: tgKey, SenderID: "123", MessageID: "m1", Text: "hi"}
	tests := []struct {
		name     string
		stored   bool
		answered bool
		err      error
		id       string
		wantNext bool
		wantLog  string
	}{
		{"new message", false, false, nil, "m1", true, ""},
		{"stored and answered", true, true, nil, "m1", false, "already answered"},
		{"stored, not answered", true, false, nil, "m1", true, "unanswered"},
		{"no message id", true, true, nil, "", true, ""},
		{"lookup error", false, false, errors.New("disk on fire"), "m1", true, "disk on fire"},
	}
	for _, tt := range tests {
		seen := newFakeSeen()
		seen.err = tt.err
		seen.stored[seenID{tgKey, "m1"}] = tt.stored
		seen.answered[seenID{tgKey, "m1"}] = tt.answered
		log, buf := testLogger()
		next := false
		h := Chain(HandlerFunc(func(context.Context, *Turn) error {
			next = true
			return nil
		}), Dedupe(seen, log))
		msg := in
		msg.MessageID = tt.id
		if err := h.Handle(context.Background(), &Turn{In: msg}); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		if next != tt.wantNext {
			t.Errorf("%s: next called = %v, want %v", tt.name, next, tt.wantNext)
		}
		if !strings.Contains(buf.String(), tt.wantLog) {
			t.Errorf("%s: log %q lacks %q", tt.name, buf.String(), tt.wantLog)
		}
		if tt.id == "" && seen.lookups != 0 {
			t.Errorf("%s: looked up an empty id", tt.name)
		}
	}
}

func TestDedupeConcurrentDuplicate(t *testing.T) {
	seen := newFakeSeen()
	entered := make(chan string)
	release := make(chan struct{})
	calls := map[string]int{}
	var mu sync.Mutex
	h := Chain(HandlerFunc(func(_ context.Context, t *Turn) error {
		mu.Lock()
		calls[t.In.Key.String()+"/"+t.In.MessageID]++
		mu.Unlock()
		if t.In.Text == "block" {
			entered <- t.In.MessageID
			<-release
		}
		return nil
	}), Dedupe(seen, nil))
	handle := func(in Inbound) error { return h.Handle(context.Background(), &Turn{In: in}) }

	first := Inbound{Key: tgKey, MessageID: "m1", Text: "block"}
	errc := make(chan error)
	go func() { errc <- handle(first) }()
	<-entered // the first is being handled, not yet stored

	if err := handle(Inbound{Key: tgKey, MessageID: "m1", Text: "dup"}); err != nil {
		t.Fatal(err)
	}
	// Same id in another conversation is another message.
	if err := handle(Inbound{Key: grpKey, MessageID: "m1", Text: "other"}); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	// Redelivered after it was handled, before the store has it: still dropped.
	if err := handle(Inbound{Key: tgKey, MessageID: "m1", Text: "late"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{tgKey.String() + "/m1": 1, grpKey.String() + "/m1": 1}
	mu.Lock()
	defer mu.Unlock()
	for k, n := range want {
		if calls[k] != n {
			t.Errorf("%s handled %d times, want %d (all: %v)", k, calls[k], n, calls)
		}
	}
}

func TestDedupeForgetsFailedTurns(t *testing.T) {
	tests := []struct {
		name     string
		first    HandlerFunc
		wantRuns int
	}{
		{"success remembered", func(context.Context, *Turn) error { return nil }, 1},
		{"error forgotten", func(context.Context, *Turn) error { return errors.New("llm down") }, 2},
		{"panic forgotten", func(context.Context, *Turn) error { panic("boom") }, 2},
	}
	for _, tt := range tests {
		runs := 0
		h := Chain(HandlerFunc(func(ctx context.Context, t *Turn) error {
			runs++
			if runs == 1 {
				return tt.first(ctx, t)
			}
			return nil
		}), Recover(), Dedupe(newFakeSeen(), nil))
		in := Inbound{Key: tgKey, MessageID: "m1"}
		_ = h.Handle(context.Background(), &Turn{In: in})
		_ = h.Handle(context.Background(), &Turn{In: in})
		if runs != tt.wantRuns {
			t.Errorf("%s: handled %d times, want %d", tt.name, runs, tt.wantRuns)
		}
	}
}

func TestSeenSetEvictsOldest(t *testing.T) {
	s := newSeenSet(2)
	ids := []seenID{{tgKey, "1"}, {tgKey, "2"}, {tgKey, "3"}}
	for _, id := range ids {
		if !s.begin(id) {
			t.Fatalf("begin(%v) = false for a new id", id)
		}
		s.end(id, true)
	}
	tests := []struct {
		id        seenID
		wantBegin bool
	}{
		{ids[0], true}, // evicted
		{ids[1], false},
		{ids[2], false},
	}
	for _, tt := range tests {
		if got := s.begin(tt.id); got != tt.wantBegin {
			t.Errorf("begin(%v) = %v, want %v", tt.id, got, tt.wantBegin)
		}
	}
	if len(s.done) != 2 || s.order.Len() != 2 {
		t.Errorf("LRU holds %d/%d entries, want 2", len(s.done), s.order.Len())
	}
}
