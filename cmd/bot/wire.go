package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/recallbot/recall/adapters/console"
	"github.com/recallbot/recall/adapters/telegram"
	"github.com/recallbot/recall/adapters/whatsapp"
	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/commands"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/limits"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/logs"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/metrics"
	"github.com/recallbot/recall/ops"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/summary"
)

// loadConfig reads --config, or config.yaml when it exists, plus the
// environment and the RECALL_* variables of .env in the working directory.
func loadConfig(path string) (config.Config, error) {
	if err := config.LoadDotEnv(".env"); err != nil {
		return config.Config{}, err
	}
	if path == "" {
		if _, err := os.Stat("config.yaml"); err == nil {
			path = "config.yaml"
		}
	}
	return config.Load(path)
}

// app is everything wired together.
type app struct {
	cfg       config.Config
	log       *slog.Logger
	store     *memory.Store
	model     *llm.Client // nil when not configured
	summarize *summary.Summarizer
	responder *chat.Responder
	commands  *commands.Commands
	handler   pipeline.Handler
	access    *pipeline.Access
	counter   llm.Counter
	metrics   *metrics.Metrics
	health    *ops.Health // /healthz: database, write queue, then each channel as it starts
	closeLog  func()
}

// The metrics hear about every turn.
var _ chat.Observer = (*metrics.Metrics)(nil)

// notConfigured is what the user reads when no LLM is set up.
const notConfigured = "I'm running, but no language model is configured yet, so I can't answer. " +
	"Set RECALL_LLM_API_KEY in the environment or in .env, and llm.base_url (RECALL_LLM_BASE_URL) for a server other than OpenAI " +
	"(any OpenAI-compatible server works, e.g. a local Ollama at http://localhost:11434/v1: no key needed), then restart me. " +
	"Commands such as /help, /remember and /summary_status work meanwhile."

func newApp(ctx context.Context, cfg config.Config, logw io.Writer) (*app, error) {
	a := &app{cfg: cfg, closeLog: func() {}}
	a.log = logs.New(logw, cfg.Log.Level, cfg.Log.Format, cfg.Secrets())
	for _, w := range cfg.Warnings() {
		a.log.Warn(w)
	}
	defaults := memory.Settings{
		MemoryEnabled: cfg.Memory.EnabledByDefault,
		Storage:       memory.Storage(cfg.Memory.Storage),
		Threshold:     cfg.Memory.Threshold,
	}
	store, err := memory.Open(ctx, memory.Options{
		Dir: cfg.Data.Dir, Defaults: defaults, MaxMemories: cfg.Memory.MaxMemories,
		QueueSize: cfg.Memory.WriteQueue, Logger: a.log,
	})
	if err != nil {
		return nil, fmt.Errorf("opening the store in %s: %w", cfg.Data.Dir, err)
	}
	a.store = store
	a.metrics = metrics.New(metrics.Options{Version: version, Channels: enabledChannels(cfg), WriteQueue: store})
	a.health = ops.NewHealth(logs.NewRedactor(nil, cfg.Secrets()).Redact,
		ops.Database(store.SQLite().DB()), ops.WriteQueueCheck(store))
	counter := llm.NewCounter(cfg.LLM.Model)
	a.counter = counter
	var model chat.Model
	if cfg.LLM.Configured() {
		a.model = llm.New(llm.Options{
			BaseURL: cfg.LLM.BaseURL, APIKey: cfg.LLM.APIKey, Model: cfg.LLM.Model, SummaryModel: cfg.LLM.SummaryModel,
			Temperature: cfg.LLM.Temperature, MaxTokens: cfg.LLM.MaxTokens, Timeout: cfg.LLM.Timeout,
			MaxRetries: cfg.LLM.MaxRetries, Concurrency: cfg.LLM.Concurrency,
			TurnTimeout: cfg.LLM.TurnTimeout, UnhealthyAfter: cfg.LLM.UnhealthyAfter,
		})
		model = a.model
		a.health.Add(ops.LLM(a.model))
	}
	b := cfg.Memory.Budget
	asm := assemble.New(store, counter, assemble.Budget{Total: b.Total, System: b.System, Memories: b.Memories + cfg.Memory.Facts.Budget*boolInt(cfg.Memory.Facts.Enabled), Summaries: b.Summaries, Snippets: b.Snippets, Recent: b.Recent})
	policy := summary.Policy{KeepRecentTurns: cfg.Memory.KeepRecentTurns, MaxActivePerLevel: cfg.Memory.MaxActivePerLevel, MaxActiveTotal: cfg.Memory.MaxActiveTotal}
	var sum chat.Summarizer
	var cmdSum commands.Summarizer
	if a.model != nil {
		a.summarize = summary.New(summaryCounter{store, a.metrics}, a.model, counter, policy, a.log)
		sum, cmdSum = a.summarize, a.summarize
	}
	a.responder = chat.New(store, model, asm, sum, counter, chat.Options{
		SystemPrompt: cfg.LLM.SystemPrompt, Facts: cfg.Memory.Facts.Enabled, MaxMemories: cfg.Memory.MaxMemories,
		NotConfigured: notConfigured, Log: a.log, StillThinkingAfter: cfg.LLM.StillThinkingAfter,
	})
	a.responder.Observer = a.metrics
	extra := ""
	if a.model == nil {
		extra = notConfigured
	}
	a.commands = commands.New(store, cmdSum, a.responder, commands.Options{Defaults: defaults, Facts: cfg.Memory.Facts.Enabled, Log: a.log, ExtraHelp: extra})
	a.access = pipeline.NewAccess(cfg.Access.Open, cfg.Access.AllowedUsers,
		pipeline.WithAdmins(cfg.Access.Admins...), pipeline.WithAccessStore(store), pipeline.WithAccessLog(a.log), pipeline.WithAccessRefresh(accessRefresh))
	if err := a.access.Load(ctx); err != nil {
		_ = store.Close(context.Background())
		return nil, fmt.Errorf("loading access decisions: %w", err)
	}
	a.commands.EnableAdmin(commands.AdminOptions{Access: a.access, Stats: store,
		MessagesPerMinute: cfg.Limits.MessagesPerMinute, TokensPerDay: cfg.Limits.TokensPerDay})
	lim := limits.Options{Exempt: a.access.IsAdmin, Discard: store}
	rate := limits.NewRate(cfg.Limits.MessagesPerMinute, lim)
	quota := limits.NewQuota(cfg.Limits.TokensPerDay, store, lim)
	a.responder.Usage = quota
	// The stages of DESIGN.md in order: access, dedupe, (rate limit),
	// commands, (token quota), then the responder: persist, assemble, LLM,
	// reply, persist, summarize.
	a.handler = pipeline.Chain(a.responder,
		a.access.Middleware(),
		pipeline.Dedupe(store, a.log),
		rate.Middleware(),
		a.commands.Middleware(),
		quota.Middleware(),
	)
	return a, nil
}

// enabledChannels names the chat channels this configuration runs.
func enabledChannels(cfg config.Config) []string {
	var out []string
	if cfg.TelegramEnabled() {
		out = append(out, telegram.Channel)
	}
	if cfg.WhatsApp.Enabled {
		out = append(out, whatsapp.Channel)
	}
	if len(out) == 0 {
		out = append(out, console.Key.Channel)
	}
	return out
}

// summaryCounter is the store as the summarizer sees it: it counts the
// summaries written (recall_summaries_created_total) — level 1 by Archive,
// higher levels by Fold.
type summaryCounter struct {
	*memory.Store
	m *metrics.Metrics
}

func (s summaryCounter) Archive(ctx context.Context, key pipeline.Key, ids []int64, sum memory.Summary, turnsSeen int) (memory.Summary, error) {
	out, err := s.Store.Archive(ctx, key, ids, sum, turnsSeen)
	if err == nil {
		s.m.SummaryCreated(max(out.Level, 1))
	}
	return out, err
}

func (s summaryCounter) Fold(ctx context.Context, key pipeline.Key, ids []int64, sum memory.Summary) (memory.Summary, error) {
	out, err := s.Store.Fold(ctx, key, ids, sum)
	if err == nil {
		s.m.SummaryCreated(out.Level)
	}
	return out, err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// close stops background work and flushes the store.
func (a *app) close() error {
	if a.summarize != nil {
		a.summarize.Wait()
	}
	a.responder.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.Shutdown.Timeout)
	defer cancel()
	err := a.store.Close(ctx)
	if err != nil {
		a.log.Error("stopped, but the write queue could not be flushed", "err", err)
	} else {
		a.log.Info("stopped; everything is written")
	}
	a.closeLog()
	return err
}

// runBot runs the chat channels until ctx ends (or, for the terminal chat,
// until end of input), with the health and metrics server on http.listen.
// Once ctx ends it stops taking updates, lets turns in flight finish
// (shutdown.timeout), then flushes the write queue.
func runBot(ctx context.Context, cfg config.Config, stdin io.Reader, stdout, stderr io.Writer) error {
	terminal := !cfg.TelegramEnabled() && !cfg.WhatsApp.Enabled
	logw := stderr
	var logFile *os.File
	if terminal {
		// Keep the chat readable: logs go to a file beside the data.
		if err := os.MkdirAll(cfg.Data.Dir, 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(cfg.Data.Dir, "recall.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		logFile, logw = f, f
	}
	a, err := newApp(ctx, cfg, logw)
	if err != nil {
		return err
	}
	if logFile != nil {
		a.closeLog = func() { logFile.Close() }
	}
	if a.model != nil {
		// Logged with the fix; the bot runs on (commands work). The
		// terminal chat logs to a file: its user reads it on stderr too.
		if err := a.model.CheckAtStart(ctx, a.log); err != nil && terminal {
			fmt.Fprintln(stderr, "warning:", logs.NewRedactor(nil, cfg.Secrets()).Redact(err.Error()))
		}
	}
	stopHTTP, err := a.serveHTTP(terminal)
	if err != nil {
		return errors.Join(err, a.close())
	}
	retention := make(chan error, 1)
	rctx, stopRetention := context.WithCancel(ctx)
	go func() {
		retention <- a.store.RunRetention(rctx, time.Duration(cfg.Memory.RetentionDays)*24*time.Hour, cfg.Memory.RetentionInterval)
	}()
	var runErr error
	if terminal {
		a.log.Info("starting the terminal chat", "data", cfg.Data.Dir)
		interactive := isTerminal(stdin)
		if interactive {
			fmt.Fprintf(stdout, "Recall %s — terminal chat. Type /help for commands, /quit to leave. Logs: %s\n", version, filepath.Join(cfg.Data.Dir, "recall.log"))
			if a.model == nil {
				fmt.Fprintln(stdout, notConfigured)
			}
		}
		runErr = console.New(stdin, stdout, a.handler, interactive, console.WithLog(a.log),
			console.WithExportDir(filepath.Join(cfg.Data.Dir, "exports")), console.IfTerminal(stdin)).Run(ctx)
	} else {
		runErr = a.runChannels(ctx)
	}
	stopRetention()
	<-retention
	stopHTTP()
	return errors.Join(runErr, a.close())
}

// serveHTTP starts the health and metrics server on http.listen (nothing
// when it is empty) and returns the function that stops it. Failing to
// listen is an error naming http.listen, except in the terminal chat, which
// runs without the server then (another Recall may hold the port).
func (a *app) serveHTTP(terminal bool) (stop func(), err error) {
	addr := a.cfg.HTTP.Listen
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if terminal {
			a.log.Warn("the health and metrics server is off: cannot listen on http.listen", "addr", addr, "err", err)
			return func() {}, nil
		}
		return nil, fmt.Errorf("http.listen %s: %w (is another Recall running? set http.listen to a free host:port, or to \"\" in config.yaml to turn the health and metrics server off)", addr, err)
	}
	a.log.Info("serving /healthz and /metrics", "addr", ln.Addr().String())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := ops.Serve(ctx, ln, ops.Handler(a.health, a.metrics.Handler())); err != nil {
			a.log.Error("the health and metrics server failed", "addr", addr, "err", err)
		}
	}()
	return func() {
		cancel()
		<-done
	}, nil
}

// pendingWindow is how old an accepted but unanswered message may be to be
// answered after a restart.
const pendingWindow = time.Hour

// runChannels runs the chat platforms and the dispatcher until ctx ends, then
// stops taking updates and lets turns in flight finish (shutdown.timeout).
func (a *app) runChannels(ctx context.Context) error {
	cfg := a.cfg
	// The journal of replies being delivered: a reply stored but never sent
	// before a crash is sent at the next start.
	outbox, err := chat.OpenOutbox(filepath.Join(cfg.Data.Dir, outboxFile), a.log)
	if err != nil {
		return err
	}
	defer outbox.Close()
	a.responder.Journal = outbox
	disp := pipeline.NewDispatcher(a.handler, cfg.Pipeline.MaxConcurrent, a.log, pipeline.WithGrace(cfg.Shutdown.Timeout))
	intake := &chat.Intake{Store: a.store, Allowed: a.access.Allowed, Counter: a.counter}
	g, gctx := errgroup.WithContext(ctx)
	if cfg.TelegramEnabled() {
		var menu []telegram.Command
		for _, c := range a.commands.List() {
			menu = append(menu, telegram.Command{Name: c.Name, Help: c.Help})
		}
		tg, err := telegram.New(telegram.Options{
			Token: cfg.Telegram.Token, APIURL: cfg.Telegram.APIURL,
			Webhook:     telegram.Webhook{URL: cfg.Telegram.Webhook.URL, Listen: cfg.Telegram.Webhook.Listen, Secret: cfg.Telegram.Webhook.Secret},
			GroupsReply: cfg.Telegram.Groups.Reply, Stream: cfg.Telegram.Stream,
			Log: a.log.With("channel", telegram.Channel), Commands: menu, Allowed: a.access.Allowed,
			OnReconnect: func() { a.metrics.ChannelReconnected(telegram.Channel) },
		}, disp.Submit, intake.Accept)
		if err != nil {
			return err
		}
		// Replies stored but never sent by the last run go first, then
		// the messages accepted before a stop but never answered.
		unsent, err := a.unsent(ctx, outbox, telegram.Channel)
		if err != nil {
			return err
		}
		if err := a.redeliver(ctx, unsent, telegram.Channel, tg.Sender()); err != nil {
			return err
		}
		pending, err := chat.Pending(ctx, a.store, telegram.Channel, pendingWindow)
		if err != nil {
			return fmt.Errorf("listing unanswered telegram messages: %w", err)
		}
		for _, in := range pending {
			if err := disp.Submit(in, tg.Sender()); err != nil {
				a.log.Warn("resubmitting an unanswered message", "key", in.Key, "err", err)
			}
		}
		if len(pending) > 0 {
			a.log.Info("answering messages left unanswered by the last run", "channel", telegram.Channel, "count", len(pending))
		}
		a.health.Add(ops.Channel(telegram.Channel, tg))
		g.Go(func() error { return tg.Run(gctx) })
	}
	var wa *whatsapp.Adapter
	if cfg.WhatsApp.Enabled {
		var err error
		wa, err = whatsapp.New(whatsapp.Options{DataDir: cfg.Data.Dir, GroupsReply: cfg.WhatsApp.Groups.Reply,
			BacklogWindow: cfg.WhatsApp.BacklogWindow, SplitLimit: cfg.WhatsApp.SplitLimit,
			Log: a.log.With("channel", whatsapp.Channel)}, disp.Submit, intake.Accept)
		if err != nil {
			return err
		}
		unsent, err := a.unsent(ctx, outbox, whatsapp.Channel)
		if err != nil {
			return err
		}
		pending, err := chat.Pending(ctx, a.store, whatsapp.Channel, wa.BacklogWindow())
		if err != nil {
			return fmt.Errorf("listing unanswered whatsapp messages: %w", err)
		}
		for _, in := range pending {
			if err := disp.Submit(in, wa.Sender()); err != nil {
				a.log.Warn("resubmitting an unanswered message", "key", in.Key, "err", err)
			}
		}
		a.health.Add(ops.Channel(whatsapp.Channel, wa))
		// The WhatsApp sender waits for the connection, which Run makes:
		// the replies the last run never sent go out once it is up.
		g.Go(func() error {
			if err := a.redeliver(gctx, unsent, whatsapp.Channel, wa.Sender()); err != nil && gctx.Err() == nil {
				a.log.Error("sending the replies the last run never sent", "channel", whatsapp.Channel, "err", err)
			}
			return nil
		})
		// A WhatsApp failure (not linked, logged out) stops only this
		// channel: it is logged, the others keep running.
		g.Go(func() error {
			if err := wa.Run(gctx); err != nil {
				a.log.Error("the WhatsApp channel stopped; the other channels keep running", "err", err)
			}
			return nil
		})
	}
	// Keep serving until asked to stop, even when a channel gave up.
	g.Go(func() error { <-gctx.Done(); return nil })
	if a.access.Nobody() {
		a.log.Warn("nobody may talk to the bot yet: access.open is false and no user or admin is allowed. Write to the bot, then run `bot allow CODE` with the code logged here, or list your id in access.admins")
	}
	a.log.Info("running", "telegram", cfg.TelegramEnabled(), "whatsapp", cfg.WhatsApp.Enabled)
	err = g.Wait() // returns when ctx ends (or a channel fails)
	inFlight, queued := disp.Stats()
	a.log.Info("stopping: no new updates; letting turns in flight finish",
		"cause", context.Cause(ctx), "in_flight", inFlight, "queued", queued, "timeout", cfg.Shutdown.Timeout)
	derr := disp.Close()
	if wa != nil {
		derr = errors.Join(derr, wa.Close())
	}
	if derr == nil {
		a.log.Info("turns finished; flushing the write queue", "queued", a.store.WriteStats().Queued)
	}
	return errors.Join(err, derr)
}

// outboxFile, in the data dir, is the journal of replies being delivered.
const outboxFile = "outbox.jsonl"

// unsent sorts out the replies of channel the last run stored but never
// sent; before anything of the channel is answered.
func (a *app) unsent(ctx context.Context, outbox *chat.Outbox, channel string) (*chat.Redelivery, error) {
	r, err := outbox.Unsent(ctx, a.store, channel, pendingWindow)
	if err != nil {
		return nil, fmt.Errorf("listing the %s replies left unsent by the last run: %w", channel, err)
	}
	return r, nil
}

// redeliver sends them.
func (a *app) redeliver(ctx context.Context, r *chat.Redelivery, channel string, out pipeline.Sender) error {
	sent, unsure, err := r.Send(ctx, out)
	if sent > 0 || unsure > 0 {
		a.log.Info("sent the replies the last run stored but never sent", "channel", channel, "sent", sent, "maybe_delivered_not_resent", unsure)
	}
	if err != nil {
		return fmt.Errorf("sending the %s replies left unsent by the last run: %w", channel, err)
	}
	return nil
}

var (
	_ ops.HealthReporter = (*telegram.Adapter)(nil)
	_ ops.HealthReporter = (*whatsapp.Adapter)(nil)
)

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&fs.ModeCharDevice != 0
}
