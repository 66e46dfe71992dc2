// Package pipelinetest holds fakes of the pipeline's interfaces for other
// packages' tests.
package pipelinetest

import (
	"context"
	"strconv"
	"sync"

	"github.com/recallbot/recall/pipeline"
)

// Recorder is a stateful fake pipeline.Sender that keeps what was sent; the
// ids it returns are "1", "2", … in order. It is safe for concurrent use.
type Recorder struct {
	mu   sync.Mutex
	sent []pipeline.Outbound
	err  error
}

var _ pipeline.Sender = (*Recorder)(nil)

// Send records out, or returns the error set by SetErr without recording.
func (r *Recorder) Send(_ context.Context, out pipeline.Outbound) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return "", r.err
	}
	r.sent = append(r.sent, out)
	return strconv.Itoa(len(r.sent)), nil
}

// Sent returns a copy of what was sent, in order.
func (r *Recorder) Sent() []pipeline.Outbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pipeline.Outbound(nil), r.sent...)
}

// SetErr makes every later Send fail with err (nil: succeed again).
func (r *Recorder) SetErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}
