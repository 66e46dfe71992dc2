package pipeline

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"sync"
)

// recorder is a stateful fake Sender that keeps what was sent.
type recorder struct {
	mu   sync.Mutex
	sent []Outbound
	err  error // returned by Send when set
}

func (r *recorder) Send(_ context.Context, out Outbound) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return "", r.err
	}
	r.sent = append(r.sent, out)
	return strconv.Itoa(len(r.sent)), nil
}

func (r *recorder) Sent() []Outbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Outbound(nil), r.sent...)
}

func (r *recorder) setErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

// buttonSender is a Sender that renders choices as buttons.
type buttonSender struct{ recorder }

func (*buttonSender) Buttons() bool { return true }

// logBuffer is a concurrency-safe buffer for a test logger.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testLogger returns a debug-level text logger writing into a buffer.
func testLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

var (
	tgKey  = Key{Channel: "telegram", Chat: "123", Thread: "0"}
	grpKey = Key{Channel: "telegram", Chat: "-100200", Thread: ""}
)
