// Package backoff owns the retry waits shared by the chat adapters:
// exponential delays with jitter, and a sleep that ends with its context.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Delay is the wait before retry number attempt (0-based): exponential from
// base up to max, with jitter (between half and all of it).
func Delay(base, max time.Duration, attempt int) time.Duration {
	d := base
	for i := 0; i < attempt && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// Sleep waits d or until ctx ends; false when ctx ended.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
