package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// health remembers the outcome of the last calls, for Health.
type health struct {
	after int // consecutive failures that make the model unhealthy

	mu      sync.Mutex
	failed  int   // consecutive failed calls
	last    error // the last failure
	atStart bool  // last is the start-up check's, and no call came since
}

// record notes the outcome of one call. A call the caller cancelled, or one
// the server refused for its content (400, 413…), says nothing about the
// model's health and is not counted.
func (h *health) record(err error) {
	if err != nil && !healthFailure(err) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.atStart = false
	if err == nil {
		h.failed, h.last = 0, nil
		return
	}
	h.failed++
	h.last = err
}

// fail marks the model unhealthy at once (the start-up check found it
// unusable), until a call succeeds.
func (h *health) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failed = max(h.failed, h.after)
	h.last = err
	h.atStart = true
}

func (h *health) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failed < h.after {
		return nil
	}
	if h.atStart {
		return fmt.Errorf("the start-up check failed: %w", h.last)
	}
	return fmt.Errorf("the last %d calls to the model failed; the last one: %w", h.failed, h.last)
}

// healthFailure reports whether err says the model is not usable: it cannot
// be reached, refuses the key, does not know the model, keeps failing, is
// too slow, or answers garbage.
func healthFailure(err error) bool {
	var (
		st *StatusError
		rl *RateLimitError
	)
	switch {
	case errors.Is(err, context.Canceled) && !errors.Is(err, ErrTimeout):
		return false
	case errors.As(err, &st):
		return st.Code == http.StatusNotFound || errors.Is(err, ErrAuth) || errors.Is(err, ErrTimeout) || errors.Is(err, ErrUnavailable)
	case errors.As(err, &rl):
		return true
	}
	return errors.Is(err, ErrTimeout) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrBadResponse) || errors.Is(err, ErrNotConfigured)
}

// Health returns nil while the model answers, and an error (for /healthz:
// redacted, in words for an operator) once the last UnhealthyAfter calls in
// a row failed, or the start-up Check failed, until a call succeeds. It
// answers at once from what the calls already saw.
func (c *Client) Health() error {
	return c.health.err()
}
