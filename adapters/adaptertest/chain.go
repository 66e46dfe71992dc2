package adaptertest

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/access"
	"github.com/recallbot/recall/app"
	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/commands"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/summary"
)

// Chain is the bot as package app builds it, without an adapter: the store
// on a directory, the LLM client on a fake OpenAI server, assembly,
// summaries, commands, the responder, access, dedupe, rate and token limits
// and a dispatcher (8 turns at a time). Adapters' tests put their adapter in
// front of it.
type Chain struct {
	App    *app.App
	Store  *memory.Store
	Resp   *chat.Responder
	Sum    *summary.Summarizer
	Disp   *pipeline.Dispatcher
	Cmds   *commands.Commands
	Access *access.List
	Intake *chat.Intake
}

// ChainOptions configure NewChain.
type ChainOptions struct {
	Dir     string   // the data directory
	LLMURL  string   // the fake OpenAI server (llmtest.Server.URL)
	Allowed []string // access.allowed_users
	Admins  []string // access.admins (none by default)
	BotName string   // for /cmd@botname
	Log     *slog.Logger
	// Journal opens the delivery journal (App.Outbox) in Dir.
	Journal bool
	// Chat adjusts the responder's options (timings).
	Chat func(*chat.Options)
	// Config adjusts the configuration (e.g. media.*) before the bot is built.
	Config func(*config.Config)
}

// Defaults are the memory settings of a Chain's users.
var Defaults = memory.Settings{MemoryEnabled: true, Storage: memory.StorageSQLite, Threshold: 10}

// Config is the configuration of a Chain on dir: the defaults, with the
// test model, 8 turns at a time and a 10s shutdown.
func Config(dir string, allowed []string) config.Config {
	cfg := config.Default()
	cfg.Data.Dir = dir
	cfg.HTTP.Listen = ""
	cfg.LLM.Model = "test-model"
	cfg.LLM.SystemPrompt = "You are Recall."
	cfg.Memory.EnabledByDefault, cfg.Memory.Storage, cfg.Memory.Threshold = Defaults.MemoryEnabled, string(Defaults.Storage), Defaults.Threshold
	cfg.Access.AllowedUsers = allowed
	cfg.Pipeline.MaxConcurrent = 8
	cfg.Shutdown.Timeout = 10 * time.Second
	return cfg
}

// NewChain opens the store in o.Dir and builds the bot through package app.
func NewChain(t testing.TB, o ChainOptions) *Chain {
	t.Helper()
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	model := llm.New(llm.Options{BaseURL: o.LLMURL, Model: "test-model", MaxRetries: -1, Timeout: 10 * time.Second, RequestTimeout: 10 * time.Second})
	cfg := Config(o.Dir, o.Allowed)
	cfg.Access.Admins = o.Admins
	cfg.LLM.BaseURL = o.LLMURL // also where media.transcription goes by default
	if o.Config != nil {
		o.Config(&cfg)
	}
	a, err := app.New(context.Background(), cfg, app.Parts{
		Model: model, Logger: o.Log, BotName: o.BotName, Journal: o.Journal, Chat: o.Chat,
	})
	if err != nil {
		t.Fatalf("building the bot: %v", err)
	}
	return &Chain{App: a, Store: a.Store, Resp: a.Responder, Sum: a.Summarizer, Disp: a.NewDispatcher(),
		Cmds: a.Commands, Access: a.Access, Intake: a.Intake}
}

// Close drains the dispatcher, then closes the bot (background work, the
// store); before (may be nil) runs once the turns are done (an adapter's
// Close).
func (c *Chain) Close(t testing.TB, before func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Disp.Shutdown(ctx); err != nil {
		t.Errorf("dispatcher shutdown: %v", err)
	}
	if before != nil {
		if err := before(); err != nil {
			t.Errorf("closing the adapter: %v", err)
		}
	}
	if err := c.App.Close(); err != nil {
		t.Errorf("closing the bot: %v", err)
	}
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers: a test's log.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
