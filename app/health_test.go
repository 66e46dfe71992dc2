package app

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/ops"
)

// lockedBuffer is a log writer safe for the bot's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A bot with a channel but no model configured says so at start, naming
// the keys to set, and its /healthz has an llm part saying "not
// configured" (degraded: it cannot answer a chat message).
func TestNoModelConfiguredIsLoggedAndOnHealthz(t *testing.T) {
	cfg := config.Default()
	cfg.Data.Dir = filepath.Join(t.TempDir(), "data")
	cfg.HTTP.Listen = ""
	cfg.Telegram.Token = "123:abc"
	if cfg.LLM.Configured() {
		t.Fatal("the default configuration has a model configured")
	}
	log := &lockedBuffer{}
	a, err := New(t.Context(), cfg, Parts{LogWriter: log})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	line := ""
	for l := range strings.SplitSeq(log.String(), "\n") {
		if strings.Contains(l, "no language model is configured") {
			line = l
		}
	}
	if line == "" || !strings.Contains(line, "level=WARN") {
		t.Fatalf("no warning at start about the missing model:\n%s", log)
	}
	for _, key := range []string{"llm.base_url", "llm.model"} {
		if !strings.Contains(line, key) {
			t.Errorf("the warning does not name %s: %s", key, line)
		}
	}
	rep := a.Health.Report(context.Background())
	if !strings.HasPrefix(rep.Parts["llm"], "not configured") || rep.Status != ops.StatusDegraded {
		t.Fatalf("/healthz without a model: %+v", rep)
	}
}
