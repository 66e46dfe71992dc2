package summary

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// Store is what summarization reads and writes.
type Store interface {
	Active(ctx context.Context, key pipeline.Key) ([]memory.Message, error)
	TurnsSinceSummary(ctx context.Context, key pipeline.Key) (int, error)
	Summaries(ctx context.Context, key pipeline.Key, activeOnly bool) ([]memory.Summary, error)
	Archive(ctx context.Context, key pipeline.Key, ids []int64, s memory.Summary, turnsSeen int) (memory.Summary, error)
	Fold(ctx context.Context, key pipeline.Key, ids []int64, s memory.Summary) (memory.Summary, error)
	Flush(ctx context.Context) error
}

// LLM writes summaries.
type LLM interface {
	Summarize(ctx context.Context, msgs []llm.Message) (llm.Reply, error)
}

// Policy is the multi-level policy (memory.* in config.yaml).
type Policy struct {
	KeepRecentTurns   int // exchanges left active after a level-1 summary (default 4)
	MaxActivePerLevel int // more active summaries than this at a level fold into the next (default 5)
	MaxActiveTotal    int // at most this many active summaries overall (default 10)
}

func (p Policy) withDefaults() Policy {
	if p.KeepRecentTurns <= 0 {
		p.KeepRecentTurns = 4
	}
	if p.MaxActivePerLevel < 2 {
		p.MaxActivePerLevel = 5
	}
	if p.MaxActiveTotal < p.MaxActivePerLevel {
		p.MaxActiveTotal = max(10, p.MaxActivePerLevel)
	}
	return p
}

// Result says what one run did.
type Result struct {
	Archived int              // messages archived into a new chunk
	Created  []memory.Summary // summaries created, level 1 first
}

// ErrNothingToSummarize: every active message is inside the keep-recent window.
var ErrNothingToSummarize = errors.New("nothing to summarize yet")

// ErrRunning: a summary of this conversation is being written already.
var ErrRunning = errors.New("a summary is already being written")

// runTimeout bounds one background run.
const runTimeout = 10 * time.Minute

// Summarizer runs summaries. It owns its background runs: their contexts
// derive from a base context that Close cancels.
type Summarizer struct {
	store  Store
	llm    LLM
	policy Policy
	log    *slog.Logger
	count  llm.Counter
	base   context.Context // parent of every background run; Close cancels it
	stop   context.CancelFunc

	lock Locker // nil: this process is the only one

	mu      sync.Mutex
	running map[pipeline.Key]bool
	failing map[pipeline.Key]bool // the last background run failed: the conversation was told
	wg      sync.WaitGroup
	closed  bool
}

// New returns a Summarizer. store, model and counter are required.
func New(store Store, model LLM, counter llm.Counter, p Policy, log *slog.Logger) *Summarizer {
	if store == nil || model == nil || counter == nil {
		panic("summary.New: the store, the model and the token counter are required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base, stop := context.WithCancel(context.Background())
	return &Summarizer{store: store, llm: model, policy: p.withDefaults(), log: log, count: counter, base: base, stop: stop,
		running: map[pipeline.Key]bool{}, failing: map[pipeline.Key]bool{}}
}

// Locker keeps other processes (replicas on one database) from
// summarizing a conversation while this one does. TryLock reports false at
// once when another holds key's lock; unlock releases it. A lock whose
// holder dies is released (a PostgreSQL session advisory lock).
type Locker interface {
	TryLock(ctx context.Context, key pipeline.Key) (unlock func(), ok bool, err error)
}

// DatabaseLock is the Locker of replicas on one PostgreSQL database: an
// advisory lock per conversation.
func DatabaseLock(pg *memory.Postgres) Locker { return pgLock{pg} }

type pgLock struct{ pg *memory.Postgres }

func (l pgLock) TryLock(ctx context.Context, key pipeline.Key) (func(), bool, error) {
	return l.pg.TryLock(ctx, "recall-summary:"+key.String())
}

// Exclusive makes every run take l's lock of its conversation first, so
// replicas summarize a conversation once at a time; a run that finds it
// taken does nothing (the trigger's) or returns ErrRunning (Run). It
// returns s.
func (s *Summarizer) Exclusive(l Locker) *Summarizer {
	s.lock = l
	return s
}

// Due reports whether the trigger holds: the user turns since the last
// summary reached the threshold.
func Due(st memory.Status, threshold int) bool {
	return threshold > 0 && st.TurnsSinceSummary >= threshold
}

// MaybeStart starts a background run for key when the trigger holds and none
// is running for it. It returns whether a run was started.
//
// onFail (may be nil) hears that the run failed (nothing was archived; the
// next trigger retries), once per failure streak of the conversation: not
// again until a run of it succeeds. Its ctx is the run's own (it ends when
// the Summarizer closes). A run cut short by Close is not a failure.
func (s *Summarizer) MaybeStart(ctx context.Context, key pipeline.Key, threshold int, onFail func(ctx context.Context, err error)) bool {
	turns, err := s.store.TurnsSinceSummary(ctx, key)
	if err != nil || !Due(memory.Status{TurnsSinceSummary: turns}, threshold) {
		return false
	}
	return s.start(key, onFail, func(ctx context.Context) error {
		_, err := s.runKeeping(ctx, key, s.policy.KeepRecentTurns, threshold)
		return err
	})
}

func (s *Summarizer) start(key pipeline.Key, onFail func(context.Context, error), fn func(context.Context) error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.running[key] {
		return false
	}
	s.running[key] = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.running, key)
			s.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(s.base, runTimeout)
		defer cancel()
		err := fn(ctx)
		switch {
		case err == nil:
			s.succeeded(key)
		case errors.Is(err, ErrNothingToSummarize), errors.Is(err, ErrRunning):
		case s.base.Err() != nil:
			s.log.Info("summary stopped: the bot is stopping; nothing was archived, the next trigger retries", "key", key)
		default:
			s.log.Warn("summary failed; nothing was archived, the next trigger retries", "key", key, "err", err)
			if s.firstFailure(key) && onFail != nil {
				onFail(ctx, err)
			}
		}
	}()
	return true
}

// firstFailure records a failed run of key and reports whether it starts a
// failure streak.
func (s *Summarizer) firstFailure(key pipeline.Key) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failing[key] {
		return false
	}
	s.failing[key] = true
	return true
}

// succeeded ends key's failure streak.
func (s *Summarizer) succeeded(key pipeline.Key) {
	s.mu.Lock()
	delete(s.failing, key)
	s.mu.Unlock()
}

// Running reports whether a run is in progress for key.
func (s *Summarizer) Running(key pipeline.Key) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running[key]
}

// Wait waits for background runs to finish and refuses new ones.
func (s *Summarizer) Wait() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.wg.Wait()
}

// Close refuses new runs and lets the background runs in progress finish
// until ctx ends; then it cancels them (nothing is archived by a cancelled
// run) and returns once they have returned. The error says runs were cut.
func (s *Summarizer) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.stop()
		return nil
	case <-ctx.Done():
	}
	s.stop()
	<-done
	return fmt.Errorf("stopping background summaries: %w", context.Cause(ctx))
}

// Run summarizes now, whatever the threshold (/summary_now): archive the
// active messages before the last exchange as a level-1 summary, then fold
// levels that exceed their caps. Only the last exchange stays active — the
// user asked for a summary of what is there, and the keep-recent window of
// the trigger (Policy.KeepRecentTurns) would leave nothing to summarize in
// a short conversation. A failure before anything is archived leaves the
// conversation as it was.
func (s *Summarizer) Run(ctx context.Context, key pipeline.Key) (Result, error) {
	s.mu.Lock()
	if s.running[key] {
		s.mu.Unlock()
		return Result{}, ErrRunning
	}
	s.running[key] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.running, key)
		s.mu.Unlock()
	}()
	res, err := s.runKeeping(ctx, key, 1, 0)
	if err == nil {
		s.succeeded(key)
	}
	return res, err
}

// runKeeping summarizes the active messages but the last keep exchanges;
// when due > 0 (the trigger's run), only while the trigger still holds once
// the lock is taken (another replica may have just summarized).
func (s *Summarizer) runKeeping(ctx context.Context, key pipeline.Key, keep, due int) (Result, error) {
	var res Result
	if s.lock != nil {
		unlock, ok, err := s.lock.TryLock(ctx, key)
		if err != nil {
			return res, fmt.Errorf("taking the summary lock of %s: %w", key, err)
		}
		if !ok {
			return res, ErrRunning
		}
		defer unlock()
	}
	// Queued writes first, so every active message has an id.
	if err := s.store.Flush(ctx); err != nil {
		return res, err
	}
	// The counter alone: Status would count the whole conversation.
	turns, err := s.store.TurnsSinceSummary(ctx, key)
	if err != nil {
		return res, err
	}
	if due > 0 && !Due(memory.Status{TurnsSinceSummary: turns}, due) {
		return res, ErrNothingToSummarize
	}
	active, err := s.store.Active(ctx, key)
	if err != nil {
		return res, err
	}
	cut := keepCut(active, keep)
	if cut == 0 {
		return res, ErrNothingToSummarize
	}
	chunk := active[:cut]
	text, err := s.summarize(ctx, messagesPrompt(chunk))
	if err != nil {
		return res, fmt.Errorf("summarizing %d messages of %s: %w", len(chunk), key, err)
	}
	ids := make([]int64, len(chunk))
	for i, m := range chunk {
		ids[i] = m.ID
	}
	sum, err := s.store.Archive(ctx, key, ids, memory.Summary{Text: text, Tokens: s.count.Count(text)}, turns)
	if err != nil {
		return res, fmt.Errorf("archiving %d messages of %s: %w", len(chunk), key, err)
	}
	res.Archived = len(chunk)
	res.Created = append(res.Created, sum)
	s.log.Info("summary created", "key", key, "level", 1, "messages", len(chunk))
	folded, err := s.fold(ctx, key)
	res.Created = append(res.Created, folded...)
	if err != nil {
		// The level-1 summary stands; folding retries at the next run.
		return res, fmt.Errorf("folding summaries of %s: %w", key, err)
	}
	return res, nil
}

// keepCut returns how many of the oldest active messages to archive so that
// the last keep exchanges (counted by user messages) stay active.
func keepCut(active []memory.Message, keep int) int {
	users := 0
	for i := len(active) - 1; i >= 0; i-- {
		if active[i].Role == memory.RoleUser {
			users++
			if users == keep {
				return i
			}
		}
	}
	return 0
}

// fold enforces the caps: while a level has more than MaxActivePerLevel
// active summaries, its oldest MaxActivePerLevel fold into one summary of the
// next level; while more than MaxActiveTotal are active, the oldest of the
// lowest crowded level fold.
func (s *Summarizer) fold(ctx context.Context, key pipeline.Key) ([]memory.Summary, error) {
	var created []memory.Summary
	for round := 0; round < 64; round++ {
		sums, err := s.store.Summaries(ctx, key, true)
		if err != nil {
			return created, err
		}
		byLevel := map[int][]memory.Summary{}
		maxLevel := 0
		for _, sm := range sums {
			byLevel[sm.Level] = append(byLevel[sm.Level], sm)
			maxLevel = max(maxLevel, sm.Level)
		}
		var pick []memory.Summary
		for level := 1; level <= maxLevel && pick == nil; level++ {
			if l := byLevel[level]; len(l) > s.policy.MaxActivePerLevel {
				pick = l[:s.policy.MaxActivePerLevel]
			}
		}
		if pick == nil && len(sums) > s.policy.MaxActiveTotal {
			for level := 1; level <= maxLevel && pick == nil; level++ {
				if l := byLevel[level]; len(l) >= 2 {
					pick = l[:min(len(l), len(sums)-s.policy.MaxActiveTotal+1)]
				}
			}
		}
		if pick == nil {
			return created, nil
		}
		text, err := s.summarize(ctx, summariesPrompt(pick))
		if err != nil {
			return created, err
		}
		ids := make([]int64, len(pick))
		for i, p := range pick {
			ids[i] = p.ID
		}
		sum, err := s.store.Fold(ctx, key, ids, memory.Summary{Level: pick[0].Level + 1, Text: text, Tokens: s.count.Count(text)})
		if err != nil {
			return created, err
		}
		s.log.Info("summaries folded", "key", key, "level", sum.Level, "sources", len(ids))
		created = append(created, sum)
	}
	return created, nil
}

func (s *Summarizer) summarize(ctx context.Context, msgs []llm.Message) (string, error) {
	reply, err := s.llm.Summarize(ctx, msgs)
	if err != nil {
		return "", err
	}
	text := strings.TrimSpace(reply.Text)
	if text == "" {
		return "", errors.New("the model returned an empty summary")
	}
	return text, nil
}

// Instructions is the summarizer's system prompt.
const Instructions = `You condense a chat between a user and an assistant into a summary that will replace the original messages in the assistant's memory.
Keep every name, date, number, place, decision, preference, promise and open question. Note who said what when it matters.
Write in the same language as the conversation. Be concise and factual: plain sentences or short bullet points, no preamble, no commentary.`

// FoldInstructions is the prompt for folding summaries into a higher level.
const FoldInstructions = `You merge several consecutive summaries of one long chat into a single, shorter summary, oldest events first.
Keep every name, date, number, place, decision and preference that is still relevant; drop repetition.
Write in the same language as the summaries. Plain sentences or short bullet points, no preamble.`

func messagesPrompt(msgs []memory.Message) []llm.Message {
	var b strings.Builder
	for _, m := range msgs {
		who := string(m.Role)
		if m.Role == memory.RoleUser && m.SenderName != "" {
			who = m.SenderName
		}
		fmt.Fprintf(&b, "[%s] %s: %s\n", m.Time.Format("2006-01-02 15:04"), who, m.Text)
	}
	return []llm.Message{
		{Role: "system", Content: Instructions},
		{Role: "user", Content: "Summarize this part of the conversation:\n\n" + b.String()},
	}
}

func summariesPrompt(sums []memory.Summary) []llm.Message {
	var b strings.Builder
	for i, s := range sums {
		fmt.Fprintf(&b, "Summary %d (%s – %s):\n%s\n\n", i+1, s.From.Format("2006-01-02"), s.To.Format("2006-01-02"), s.Text)
	}
	return []llm.Message{
		{Role: "system", Content: FoldInstructions},
		{Role: "user", Content: "Merge these summaries:\n\n" + b.String()},
	}
}
