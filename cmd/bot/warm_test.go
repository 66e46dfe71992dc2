package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/recallbot/recall/app"
	"github.com/recallbot/recall/config"
)

// The warm-up at start assembles a prompt and decodes sample JSON: it
// leaves no trace a user could see (no conversation, no message, no chat in
// /stats), and the bot's token counter works after it.
func TestWarmUpStoresNothing(t *testing.T) {
	cfg := config.Default()
	cfg.Data.Dir = t.TempDir()
	cfg.HTTP.Listen = ""
	cfg.LLM.BaseURL, cfg.LLM.APIKey, cfg.LLM.Model = "http://127.0.0.1:1/v1", "test-key", "gpt-4o-mini"
	a, err := app.New(t.Context(), cfg, app.Parts{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	warmUp(t.Context(), a)
	if err := a.Store.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	st, err := a.Store.Stats(t.Context(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st.Owners != 0 || st.Messages != 0 || st.Queue.Written != 0 {
		t.Errorf("after the warm-up: %d chats, %d messages, %d written; want none", st.Owners, st.Messages, st.Queue.Written)
	}
	if n := a.Counter.Count("hello world"); n != 2 {
		t.Errorf("the counter counts %d tokens in %q after the warm-up, want 2", n, "hello world")
	}
}
