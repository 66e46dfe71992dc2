package memory

import (
	"context"
	"errors"
	"testing"
)

// TestStoreOpOutlivesNoCaller: a caller whose context ends while its write
// runs (an interrupted `bot migrate`, a turn's deadline) gets its answer
// only once the write has returned — the write fills the caller's
// variables (an export, a report), so returning earlier raced with it —
// and the write is cancelled rather than left running.
func TestStoreOpOutlivesNoCaller(t *testing.T) {
	s := openStore(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	go func() { <-started; cancel() }()
	var filled bool
	err := s.do(ctx, "", func(ctx context.Context, _ Backend) error {
		close(started)
		<-ctx.Done() // the caller's cancel reaches the write
		filled = true
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("do = %v, want context.Canceled", err)
	}
	if !filled {
		t.Error("do returned while its write was still running")
	}
}
