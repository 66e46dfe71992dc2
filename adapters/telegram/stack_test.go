package telegram

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/recallbot/recall/adapters/adaptertest"
	"github.com/recallbot/recall/chat"
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
	admins      []string        // the bot's admins (access.admins); default none
	llm         llmtest.Handler // default: Echo("echo: ")
	webhook     *Webhook
	// submit wraps the dispatcher's Submit (crash tests).
	submit func(in pipeline.Inbound, out pipeline.Sender, next pipeline.SubmitFunc) error
	// accept wraps the intake's Accept.
	accept func(ctx context.Context, in pipeline.Inbound, next pipeline.AcceptFunc) error
	// pace replaces the flood limits (default: none, see unpaced);
	// retryUnit the second of a 429's retry_after.
	pace      *pacer
	retryUnit time.Duration
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
	logs *adaptertest.SyncBuffer

	chain  *adaptertest.Chain
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
	s := &stack{t: t, opts: opts, dir: t.TempDir(), api: api, logs: &adaptertest.SyncBuffer{}}
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

// start opens the store on the stack's directory, builds the chain,
// resubmits the accepted-but-unanswered messages and runs the adapter.
func (s *stack) start() {
	t := s.t
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: s.logLevel()}))
	c := adaptertest.NewChain(t, adaptertest.ChainOptions{Dir: s.dir, LLMURL: s.llm.URL, Allowed: s.opts.allowed, Admins: s.opts.admins,
		BotName: fakeBotName, Log: log, Journal: true, Chat: func(o *chat.Options) { o.TypingEvery = s.opts.typingEvery }})
	store, resp, sum, disp, cmds, access, intake := c.Store, c.Resp, c.Sum, c.Disp, c.Cmds, c.Access, c.Intake
	outbox := c.App.Outbox
	unsent, err := outbox.Unsent(ctx, store, Channel, time.Hour)
	if err != nil {
		t.Fatalf("listing unsent replies: %v", err)
	}

	var submit pipeline.SubmitFunc = disp.Submit
	if w := s.opts.submit; w != nil {
		submit = func(in pipeline.Inbound, out pipeline.Sender) error { return w(in, out, disp.Submit) }
	}
	var accept pipeline.AcceptFunc = intake.Accept
	if w := s.opts.accept; w != nil {
		accept = func(ctx context.Context, in pipeline.Inbound) error { return w(ctx, in, intake.Accept) }
	}
	var menu []Command
	for _, c := range cmds.List() {
		menu = append(menu, Command{Name: c.Name, Help: c.Help})
	}
	opts := Options{
		Token: fakeToken, APIURL: s.api.URL, GroupsReply: s.opts.groupsReply, Log: log,
		OnMigrate: func(ctx context.Context, from, to pipeline.Key) error {
			_, err := store.MoveChat(ctx, from, to)
			return err
		},
		Commands: menu, KnownCommands: cmds.Names(), PollTimeout: 2 * time.Second, Allowed: access.Allowed, Stream: s.opts.stream,
	}
	if s.opts.webhook != nil {
		opts.Webhook = *s.opts.webhook
	}
	ad, err := New(opts, submit, accept)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ad.retryBase, ad.retryMax = 10*time.Millisecond, 200*time.Millisecond
	ad.out.pace = unpaced()
	ad.notices.albumWait = 30 * time.Millisecond
	if s.opts.pace != nil {
		ad.out.pace = s.opts.pace
	}
	if s.opts.retryUnit > 0 {
		ad.out.retryUnit = s.opts.retryUnit
	}
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
	s.chain, s.store, s.resp, s.sum, s.disp, s.outbox, s.ad, s.cancel = c, store, resp, sum, disp, outbox, ad, cancel
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
	s.t.Helper()
	s.stopAdapter()
	s.chain.Close(s.t, nil) // closes the outbox too
}

// stopAdapter stops taking updates and waits for Run to return.
func (s *stack) stopAdapter() {
	s.t.Helper()
	s.cancel()
	s.cancel = nil
	if err := <-s.runErr; err != nil {
		s.t.Errorf("Run: %v", err)
	}
}

// freeze stops the adapter and leaves the rest as kill -9 leaves it: the
// turns in flight hang where they are (the test holds their LLM answers)
// and write nothing more, while start opens the same data as the next run.
// thaw cleans the frozen run up; call it once the test has looked.
func (s *stack) freeze() (thaw func()) {
	s.t.Helper()
	s.stopAdapter()
	old := s.chain
	return func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = old.Disp.Shutdown(ctx) // cuts the hanging turns
		_ = old.App.Close()
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

// unpaced is a pacer without flood limits: tests that do not look at the
// pace run at full speed.
func unpaced() *pacer {
	p := newPacer()
	p.every, p.groupEdit, p.groupLimit = 0, 0, 0
	return p
}
