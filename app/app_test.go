package app

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/summary"
)

// sender records what the bot sends.
type sender struct {
	mu   sync.Mutex
	sent []pipeline.Outbound
}

func (s *sender) Send(_ context.Context, out pipeline.Outbound) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, out)
	return "", nil
}

// testConfig is the default configuration on a temp data dir, the model
// on srv, summaries after two exchanges keeping one.
func testConfig(t *testing.T, srv *llmtest.Server) config.Config {
	cfg := config.Default()
	cfg.Data.Dir = filepath.Join(t.TempDir(), "data")
	cfg.HTTP.Listen = ""
	cfg.LLM.BaseURL, cfg.LLM.APIKey, cfg.LLM.Model, cfg.LLM.MaxRetries = srv.URL, "sk-test", "test-model", 0
	cfg.Memory.Threshold, cfg.Memory.KeepRecentTurns = 2, 1
	cfg.Access.Open = true
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Stopping the bot while a background summary waits for a model that never
// answers: Close cancels the summary once shutdown.timeout is over and
// returns, with everything written and nothing archived.
func TestCloseStopsAHangingSummary(t *testing.T) {
	entered := make(chan struct{}, 1)
	echo := llmtest.Echo("echo: ")
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if r.Messages[0].Content == summary.Instructions {
			entered <- struct{}{}
			return llmtest.Response{Hang: true}
		}
		return echo(r)
	})
	cfg := testConfig(t, srv)
	cfg.Shutdown.Timeout = 100 * time.Millisecond
	a, err := New(t.Context(), cfg, Parts{LogWriter: discard{}})
	if err != nil {
		t.Fatal(err)
	}
	key := pipeline.Key{Channel: "telegram", Chat: "42"}
	out := &sender{}
	for i, text := range []string{"hello", "how are you?"} {
		in := pipeline.Inbound{Key: key, SenderID: "42", MessageID: string(rune('1' + i)), Text: text, Time: time.Now()}
		if err := a.Handler.Handle(t.Context(), &pipeline.Turn{In: in, Out: out}); err != nil {
			t.Fatal(err)
		}
	}
	<-entered // the summary is waiting for the model
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(30 * time.Second): // the model client alone would wait 60s (llm.timeout)
		t.Fatal("Close did not return: the hanging summary holds the stop")
	}
	db, err := memory.OpenSQLite(context.Background(), filepath.Join(cfg.Data.Dir, "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := db.Status(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Total != 4 || st.Archived != 0 {
		t.Errorf("after the stop: %d messages, %d archived; want 4 written, none archived", st.Total, st.Archived)
	}
	for _, o := range out.sent {
		if o.Text != "echo: hello" && o.Text != "echo: how are you?" {
			t.Errorf("sent %q: a stop is not a failure to tell the user", o.Text)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
