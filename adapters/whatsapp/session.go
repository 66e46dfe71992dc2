package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"         // the "pgx" database/sql driver (database.url)
	_ "github.com/ncruces/go-sqlite3/driver" // the "sqlite3" database/sql driver, no cgo
	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/store/sqlstore"
	waLog "go.mau.fi/whatsmeow/util/log"
)

// SessionFile is the name of the session database inside data.dir.
const SessionFile = "whatsapp.db"

// SessionPath is where the WhatsApp session (the linked device's keys) is
// kept: <dataDir>/whatsapp.db.
func SessionPath(dataDir string) string { return filepath.Join(dataDir, SessionFile) }

// sessionDSN is the database/sql address of the session store. whatsmeow
// needs foreign keys (the "_foreign_keys=on" of its docs is ignored by our
// driver); any _pragma drops the driver's default busy timeout, so it is set;
// its writes come from several goroutines, so transactions take the write
// lock up front (_txlock=immediate) instead of failing with "database is
// locked" when two deferred transactions both try to write.
func sessionDSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(wal)")
	q.Set("_txlock", "immediate")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// openSession opens the session store of opts — in PostgreSQL when
// DatabaseURL is set, else the file in DataDir (created 0600 in a 0700
// directory when missing) — and brings its schema up to date.
func openSession(ctx context.Context, opts Options, log *slog.Logger) (*sqlstore.Container, error) {
	if opts.DatabaseURL != "" {
		return openPGSession(ctx, opts.DatabaseURL, log)
	}
	dataDir := opts.DataDir
	path := SessionPath(dataDir)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("whatsapp: creating the data directory: %w", err)
	}
	// Create the file ourselves so the keys are 0600 from the first byte.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("whatsapp: opening the session store %s: %w", path, err)
	}
	f.Close()
	c, err := sqlstore.New(ctx, "sqlite3", sessionDSN(path), waLogger(log, "Database"))
	if err != nil {
		return nil, fmt.Errorf("whatsapp: opening the session store %s: %w", path, err)
	}
	for _, p := range []string{path + "-wal", path + "-shm"} {
		_ = os.Chmod(p, 0o600)
	}
	return c, nil
}

// pgSessionLock serializes whatsmeow's schema upgrade between replicas
// starting together (its upgrade takes no lock of its own): a session-level
// advisory lock, per schema, held while the upgrade runs.
const (
	pgSessionLock   = `SELECT pg_advisory_lock(hashtextextended('recall-whatsmeow:' || current_schema(), 0))`
	pgSessionUnlock = `SELECT pg_advisory_unlock(hashtextextended('recall-whatsmeow:' || current_schema(), 0))`
)

// openPGSession opens the session store in the PostgreSQL database at url
// through pgx's database/sql driver (stdlib; whatsmeow's "postgres" dialect).
func openPGSession(ctx context.Context, url string, log *slog.Logger) (*sqlstore.Container, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, errors.New("whatsapp: reading database.url: not a valid postgres:// URL")
	}
	db := stdlib.OpenDB(*cfg)
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("whatsapp: connecting to the session store in PostgreSQL at %s: %w", cfg.Host, err), db.Close())
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, pgSessionLock); err != nil {
		return nil, errors.Join(fmt.Errorf("whatsapp: waiting for the session store's upgrade lock: %w", err), db.Close())
	}
	defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), pgSessionUnlock) }() // closing the connection ends it anyway
	c := sqlstore.NewWithDB(db, "pgx", waLogger(log, "Database"))
	if err := c.Upgrade(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("whatsapp: opening the session store in PostgreSQL: %w", err), db.Close())
	}
	return c, nil
}

// newWhatsmeow builds the library client on the first device of the store
// (a fresh, unsaved one when nothing is linked), configured for durable
// delivery: a message is acknowledged to WhatsApp only after every handler
// returned true (SynchronousAck), and its decrypted text is kept until then
// (EnableDecryptedEventBuffer), so a message whose handler failed comes
// again after a reconnect and can still be decrypted. History sync blobs are
// not downloaded (ManualHistorySyncDownload): the bot answers new messages
// only.
func newWhatsmeow(ctx context.Context, c *sqlstore.Container, log *slog.Logger) (*whatsmeow.Client, error) {
	device, err := c.GetFirstDevice(ctx)
	if err != nil {
		return nil, fmt.Errorf("whatsapp: reading the session: %w", err)
	}
	cli := whatsmeow.NewClient(device, waLogger(log, "Client"))
	cli.SynchronousAck = true
	cli.EnableDecryptedEventBuffer = true
	cli.ManualHistorySyncDownload = true
	cli.EnableAutoReconnect = true
	cli.InitialAutoReconnect = true
	return cli, nil
}

// traceLevel is where whatsmeow's debug output goes: below slog's Debug, so
// log.level=debug shows Recall's own debug logs without the protocol dumps
// (which can carry message content).
const traceLevel = slog.LevelDebug - 4

// slogWA adapts slog to whatsmeow's logger interface.
type slogWA struct{ l *slog.Logger }

// waLogger returns a whatsmeow logger writing to log under module.
func waLogger(log *slog.Logger, module string) waLog.Logger {
	if log == nil {
		return waLog.Noop
	}
	return slogWA{l: log.With("module", "whatsmeow/"+module)}
}

func (s slogWA) Errorf(msg string, args ...any) { s.logf(slog.LevelError, msg, args...) }
func (s slogWA) Warnf(msg string, args ...any)  { s.logf(slog.LevelWarn, msg, args...) }
func (s slogWA) Infof(msg string, args ...any)  { s.logf(slog.LevelInfo, msg, args...) }
func (s slogWA) Debugf(msg string, args ...any) { s.logf(traceLevel, msg, args...) }

func (s slogWA) Sub(module string) waLog.Logger {
	return slogWA{l: s.l.With("sub", module)}
}

func (s slogWA) logf(level slog.Level, msg string, args ...any) {
	ctx := context.Background()
	if !s.l.Enabled(ctx, level) {
		return
	}
	s.l.Log(ctx, level, fmt.Sprintf(msg, args...))
}
