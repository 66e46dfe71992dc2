package access

import (
	"context"
	"strconv"
	"sync"

	"github.com/recallbot/recall/pipeline"
)

var (
	tgKey  = pipeline.Key{Channel: "telegram", Chat: "123", Thread: "0"}
	grpKey = pipeline.Key{Channel: "telegram", Chat: "-100200", Thread: ""}
)

// recorder is a stateful fake Sender that keeps what was sent.
type recorder struct {
	mu   sync.Mutex
	sent []pipeline.Outbound
	err  error // returned by Send when set
}

func (r *recorder) Send(_ context.Context, out pipeline.Outbound) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return "", r.err
	}
	r.sent = append(r.sent, out)
	return strconv.Itoa(len(r.sent)), nil
}

func (r *recorder) Sent() []pipeline.Outbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pipeline.Outbound(nil), r.sent...)
}

func (r *recorder) setErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}
