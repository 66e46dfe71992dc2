package adaptertest

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/commands"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/summary"
)

// Chain is the pipeline cmd/bot builds, without an adapter: the store on a
// directory, the LLM client on a fake OpenAI server, assembly, summaries,
// commands, the responder, access, dedupe and the dispatcher (8 turns at a
// time). Adapters' tests put their adapter in front of it.
type Chain struct {
	Store  *memory.Store
	Resp   *chat.Responder
	Sum    *summary.Summarizer
	Disp   *pipeline.Dispatcher
	Cmds   *commands.Commands
	Access *pipeline.Access
	Intake *chat.Intake
}

// ChainOptions configure NewChain.
type ChainOptions struct {
	Dir     string   // the data directory
	LLMURL  string   // the fake OpenAI server (llmtest.Server.URL)
	Allowed []string // access.allowed_users
	BotName string   // for /cmd@botname
	Log     *slog.Logger
	// Chat are the responder's options; SystemPrompt and Log are set by
	// NewChain.
	Chat chat.Options
}

// Defaults are the memory settings of a Chain's users.
var Defaults = memory.Settings{MemoryEnabled: true, Storage: memory.StorageSQLite, Threshold: 10}

// NewChain opens the store in o.Dir and builds the stages, as
// cmd/bot/wire.go does.
func NewChain(t testing.TB, o ChainOptions) *Chain {
	t.Helper()
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	store, err := memory.Open(context.Background(), memory.Options{Dir: o.Dir, Defaults: Defaults, Logger: o.Log})
	if err != nil {
		t.Fatalf("opening the store: %v", err)
	}
	counter := llm.NewCounter("test-model")
	model := llm.New(llm.Options{BaseURL: o.LLMURL, Model: "test-model", MaxRetries: -1, Timeout: 10 * time.Second})
	asm := assemble.New(store, counter, assemble.DefaultBudget)
	sum := summary.New(store, model, counter, summary.Policy{}, o.Log)
	copts := o.Chat
	copts.SystemPrompt, copts.Log = "You are Recall.", o.Log
	resp := chat.New(store, model, asm, sum, counter, copts)
	cmds := commands.New(store, sum, resp, commands.Options{BotName: o.BotName, Defaults: Defaults, Log: o.Log})
	access := pipeline.NewAccess(false, o.Allowed)
	handler := pipeline.Chain(resp, access.Middleware(), pipeline.Dedupe(store, o.Log), cmds.Middleware())
	disp := pipeline.NewDispatcher(handler, 8, o.Log, pipeline.WithGrace(10*time.Second))
	intake := &chat.Intake{Store: store, Allowed: access.Allowed, Counter: counter}
	return &Chain{Store: store, Resp: resp, Sum: sum, Disp: disp, Cmds: cmds, Access: access, Intake: intake}
}

// Close drains the dispatcher, waits for background work and closes the
// store; before (may be nil) runs once the turns are done (an adapter's
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
	c.Resp.Wait()
	c.Sum.Wait()
	if err := c.Store.Close(ctx); err != nil {
		t.Errorf("closing the store: %v", err)
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
