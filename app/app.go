package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/recallbot/recall/access"
	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/commands"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/embed"
	"github.com/recallbot/recall/lease"
	"github.com/recallbot/recall/limits"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/logs"
	"github.com/recallbot/recall/media"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/memtools"
	"github.com/recallbot/recall/metrics"
	"github.com/recallbot/recall/ops"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/sandbox"
	"github.com/recallbot/recall/summary"
	"github.com/recallbot/recall/turnqueue"
)

// Model is what the bot needs from a language model: chat answers and
// summaries. *llm.Client implements it (and streams, chat.StreamModel).
type Model interface {
	chat.Model
	summary.LLM
}

// Parts are the outside parts of the bot, injectable by tests and
// benchmarks. The zero value is production: the model from llm.*, the
// logger on stderr, the system clock.
type Parts struct {
	// Model answers; nil builds an llm.Client from the configuration when
	// llm.base_url is set (else the bot explains how to configure one).
	Model Model
	// LogWriter receives the logs (format and level from log.*); nil is
	// os.Stderr. Logger, when set, is used instead.
	LogWriter io.Writer
	Logger    *slog.Logger
	// Now is the clock of commands, limits and access decisions; nil is
	// time.Now.
	Now func() time.Time
	// Version is reported by /metrics.
	Version string
	// BotName is the bot's @username: the commands stage then ignores
	// "/cmd@OtherBot" itself. Empty in production, where the Telegram
	// adapter strips its own @name and drops other bots' commands.
	BotName string
	// Workers is the program the parsers of outside files (PDF, images)
	// run in, under media.workers' limits: the bot itself re-executed
	// (sandbox.Serve in main). nil: they run in this process, inputs
	// capped (tests; nothing stops a parser a hostile file sends into a
	// loop there).
	Workers *sandbox.Exec
	// Store adjusts how the store is opened (a test's faulty disk, short
	// retries); nil leaves the options from the configuration.
	Store func(*memory.Options)
	// Chat adjusts the responder's options (a test's short timeouts).
	Chat func(*chat.Options)
	// IntakeWait is how long an update waits to be durable before the
	// intake looks whether storage fails (0: chat.Intake's default).
	IntakeWait time.Duration
	// Journal opens the delivery journal (outbox.jsonl in the data dir):
	// the bot running chat channels sets it. The terminal chat and the
	// subcommands leave it alone (a subcommand may run beside the bot).
	Journal bool
	// ForegroundSummaries: the responder starts no summaries; the caller
	// runs them (a benchmark that needs them at known turns).
	ForegroundSummaries bool
	// WrapAssembler and WrapStore let a benchmark time the responder's
	// assembly and store calls; nil leaves them alone.
	WrapAssembler func(chat.Assembler) chat.Assembler
	WrapStore     func(*memory.Store) chat.Store
	// WaitForVectors: a one-shot command (bot search, bot context) waits
	// for a conversation's vector index to load (memory.embeddings)
	// instead of answering from full text meanwhile, as a turn does.
	WaitForVectors bool
	// Replica names this process among the replicas on one PostgreSQL
	// database (leases, claimed turns); empty: host name, PID and a
	// random suffix.
	Replica string
	// Queue and Lease adjust the shared queue's and the leader leases'
	// timing on PostgreSQL (a test's short leases and clock).
	Queue func(*turnqueue.Options)
	Lease func(*lease.Options)
}

// App is the bot, wired. Its fields are the parts, for the subcommands and
// for tests to look at; Close stops what it owns.
type App struct {
	Config     config.Config
	Replica    string // this process among the replicas on PostgreSQL (Parts.Replica)
	Log        *slog.Logger
	Store      *memory.Store
	Model      Model               // nil when no model is configured
	Summarizer *summary.Summarizer // nil when no model is configured
	Responder  *chat.Responder
	Commands   *commands.Commands
	Access     *access.List
	Counter    llm.Counter
	Metrics    *metrics.Metrics
	Health     *ops.Health // /healthz: database, write queue, then each channel as it starts
	Intake     *chat.Intake
	Outbox     *chat.Outbox // the delivery journal; nil when not open (the terminal chat) or on PostgreSQL
	Kept       *media.Kept  // the photos kept on disk (media.keep_images); nil when not kept
	// Shared is the delivery journal in the database on PostgreSQL
	// (instead of Outbox), so another replica finishes a dead one's
	// deliveries; nil otherwise.
	Shared *chat.SharedOutbox
	// Handler is the chain of stages: access, dedupe, rate limit,
	// commands, token quota, then the responder.
	Handler pipeline.Handler

	// Vectors ranks the archive by meaning and Embedding embeds new
	// messages in the background (Run starts it), both nil unless
	// memory.embeddings.model is set.
	Vectors   *embed.Searcher
	Embedding *embed.Worker

	parts Parts
}

// The metrics hear about every turn.
var _ chat.Observer = (*metrics.Metrics)(nil)

// NotConfigured is what the user reads when no LLM is set up.
const NotConfigured = "I'm running, but no language model is configured yet, so I can't answer. " +
	"Set RECALL_LLM_API_KEY in the environment or in .env, and llm.base_url (RECALL_LLM_BASE_URL) for a server other than OpenAI " +
	"(any OpenAI-compatible server works, e.g. a local Ollama at http://localhost:11434/v1: no key needed), then restart me. " +
	"Commands such as /help, /remember and /summary_status work meanwhile."

// OutboxFile, in the data dir, is the journal of replies being delivered.
const OutboxFile = "outbox.jsonl"

// New opens the store in data.dir and builds the bot. Close releases it.
func New(ctx context.Context, cfg config.Config, parts Parts) (*App, error) {
	a := &App{Config: cfg, Log: parts.Logger, Replica: parts.Replica, parts: parts}
	if a.Replica == "" {
		a.Replica = replicaName()
	}
	if a.Log == nil {
		w := parts.LogWriter
		if w == nil {
			w = os.Stderr
		}
		a.Log = logs.New(w, cfg.Log.Level, cfg.Log.Format, cfg.Secrets())
	}
	for _, w := range cfg.Warnings() {
		a.Log.Warn(w)
	}
	now := parts.Now
	if now == nil {
		now = time.Now
	}
	defaults := Defaults(cfg)
	mopts := memory.Options{
		Dir: cfg.Data.Dir, Defaults: defaults, MaxMemories: cfg.Memory.MaxMemories,
		QueueSize: cfg.Memory.WriteQueue, Logger: a.Log, DatabaseURL: cfg.Database.URL,
		SearchMemory: cfg.Memory.SearchIndexBytes(),
	}
	if parts.Store != nil {
		parts.Store(&mopts)
	}
	store, err := memory.Open(ctx, mopts)
	if err != nil {
		return nil, fmt.Errorf("opening the store in %s: %w", cfg.Data.Dir, err)
	}
	a.Store = store
	mo := metrics.Options{Version: parts.Version, Channels: enabledChannels(cfg), WriteQueue: store}
	if store.Postgres() != nil {
		mo.Replica = a.Replica
	}
	a.Metrics = metrics.New(mo)
	checks := []ops.Check{ops.Database(store.SQLite().DB()), ops.WriteQueueCheck(store)}
	if pg := store.Postgres(); pg != nil {
		checks = append(checks, ops.Check{Name: "postgres", Run: pg.Ping})
	}
	a.Health = ops.NewHealth(logs.NewRedactor(nil, cfg.Secrets()).Redact, checks...)
	if store.Postgres() != nil {
		a.Health.AddNote(ops.Note{Name: "replica", Run: func(context.Context) string { return a.Replica }})
	}
	a.Counter = llm.NewCounter(cfg.LLM.Model)
	a.Model = parts.Model
	if a.Model == nil && cfg.LLM.Configured() {
		a.Model = llm.New(llm.Options{
			BaseURL: cfg.LLM.BaseURL, APIKey: cfg.LLM.APIKey, Model: cfg.LLM.Model, SummaryModel: cfg.LLM.SummaryModel,
			Temperature: cfg.LLM.Temperature, MaxTokens: cfg.LLM.MaxTokens, Timeout: cfg.LLM.Timeout,
			MaxRetries: cfg.LLM.MaxRetries, Concurrency: cfg.LLM.Concurrency,
			TurnTimeout: cfg.LLM.TurnTimeout, UnhealthyAfter: cfg.LLM.UnhealthyAfter,
			// A non-streamed request shows nothing until it ends: it may
			// take the whole turn (llm.turn_timeout).
			RequestTimeout: max(cfg.LLM.TurnTimeout, cfg.LLM.Timeout),
		})
	}
	if c, ok := a.Model.(*llm.Client); ok {
		a.Health.Add(ops.LLM(c))
	}
	if a.Model == nil {
		// The bot runs (commands work) but answers every chat message
		// with how to configure a model: the operator reads it at start
		// and on /healthz, before a user has to tell them.
		a.Health.Add(ops.LLMNotConfigured())
		a.Log.Warn("no language model is configured: every chat message is answered with how to set one up (commands work)",
			"set", "llm.base_url and llm.model (RECALL_LLM_BASE_URL, RECALL_LLM_MODEL) for an OpenAI-compatible server such as Ollama, or llm.api_key (RECALL_LLM_API_KEY) for OpenAI")
	}
	if err := a.build(ctx, parts, defaults, now); err != nil {
		return nil, errors.Join(err, store.Close(context.Background()))
	}
	return a, nil
}

// forgetUndelivered drops from the delivery journal the replies of what a
// /purge removed (nothing without a journal), the kept photos it covers
// (media.keep_images, now or before) and the owner's /export files kept in
// data/exports.
func (a *App) forgetUndelivered(scope memory.PurgeScope) error {
	var errs []error
	kept := a.Kept
	if kept == nil {
		// Photos kept while media.keep_images was on go too.
		kept = media.NewKept(filepath.Join(a.Config.Data.Dir, MediaDir))
	}
	if _, err := kept.Purge(scope); err != nil {
		errs = append(errs, err)
	}
	if _, err := PurgeExports(filepath.Join(a.Config.Data.Dir, ExportsDir), scope.Owner); err != nil {
		errs = append(errs, err)
	}
	switch {
	case !scope.OlderThan.IsZero():
	case a.Shared != nil:
		errs = append(errs, a.Shared.Forget(scope))
	case a.Outbox != nil:
		errs = append(errs, a.Outbox.Forget(scope))
	}
	return errors.Join(errs...)
}

// AccessRefresh is how soon a running bot applies an allow/deny decision
// made beside it (`bot allow`, `bot deny`).
const AccessRefresh = 2 * time.Second

// build makes the stages on the open store.
func (a *App) build(ctx context.Context, parts Parts, defaults memory.Settings, now func() time.Time) error {
	cfg, store := a.Config, a.Store
	b := cfg.Memory.Budget
	facts := 0
	if cfg.Memory.Facts.Enabled {
		facts = cfg.Memory.Facts.Budget
	}
	loc, err := cfg.Memory.Location()
	if err != nil {
		return fmt.Errorf("memory.timezone: %w", err)
	}
	if err := a.buildEmbeddings(store, parts.WaitForVectors); err != nil {
		return err
	}
	asmOpts := []assemble.Option{assemble.InLocation(loc)}
	if cfg.Memory.Feedback {
		asmOpts = append(asmOpts, assemble.WithFeedback())
	}
	if a.Vectors != nil {
		asmOpts = append(asmOpts, assemble.WithVectors(a.Vectors))
	}
	var asm chat.Assembler = assemble.New(store, a.Counter, assemble.Budget{Total: b.Total, System: b.System,
		Memories: b.Memories + facts, Summaries: b.Summaries, Snippets: b.Snippets, Recent: b.Recent},
		asmOpts...)
	if parts.WrapAssembler != nil {
		asm = parts.WrapAssembler(asm)
	}
	policy := summary.Policy{KeepRecentTurns: cfg.Memory.KeepRecentTurns, MaxActivePerLevel: cfg.Memory.MaxActivePerLevel, MaxActiveTotal: cfg.Memory.MaxActiveTotal}
	var (
		model  chat.Model
		sum    chat.Summarizer
		cmdSum commands.Summarizer
	)
	if a.Model != nil {
		model = a.Model
		a.Summarizer = summary.New(summaryCounter{store, a.Metrics}, a.Model, a.Counter, policy, a.Log)
		if pg := store.Postgres(); pg != nil {
			a.Summarizer.Exclusive(summary.DatabaseLock(pg)) // once at a time across the replicas
		}
		cmdSum = a.Summarizer
		if !parts.ForegroundSummaries {
			sum = a.Summarizer
		}
	}
	if parts.Journal && store.Postgres() != nil {
		// Replicas: the journal is in the database.
		a.Shared = chat.NewSharedOutbox(store.Postgres(), a.Log)
	} else if parts.Journal {
		// The journal of replies being delivered: a reply stored but
		// never sent before a crash is sent at the next start.
		outbox, err := chat.OpenOutbox(filepath.Join(cfg.Data.Dir, OutboxFile), a.Log)
		if err != nil {
			return err
		}
		a.Outbox = outbox
	}
	a.Access = access.New(cfg.Access.Open, cfg.Access.AllowedUsers,
		access.WithAdmins(cfg.Access.Admins...), access.WithStore(store), access.WithLog(a.Log),
		access.WithClock(now), access.WithRefresh(AccessRefresh))
	if err := a.Access.Load(ctx); err != nil {
		return errors.Join(fmt.Errorf("loading access decisions: %w", err), a.closeOutbox())
	}
	lim := limits.Options{Exempt: a.Access.IsAdmin, Discard: store, Now: now, TurnEstimate: cfg.Memory.Budget.Total + cfg.LLM.MaxTokens}
	rate := limits.NewRate(cfg.Limits.MessagesPerMinute, lim)
	if pg := store.Postgres(); pg != nil {
		rate.WithWindows(pg) // one limit per user across the replicas
	}
	quota := limits.NewQuota(cfg.Limits.TokensPerDay, store, lim)
	copts := chat.Options{
		SystemPrompt: cfg.LLM.SystemPrompt, Facts: cfg.Memory.Facts.Enabled, MaxMemories: cfg.Memory.MaxMemories,
		NotConfigured: NotConfigured, Log: a.Log, Observer: a.Metrics, Usage: quota, StillThinkingAfter: cfg.LLM.StillThinkingAfter,
		KeepRecent:    cfg.Memory.KeepRecentTurns,
		ContextWindow: cfg.LLM.ContextWindow, ReplyReserve: cfg.LLM.MaxTokens,
		Tools: chat.Tools{
			Box:  memtools.New(store, a.Counter, memtools.Options{Budget: b.Snippets, Observer: a.Metrics, Log: a.Log, IsAdmin: a.Access.IsAdmin}),
			Mode: cfg.LLM.Tools.Mode, MaxRounds: cfg.LLM.Tools.MaxRounds,
		},
	}
	if a.Outbox != nil {
		copts.Journal = a.Outbox
	}
	mediaStage := a.mediaStage(store, quota)
	copts.Vision = mediaStage
	if a.Shared != nil {
		copts.Journal = a.Shared
	}
	if parts.Chat != nil {
		parts.Chat(&copts)
	}
	var cstore chat.Store = store
	if parts.WrapStore != nil {
		cstore = parts.WrapStore(store)
	}
	a.Responder = chat.New(cstore, model, asm, sum, a.Counter, copts)
	var extras []string
	if !store.OffersJSON() {
		extras = append(extras, "Your memory is kept in this bot's shared PostgreSQL database: /summary asks only how often to summarize (a JSON file of your own is not available here).")
	}
	if a.Model == nil {
		extras = append(extras, NotConfigured)
	}
	extra := strings.Join(extras, "\n\n")
	var coverage commands.Embeddings // /summary_status: how much is embedded
	if a.Vectors != nil {
		coverage = a.Vectors
	}
	a.Commands = commands.New(store, cmdSum, a.Responder, commands.Options{
		BotName: parts.BotName, Defaults: defaults, Facts: cfg.Memory.Facts.Enabled, KeepRecent: cfg.Memory.KeepRecentTurns,
		Log: a.Log, Now: now, ExtraHelp: extra,
		Admin: &commands.AdminOptions{Access: a.Access, Stats: store,
			MessagesPerMinute: cfg.Limits.MessagesPerMinute, TokensPerDay: cfg.Limits.TokensPerDay},
		AfterPurge: a.forgetUndelivered,
		Embeddings: coverage,
	})
	// A question asked before a restart (/summary's steps, /purge's)
	// waits for its answer still.
	if err := a.Commands.LoadQuestions(ctx); err != nil {
		return err
	}
	// The stages of docs/design.md ("A turn, stage by stage") in order: access, dedupe, (rate limit),
	// commands, (token quota), then the responder: persist, assemble, LLM,
	// reply, persist, summarize.
	a.Handler = pipeline.Chain(a.Responder,
		a.Access.Middleware(),
		pipeline.Dedupe(store, a.Log),
		rate.Middleware(),
		a.Commands.Middleware(),
		quota.Middleware(),
		mediaStage.Middleware(),
	)
	a.Intake = &chat.Intake{Store: store, Allowed: a.Access.Allowed, Asking: a.Commands.Asking, Counter: a.Counter, Wait: parts.IntakeWait}
	return nil
}

// Defaults are the memory settings of owners who never chose.
func Defaults(cfg config.Config) memory.Settings {
	return memory.Settings{
		MemoryEnabled: cfg.Memory.EnabledByDefault,
		Storage:       memory.Storage(cfg.Memory.Storage),
		Threshold:     cfg.Memory.Threshold,
	}
}

// Close stops the background work — summaries and fact extraction get until
// shutdown.timeout to finish, then are cancelled — and flushes the write
// queue (shutdown.timeout again) and closes the store. Call it once the
// channels stopped (Run returned).
func (a *App) Close() error {
	bctx, cancel := context.WithTimeout(context.Background(), a.Config.Shutdown.Timeout)
	var berr error
	if a.Summarizer != nil {
		berr = a.Summarizer.Close(bctx)
	}
	berr = errors.Join(berr, a.Responder.Close(bctx), a.closeEmbeddings(bctx))
	cancel()
	if berr != nil {
		a.Log.Warn("stopped background work that was still running; it retries at the next trigger", "err", berr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.Config.Shutdown.Timeout)
	defer cancel()
	err := a.Store.Close(ctx)
	if err != nil {
		a.Log.Error("stopped, but the write queue could not be flushed", "err", err)
	} else {
		a.Log.Info("stopped; everything is written")
	}
	return errors.Join(err, a.closeOutbox())
}

func (a *App) closeOutbox() error {
	if a.Shared != nil {
		return a.Shared.Close()
	}
	if a.Outbox == nil {
		return nil
	}
	return a.Outbox.Close()
}

// enabledChannels names the chat channels this configuration runs.
func enabledChannels(cfg config.Config) []string {
	var out []string
	if cfg.TelegramEnabled() {
		out = append(out, "telegram")
	}
	if cfg.WhatsApp.Enabled {
		out = append(out, "whatsapp")
	}
	if len(out) == 0 {
		out = append(out, "console")
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
