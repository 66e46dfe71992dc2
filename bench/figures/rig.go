package figures

// The application as package app builds it, from config.Default(), with
// an instant fake model, senders that record what is sent, and timing
// wrappers.

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recallbot/recall/app"
	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/summary"
)

// ---------------------------------------------------------------------------
// Wiring

// model is what the wiring needs from an LLM: chat replies and summaries.
// *llm.Client and *fakeModel implement it.
type model interface {
	chat.Model
	summary.LLM
}

// rigConfig chooses how a rig differs from the default configuration.
type rigConfig struct {
	dir       string
	model     model
	threshold int  // memory.threshold (summary every n user turns); 0 = the default (10)
	bgSummary bool // the responder starts summaries in the background (as wired); else none
	allowed   []string
	// wrapAsm / wrapStore let a benchmark time the assembly and the
	// responder's store calls; nil leaves them alone.
	wrapAsm   func(chat.Assembler) chat.Assembler
	wrapStore func(*memory.Store) chat.Store
	log       *slog.Logger // nil discards
	// embeddings, when its Model is set, turns hybrid retrieval on, with
	// the background worker running as the bot runs it.
	embeddings config.Embeddings
	// databaseURL (database.url), when set, keeps the conversations in
	// that PostgreSQL database instead of dir.
	databaseURL string
	// configure, when set, changes the configuration last (a setting a
	// figure compares, such as memory.feedback).
	configure func(*config.Config)
}

// rig is the application as package app builds it, with config.Default()
// values: access, dedupe, rate limit, commands and token quota in front of
// the responder.
type rig struct {
	cfg        config.Config
	app        *app.App
	store      *memory.Store
	counter    llm.Counter
	summarizer *summary.Summarizer
	responder  *chat.Responder
	handler    pipeline.Handler
}

var discardLog = slog.New(slog.DiscardHandler)

func newRig(ctx context.Context, rc rigConfig) (*rig, error) {
	cfg := config.Default()
	cfg.Data.Dir = rc.dir
	cfg.HTTP.Listen = ""
	cfg.Access.AllowedUsers = rc.allowed
	cfg.Database.URL = rc.databaseURL
	log := rc.log
	if log == nil {
		log = discardLog
	}
	if rc.threshold > 0 {
		cfg.Memory.Threshold = rc.threshold
	}
	if rc.embeddings.Enabled() {
		cfg.Memory.Embeddings = rc.embeddings
	}
	if rc.configure != nil {
		rc.configure(&cfg)
	}
	a, err := app.New(ctx, cfg, app.Parts{
		Model: rc.model, Logger: log, ForegroundSummaries: !rc.bgSummary,
		WrapAssembler: rc.wrapAsm, WrapStore: rc.wrapStore,
	})
	if err != nil {
		return nil, err
	}
	if a.Embedding != nil {
		a.Embedding.Start() // as App.Run does; App.Close stops it
	}
	return &rig{cfg: cfg, app: a, store: a.Store, counter: a.Counter, summarizer: a.Summarizer, responder: a.Responder, handler: a.Handler}, nil
}

// close waits for background work and flushes and closes the store.
func (r *rig) close() error {
	r.summarizer.Wait()
	r.responder.Wait()
	return r.app.Close()
}

// ---------------------------------------------------------------------------
// Fake model and senders

// fakeModel answers at once: chat replies and summaries come from pools of
// pre-generated text, in turn. onChat, when set, sees every chat prompt.
type fakeModel struct {
	replies   []string
	summaries []string
	onChat    func(msgs []llm.Message)

	chats, sums atomic.Int64
}

func (m *fakeModel) Chat(_ context.Context, msgs []llm.Message) (llm.Reply, error) {
	n := m.chats.Add(1)
	if m.onChat != nil {
		m.onChat(msgs)
	}
	return llm.Reply{Text: m.replies[int(n-1)%len(m.replies)], Model: "fake", FinishReason: "stop"}, nil
}

func (m *fakeModel) Summarize(_ context.Context, _ []llm.Message) (llm.Reply, error) {
	n := m.sums.Add(1)
	return llm.Reply{Text: m.summaries[int(n-1)%len(m.summaries)], Model: "fake", FinishReason: "stop"}, nil
}

// countingSender is a no-op transport that remembers the last message sent
// and counts them.
type countingSender struct {
	mu   sync.Mutex
	n    int
	last pipeline.Outbound
}

func (s *countingSender) Send(_ context.Context, out pipeline.Outbound) (string, error) {
	s.mu.Lock()
	s.n++
	s.last = out
	s.mu.Unlock()
	return "", nil
}

func (s *countingSender) state() (int, pipeline.Outbound) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n, s.last
}

// warnings keeps the warnings and errors logged (the first few in full).
type warnings struct {
	mu    sync.Mutex
	n     int
	first []string
}

// logger returns a logger that records warnings and errors in w.
func (w *warnings) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// Write receives one log record (slog handlers write each in one call).
func (w *warnings) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	if len(w.first) < 5 {
		w.first = append(w.first, strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d warnings/errors logged; first: %s", w.n, strings.Join(w.first, " | "))
}

func (w *warnings) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// ---------------------------------------------------------------------------
// Timing wrappers

// latencies collects durations per conversation.
type latencies struct {
	mu  sync.Mutex
	per map[pipeline.Key][]time.Duration
}

func (l *latencies) add(k pipeline.Key, d time.Duration) {
	l.mu.Lock()
	if l.per == nil {
		l.per = map[pipeline.Key][]time.Duration{}
	}
	l.per[k] = append(l.per[k], d)
	l.mu.Unlock()
}

func (l *latencies) of(k pipeline.Key) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.per[k])
}

func (l *latencies) reset() {
	l.mu.Lock()
	l.per = nil
	l.mu.Unlock()
}

// timedAssembler times each prompt assembly and remembers the last prompt.
type timedAssembler struct {
	chat.Assembler
	lat  *latencies
	mu   sync.Mutex
	last assemble.Prompt
}

func (a *timedAssembler) Build(ctx context.Context, req assemble.Request) (assemble.Prompt, error) {
	start := time.Now()
	p, err := a.Assembler.Build(ctx, req)
	if a.lat != nil {
		a.lat.add(req.Key, time.Since(start))
	}
	a.mu.Lock()
	a.last = p
	a.mu.Unlock()
	return p, err
}

func (a *timedAssembler) lastPrompt() assemble.Prompt {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last
}

// timedStore times the responder's durable Append of the reply.
type timedStore struct {
	*memory.Store
	lat *latencies
}

func (s *timedStore) Append(ctx context.Context, msgs ...memory.Message) error {
	start := time.Now()
	err := s.Store.Append(ctx, msgs...)
	if len(msgs) > 0 {
		s.lat.add(msgs[0].Key, time.Since(start))
	}
	return err
}

// waitSearchIndexes returns once the store's conversations' indexes in
// memory are built (memory/search_full.go; SQLite only): a figure of
// turns in a big conversation measures them once the index is there.
func (r *rig) waitSearchIndexes(ctx context.Context) error {
	if db := r.store.SQLite(); db != nil {
		return db.WaitSearchIndexes(ctx)
	}
	return nil
}
