package memory

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/ncruces/go-sqlite3"
)

// WAL sizes, in pages (4 KiB), that start a checkpoint.
const (
	// walCheckpointPages starts a background checkpoint: SQLite's own
	// auto-checkpoint threshold.
	walCheckpointPages = 1000
	// walInlinePages makes the writer checkpoint inside its commit, as
	// SQLite's auto-checkpoint would, when the WAL has not restarted: the
	// WAL starts over only after a checkpoint that copied all of it, and a
	// writer that never pauses keeps the background from finishing one.
	// The background has copied most of it by then, so the commit pays for
	// the rest.
	walInlinePages = 4 * walCheckpointPages
)

// checkpointer owns moving the WAL into the database file. SQLite's
// auto-checkpoint runs inside the commit that crosses 1,000 WAL pages, so
// one turn in a few dozen paid for copying 4 MB and syncing the database
// file while it waited for its reply to be stored. Instead, the writer
// connection's WAL hook (which replaces the auto-checkpoint) nudges this
// goroutine, and a passive checkpoint on a connection of its own runs beside
// the writer: in WAL mode a checkpoint and a write transaction do not wait
// for each other.
type checkpointer struct {
	db *sql.DB // one connection, used only for checkpoints
	// pages starts a background checkpoint, inline one in the commit
	// (walCheckpointPages, walInlinePages; tests lower them before writing).
	pages, inline int
	log           *slog.Logger
	nudge         chan struct{}
	stop          chan struct{}
	done          chan struct{}
	once          sync.Once

	runs, inlined atomic.Int64 // background checkpoints finished, in-commit ones; for tests
	paused        atomic.Bool  // tests hold the background checkpoints back
}

func newCheckpointer(db *sql.DB, log *slog.Logger) *checkpointer {
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	c := &checkpointer{db: db, log: log, pages: walCheckpointPages, inline: walInlinePages, nudge: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

// hook is the writer connection's WAL hook: it runs after every commit with
// the number of pages in the WAL.
func (c *checkpointer) hook(conn *sqlite3.Conn, schema string, pages int) error {
	switch {
	case pages >= c.inline:
		c.inlined.Add(1)
		if _, _, err := conn.WALCheckpoint(schema, sqlite3.CHECKPOINT_PASSIVE); err != nil && !errors.Is(err, sqlite3.BUSY) {
			c.log.Warn("checkpointing the database", "err", err)
		}
	case pages >= c.pages:
		select {
		case c.nudge <- struct{}{}:
		default:
		}
	}
	return nil // the commit has happened; an error here would only confuse its caller
}

func (c *checkpointer) run() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-c.nudge:
		}
		if c.paused.Load() {
			continue
		}
		// PASSIVE neither waits for nor blocks the writer and the readers;
		// what it cannot copy now the next nudge copies.
		if _, err := c.db.ExecContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`); err != nil && !errors.Is(err, sqlite3.BUSY) {
			c.log.Warn("checkpointing the database", "err", err)
		}
		c.runs.Add(1)
	}
}

// close stops the goroutine and closes its connection.
func (c *checkpointer) close() error {
	c.once.Do(func() { close(c.stop) })
	<-c.done
	return c.db.Close()
}
