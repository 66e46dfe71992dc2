package telegram

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/commands"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/summary"
)

// The full chain, built as cmd/bot wires it: the store on a temp dir, the
// LLM client on an llmtest fake, assembly, summaries, commands, the
// responder, access, dedupe and the dispatcher; the adapter in front, on the
// fake Bot API.

// stackOptions tune a stack.
type stackOptions struct {
	groupsReply string
	allowed     []string        // default: telegram:111, telegram:222
	llm         llmtest.Handler // default: Echo("echo: ")
	webhook     *Webhook
	// submit wraps the dispatcher's Submit (crash tests).
	submit func(in pipeline.Inbound, out pipeline.Sender, next SubmitFunc) error
	// accept wraps the intake's Accept.
	accept func(ctx context.Context, in pipeline.Inbound, next AcceptFunc) error
	// quiet logs at warning level and above only (benchmarks).
	quiet bool
	// stream turns on telegram.stream; streamEvery replaces the 1s between
	// updates, typingEvery the responder's typing refresh.
	stream      bool
	streamEvery time.Duration
	typingEvery time.Duration
}

func (s *stack) logLevel() slog.Level {
	if s.opts.quiet {
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// stack is a running bot on the fake API.
type stack struct {
	t    testing.TB
	opts stackOptions
	dir  string
	api  *fakeAPI
	llm  *llmtest.Server
	logs *syncBuffer

	store  *memory.Store
	resp   *chat.Responder
	sum    *summary.Summarizer
	disp   *pipeline.Dispatcher
	outbox *chat.Outbox
	ad     *Adapter
	cancel context.CancelFunc
	runErr chan error
	addr   string // webhook server address
}

func newStack(t testing.TB, api *fakeAPI, opts stackOptions) *stack {
	t.Helper()
	if opts.allowed == nil {
		opts.allowed = []string{"telegram:111", "telegram:222"}
	}
	if opts.llm == nil {
		opts.llm = llmtest.Echo("echo: ")
	}
	s := &stack{t: t, opts: opts, dir: t.TempDir(), api: api, logs: &syncBuffer{}}
	s.llm = llmtest.NewServer(t, opts.llm)
	t.Cleanup(func() {
		if s.cancel != nil {
			s.stop()
		}
		if t.Failed() {
			t.Logf("logs:\n%s", s.logs.String())
		}
	})
	s.start()
	return s
}

// chain is the pipeline cmd/bot builds, without an adapter.
type chain struct {
	store  *memory.Store
	resp   *chat.Responder
	sum    *summary.Summarizer
	disp   *pipeline.Dispatcher
	cmds   *commands.Commands
	access *pipeline.Access
	intake *chat.Intake
}

// buildChain opens the store in dir and builds the stages on the LLM at
// llmURL, as cmd/bot/wire.go does.
func buildChain(t testing.TB, dir, llmURL string, allowed []string, log *slog.Logger) *chain {
	t.Helper()
	return buildChainWith(t, dir, llmURL, allowed, log, chat.Options{})
}

// buildChainWith is buildChain with the responder's options (its system
// prompt and log are set here).
func buildChainWith(t testing.TB, dir, llmURL string, allowed []string, log *slog.Logger, copts chat.Options) *chain {
	t.Helper()
	ctx := context.Background()
	defaults := memory.Settings{MemoryEnabled: true, Storage: memory.StorageSQLite, Threshold: 10}
	store, err := memory.Open(ctx, memory.Options{Dir: dir, Defaults: defaults, Logger: log})
	if err != nil {
		t.Fatalf("opening the store: %v", err)
	}
	counter := llm.NewCounter("test-model")
	model := llm.New(llm.Options{BaseURL: llmURL, Model: "test-model", MaxRetries: -1, Timeout: 10 * time.Second})
	asm := assemble.New(store, counter, assemble.DefaultBudget)
	sum := summary.New(store, model, counter, summary.Policy{}, log)
	copts.SystemPrompt, copts.Log = "You are Recall.", log
	resp := chat.New(store, model, asm, sum, counter, copts)
	cmds := commands.New(store, sum, resp, commands.Options{BotName: fakeBotName, Defaults: defaults, Log: log})
	access := pipeline.NewAccess(false, allowed)
	handler := pipeline.Chain(resp, access.Middleware(), pipeline.Dedupe(store, log), cmds.Middleware())
	disp := pipeline.NewDispatcher(handler, 8, log, pipeline.WithGrace(10*time.Second))
	intake := &chat.Intake{Store: store, Allowed: access.Allowed, Counter: counter}
	return &chain{store: store, resp: resp, sum: sum, disp: disp, cmds: cmds, access: access, intake: intake}
}

// close drains the dispatcher, waits for background work and closes the
// store.
func (c *chain) close(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.disp.Shutdown(ctx); err != nil {
		t.Errorf("dispatcher shutdown: %v", err)
	}
	c.resp.Wait()
	c.sum.Wait()
	if err := c.store.Close(ctx); err != nil {
		t.Errorf("closing the store: %v", err)
	}
}

// start opens the store on the stack's directory, builds the chain,
// resubmits the accepted-but-unanswered messages and runs the adapter.
func (s *stack) start() {
	t := s.t
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: s.logLevel()}))
	c := buildChainWith(t, s.dir, s.llm.URL, s.opts.allowed, log, chat.Options{TypingEvery: s.opts.typingEvery})
	store, resp, sum, disp, cmds, access, intake := c.store, c.resp, c.sum, c.disp, c.cmds, c.access, c.intake
	outbox, err := chat.OpenOutbox(filepath.Join(s.dir, "outbox.jsonl"), log)
	if err != nil {
		t.Fatalf("opening the outbox: %v", err)
	}
	resp.Journal = outbox
	unsent, err := outbox.Unsent(ctx, store, Channel, time.Hour)
	if err != nil {
		t.Fatalf("listing unsent replies: %v", err)
	}

	var submit SubmitFunc = disp.Submit
	if w := s.opts.submit; w != nil {
		submit = func(in pipeline.Inbound, out pipeline.Sender) error { return w(in, out, disp.Submit) }
	}
	var accept AcceptFunc = intake.Accept
	if w := s.opts.accept; w != nil {
		accept = func(ctx context.Context, in pipeline.Inbound) error { return w(ctx, in, intake.Accept) }
	}
	var menu []Command
	for _, c := range cmds.List() {
		menu = append(menu, Command{Name: c.Name, Help: c.Help})
	}
	opts := Options{
		Token: fakeToken, APIURL: s.api.URL, GroupsReply: s.opts.groupsReply, Log: log,
		Commands: menu, PollTimeout: 2 * time.Second, Allowed: access.Allowed, Stream: s.opts.stream,
	}
	if s.opts.webhook != nil {
		opts.Webhook = *s.opts.webhook
	}
	ad, err := New(opts, submit, accept)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ad.retryBase, ad.retryMax = 10*time.Millisecond, 200*time.Millisecond
	if s.opts.streamEvery > 0 {
		ad.out.streamEvery = s.opts.streamEvery
	}
	listening := make(chan string, 1)
	ad.listening = listening

	// What cmd/bot does at start: send the replies stored but not sent,
	// then answer what was accepted but not answered.
	if _, _, err := unsent.Send(ctx, ad.Sender()); err != nil {
		t.Fatalf("redelivering: %v", err)
	}
	pending, err := chat.Pending(ctx, store, Channel, time.Hour)
	if err != nil {
		t.Fatalf("listing pending messages: %v", err)
	}
	for _, in := range pending {
		if err := disp.Submit(in, ad.Sender()); err != nil {
			t.Fatalf("resubmitting %s: %v", in.MessageID, err)
		}
	}

	runCtx, cancel := context.WithCancel(context.Background())
	s.store, s.resp, s.sum, s.disp, s.outbox, s.ad, s.cancel = store, resp, sum, disp, outbox, ad, cancel
	s.runErr = make(chan error, 1)
	go func() { s.runErr <- ad.Run(runCtx) }()
	if s.opts.webhook != nil {
		select {
		case s.addr = <-listening:
		case err := <-s.runErr:
			t.Fatalf("Run returned before listening: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("the webhook server did not start")
		}
	}
}

// stop stops the adapter, drains the dispatcher and closes the store.
func (s *stack) stop() {
	t := s.t
	t.Helper()
	s.cancel()
	s.cancel = nil
	if err := <-s.runErr; err != nil {
		t.Errorf("Run: %v", err)
	}
	(&chain{store: s.store, resp: s.resp, sum: s.sum, disp: s.disp}).close(t)
	s.outbox.Close()
}

// freeze stops the adapter and leaves the rest as kill -9 leaves it: the
// turns in flight hang where they are (the test holds their LLM answers)
// and write nothing more, while start opens the same data as the next run.
// thaw cleans the frozen run up; call it once the test has looked.
func (s *stack) freeze() (thaw func()) {
	t := s.t
	t.Helper()
	s.cancel()
	s.cancel = nil
	if err := <-s.runErr; err != nil {
		t.Errorf("Run: %v", err)
	}
	old := &chain{store: s.store, resp: s.resp, sum: s.sum, disp: s.disp}
	outbox := s.outbox
	return func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = old.disp.Shutdown(ctx) // cuts the hanging turns
		old.resp.Wait()
		old.sum.Wait()
		old.store.Close(context.Background())
		outbox.Close()
	}
}

// restart stops everything and starts again on the same data.
func (s *stack) restart() {
	s.t.Helper()
	s.stop()
	s.start()
}

// lookup reports whether a platform message is stored and answered.
func (s *stack) lookup(key pipeline.Key, id int) (stored, answered bool) {
	s.t.Helper()
	st, an, err := s.store.Lookup(context.Background(), key, itoa(id))
	if err != nil {
		s.t.Fatalf("lookup: %v", err)
	}
	return st, an
}

// lastPrompt is the text of every message of the newest LLM request.
func (s *stack) lastPrompt() []llm.Message {
	reqs := s.llm.Requests()
	if len(reqs) == 0 {
		return nil
	}
	return reqs[len(reqs)-1].Messages
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
