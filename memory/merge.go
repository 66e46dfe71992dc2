package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Index merging: when, and how much at a time.
const (
	// mergeIdle is how long the store must have had no commit before the
	// merger starts: a chat that is being answered is left alone.
	mergeIdle = time.Second
	// mergeBusyEvery is the longest the merger waits for an idle moment
	// while there is merging to do; then it runs one step anyway.
	mergeBusyEvery = 30 * time.Second
	// mergePages is the work of one step, in index pages (a step also
	// finishes the doclist it is copying: tens of milliseconds for the
	// biggest).
	mergePages = 32
	// mergeUser is FTS5's usermerge: a step merges this many segments of
	// one level (2, the least, so each level ends with one segment).
	mergeUser = 2
	// mergeCrisis is FTS5's crisismerge: a commit that leaves this many
	// segments on one level merges them at once (FTS5's default is 16).
	// Each commit writes a segment, and FTS5's own incremental merging
	// (automerge) works only every 64 pages written, so a store answering
	// turns without an idle second piled up to 15 one-commit segments on
	// level 0 alone, every one sought for every term a search looks up
	// (BenchmarkSearchTurnArchive: 16 segments on average; 10 at 4, the
	// searches' CPU time 6% lower). Merging four one-commit segments costs
	// the commit a few pages. A level of big segments reaches 4 only after
	// three times its size is written without an idle moment for the
	// merger.
	mergeCrisis = 4
	// mergeRetry is the pause after a failed step.
	mergeRetry = time.Minute
	// mergePoll is how often a waiting merger looks at the clock again.
	mergePoll = 100 * time.Millisecond
)

// indexMerger owns keeping the search index (messages_fts) in few segments.
// FTS5 writes a segment at every commit and merges a level's only when four
// pile up, and every term a search looks up is sought in each segment: a
// conversation of 100,000 messages written a turn per commit has 8, merged
// 4, and its searches are 1.2× faster merged (BenchmarkSearchMergedIndex);
// one written in big transactions (bot import, the benchmark fixtures) has
// dozens (27 in the fixtures), and searches 1.7× slower. Once the store has
// had no commit for mergeIdle, this goroutine runs FTS5's incremental
// 'merge' on the writer's connection, a step of mergePages pages at a time,
// until there is nothing left to merge (a handful of segments, one per
// level). A write that arrives meanwhile waits for the step in progress
// only: the next one waits for the next idle moment. What is merged never
// changes what a search finds, only how fast. The price is idle-time work:
// merging two segments per level, a page of the index is rewritten about
// log2 (not log4) of the store's growth times over its life, the biggest
// segment at exponentially spaced idle moments (at 20,000 messages, 1,089
// pages in 163 ms of 32-page steps after 16 bursts, then after 32, 64...).
type indexMerger struct {
	db            *sql.DB // the writer pool (one connection); set before start
	log           *slog.Logger
	idle, busy    atomic.Int64 // mergeIdle, mergeBusyEvery (tests change them)
	pages         int
	lastCommit    atomic.Int64 // unix nanoseconds of the latest commit not the merger's
	merging       atomic.Bool  // a step of the merger is committing
	configured    bool         // usermerge is set (run's goroutine only)
	dirty         chan struct{}
	stop          chan struct{}
	done          chan struct{}
	once, started sync.Once

	steps atomic.Int64 // steps that merged something; for tests
}

func newIndexMerger(log *slog.Logger) *indexMerger {
	m := &indexMerger{
		log: log, pages: mergePages,
		dirty: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	m.idle.Store(int64(mergeIdle))
	m.busy.Store(int64(mergeBusyEvery))
	m.dirty <- struct{}{} // the index may have segments to merge from the last run
	return m
}

// start runs the goroutine on db (the writer pool).
func (m *indexMerger) start(db *sql.DB) {
	m.started.Do(func() {
		m.db = db
		m.lastCommit.Store(time.Now().UnixNano())
		go m.run()
	})
}

// committed is called by the writer connection's WAL hook after every
// commit.
func (m *indexMerger) committed() {
	if m.merging.Load() {
		return
	}
	m.lastCommit.Store(time.Now().UnixNano())
	select {
	case m.dirty <- struct{}{}:
	default:
	}
}

func (m *indexMerger) run() {
	defer close(m.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-m.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var run struct {
		steps int
		start time.Time
	}
	for {
		select {
		case <-m.stop:
			return
		case <-m.dirty:
		}
		if !m.waitIdle() {
			return
		}
		t0 := time.Now()
		more, err := m.step(ctx)
		if more && run.steps == 0 {
			run.start = t0
		}
		if more {
			run.steps++
		} else if run.steps > 0 {
			m.log.Debug("merged the search index", "steps", run.steps, "pages_per_step", m.pages, "over", time.Since(run.start).Round(time.Millisecond))
			run.steps = 0
		}
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			// Merging is only an optimization: tried again a while later
			// (a full disk is not reported at every commit).
			m.log.Warn("merging the search index failed; trying again later", "err", err, "in", mergeRetry)
			t := time.NewTimer(mergeRetry)
			select {
			case <-m.stop:
				t.Stop()
				return
			case <-t.C:
			}
			select {
			case m.dirty <- struct{}{}:
			default:
			}
		case more:
			select {
			case m.dirty <- struct{}{}:
			default:
			}
		}
	}
}

// waitIdle waits until the store has had no commit for m.idle, or m.busy
// has passed; false when stopped.
func (m *indexMerger) waitIdle() bool {
	start := time.Now()
	for {
		wait := time.Duration(m.idle.Load()) - time.Since(time.Unix(0, m.lastCommit.Load()))
		if wait <= 0 {
			return true
		}
		if left := time.Duration(m.busy.Load()) - time.Since(start); left < wait {
			if left <= 0 {
				return true
			}
			wait = left
		}
		t := time.NewTimer(min(wait, mergePoll))
		select {
		case <-m.stop:
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// step runs one increment of merging and reports whether it merged
// anything (then there may be more).
func (m *indexMerger) step(ctx context.Context) (bool, error) {
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	m.merging.Store(true)
	defer m.merging.Store(false)
	if !m.configured {
		if _, err := conn.ExecContext(ctx, `INSERT INTO messages_fts(messages_fts, rank) VALUES('usermerge', ?)`, mergeUser); err != nil {
			return false, err
		}
		m.configured = true
	}
	var before, after int64
	if err := conn.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&before); err != nil {
		return false, err
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO messages_fts(messages_fts, rank) VALUES('merge', ?)`, m.pages); err != nil {
		return false, err
	}
	if err := conn.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&after); err != nil {
		return false, err
	}
	// FTS5 counts a change per page written: fewer than two means there
	// was nothing to merge.
	if after-before < 2 {
		return false, nil
	}
	m.steps.Add(1)
	return true, nil
}

// close stops the goroutine (cancelling a step in progress).
func (m *indexMerger) close() {
	m.once.Do(func() { close(m.stop) })
	m.started.Do(func() { close(m.done) }) // never started
	<-m.done
}

// configureIndexMerging sets FTS5's crisismerge to mergeCrisis (kept in the
// index's config table: written once per database).
func configureIndexMerging(ctx context.Context, db *sql.DB) error {
	var v sql.NullInt64
	err := db.QueryRowContext(ctx, `SELECT v FROM messages_fts_config WHERE k = 'crisismerge'`).Scan(&v)
	if err == nil && v.Valid && v.Int64 == mergeCrisis {
		return nil
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("reading the search index's merge settings: %w", err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO messages_fts(messages_fts, rank) VALUES('crisismerge', ?)`, mergeCrisis); err != nil {
		return fmt.Errorf("setting the search index's merge settings: %w", err)
	}
	return nil
}

// MergeIndex merges the search index's segments now, until nothing is left
// to merge, as the background merger does when the store is idle (tools and
// benchmark fixtures that write a lot at once). It returns the steps that
// merged something.
func (s *SQLite) MergeIndex(ctx context.Context) (int, error) {
	m := &indexMerger{db: s.w, pages: 1000}
	n := 0
	for {
		more, err := m.step(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return n, ctx.Err()
			}
			return n, err
		}
		if !more {
			return n, nil
		}
		n++
	}
}
