// Package backoff owns the retry waits shared by the chat adapters and the
// LLM client: exponential delays with jitter, and a sleep that ends with its
// context. Not a retry library: each caller owns its loop, mixing a
// server's own wait (Retry-After, retry_after) with these.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Delay is the wait before retry number attempt (0-based): exponential from
// base up to max, with jitter (between half and all of it).
func Delay(base, max time.Duration, attempt int) time.Duration {
	d := Cap(base, max, attempt)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// Cap is the exponential limit of retry number attempt (0-based) before any
// jitter: min(max, base·2^attempt), without overflowing.
func Cap(base, max time.Duration, attempt int) time.Duration {
	d := base
	for i := 0; i < attempt && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// FullJitter returns a uniformly random duration in [0, limit] ("full
// jitter": retries of many clients spread the most).
func FullJitter(limit time.Duration) time.Duration {
	if limit <= 0 {
		return 0
	}
	return rand.N(limit + 1)
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
