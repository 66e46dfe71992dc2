package memory

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver" // also registers "sqlite3"

	"github.com/recallbot/recall/pipeline"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

var registerFTS5 sync.Once

// SQLite is the default backend: one database file in WAL mode with one
// writer connection (immediate transactions) and a pool of readers.
type SQLite struct {
	path string
	w    *sql.DB       // exactly one connection: every write goes through it
	r    *sql.DB       // readers
	ckpt *checkpointer // moves the WAL into the database file beside the writer
	mrg  *indexMerger  // merges the search index's segments when the store is idle
	rc   *stmtCache    // the readers' prepared statements
	wc   *stmtCache    // the writer's, prepared at open
	rd   cachedDB      // the readers, through rc
	tune *searchTuning // nil: defaultSearchTuning (tests set it)
	// searchConns holds the reader connections' searchConn
	// (*sqlite3.Conn → *searchConn; closeSearchStmts drops one).
	searchConns sync.Map
	// postings keeps big conversations' doclists between searches (nil:
	// none; see search_cache.go).
	postings *postingsCache
	// full holds big conversations' whole doclists in memory (nil: none;
	// see search_full.go).
	full *fullIndexes
	// searchTrace, when set (experiments), sees every finished search.
	searchTrace func(*searchRun)
	// aroundTrace, when set, hears how many statements of each kind each
	// AroundReach ran (aroundRead.reads; tests).
	aroundTrace func(reads [3]int)
	// applied names the migrations this open applied (bot migrate prints them).
	applied []string
}

var _ Backend = (*SQLite)(nil)

// Page caches, in KiB, of the writer and of each reader. Every connection
// runs its own copy of SQLite (compiled to WebAssembly, then to Go) in a
// linear memory that grows with its page cache and never shrinks, so a
// cache costs its size in resident memory for the life of the connection.
// A reader's cache is dropped whenever another connection committed since
// its last read, which on a bot that writes every turn is nearly every
// read: it keeps little and costs 2 MiB at SQLite's default. The writer's
// stays valid (no one else writes) and holds the pages every append walks:
// the paths to the newest rows of each index, a few dozen pages. At 512
// KiB instead of 1 MiB the bot ends the bench's 1,000-user load 1.0 MiB
// smaller (43.9 / 43.8 against 44.9 / 44.9 MiB, alternating runs of
// --only=memory), the turn as fast and ingest within the noise (15.3–16.0
// against 16.1–16.2 thousand messages a second).
// The operating system's page cache holds the file either way.
const (
	writerCacheKiB = 512
	readerCacheKiB = 256
)

// readerConns is the size of the readers' pool: a turn reads on two at
// once (the archive search beside the rest of the prompt), and each one
// keeps its SQLite memory (~0.7 MiB resident: the page cache, the schema,
// the prepared statements) for the life of the process. Four cost 1.8 MiB
// more after the bench's 1,000-user load than two (issue #21) and bought
// nothing measurable on two cores.
const readerConns = 2

// sqliteSynchronous is the synchronous level of every connection. FULL: in
// WAL mode it syncs the log at each commit, so a commit that returned — a
// reply stored before it is sent — survives a power cut; NORMAL syncs only
// at checkpoints and loses the commits since the last one
// (memory/powercut_test.go shows both; docs/figures.md "Power cuts" the cost).
const sqliteSynchronous = "full"

// sqliteDSN builds the connection string, with the synchronous level syncLevel
// ("" is sqliteSynchronous; tests pass another). Any _pragma drops the
// driver's default busy timeout, so it is always set explicitly.
func sqliteDSN(path string, readOnly bool, vfs, syncLevel string) string {
	if syncLevel == "" {
		syncLevel = sqliteSynchronous
	}
	q := url.Values{}
	if vfs != "" {
		q.Set("vfs", vfs)
	}
	q.Add("_pragma", "busy_timeout(10000)")
	if readOnly {
		q.Add("_pragma", "cache_size(-"+strconv.Itoa(readerCacheKiB)+")")
	} else {
		q.Add("_pragma", "cache_size(-"+strconv.Itoa(writerCacheKiB)+")")
	}
	q.Add("_pragma", "journal_mode(wal)")
	q.Add("_pragma", "synchronous("+syncLevel+")")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "secure_delete(1)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Set("_txlock", "immediate")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// OpenSQLite opens (creating if needed, 0600 in a 0700 directory) the database
// at path and applies pending migrations.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	return openSQLite(ctx, path, "", "", nil, 0)
}

// openSQLite is OpenSQLite through the named SQLite VFS ("" is the
// operating system's) at the synchronous level syncLevel ("" is
// sqliteSynchronous), logging background trouble to log (nil: nowhere).
func openSQLite(ctx context.Context, path, vfs, syncLevel string, log *slog.Logger, searchMemory int) (*SQLite, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	registerFTS5.Do(func() {
		sqlite3.AutoExtension(registerSearchExtensions) // FTS5, and the functions of message search
	})
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	// Create the file ourselves so it is 0600 from the first byte.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening database %s: %w", path, err)
	}
	f.Close()
	cdb, err := sql.Open("sqlite3", sqliteDSN(path, false, vfs, syncLevel))
	if err != nil {
		return nil, fmt.Errorf("opening database %s: %w", path, err)
	}
	ckpt := newCheckpointer(cdb, log)
	mrg := newIndexMerger(log)
	// The WAL hook replaces SQLite's auto-checkpoint on the writer, and
	// tells the merger the store is busy.
	w, err := driver.Open(sqliteDSN(path, false, vfs, syncLevel), func(c *sqlite3.Conn) error {
		c.WALHook(func(c *sqlite3.Conn, schema string, pages int) error {
			mrg.committed()
			return ckpt.hook(c, schema, pages)
		})
		return nil
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("opening database %s: %w", path, err), ckpt.close())
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &SQLite{path: path, w: w, ckpt: ckpt, mrg: mrg, postings: newPostingsCache()}
	if searchMemory >= 0 {
		s.full = newFullIndexes()
		if searchMemory > 0 {
			s.full.budget = searchMemory
		}
	}
	if err := s.migrate(ctx); err != nil {
		return nil, errors.Join(err, w.Close(), ckpt.close())
	}
	if err := configureIndexMerging(ctx, w); err != nil {
		return nil, errors.Join(err, w.Close(), ckpt.close())
	}
	for _, p := range []string{path + "-wal", path + "-shm"} {
		_ = os.Chmod(p, 0o600)
	}
	// Readers keep the search's prepared statements (closeSearchStmts
	// finalizes them before the driver closes the connection).
	r, err := driver.Open(sqliteDSN(path, true, vfs, syncLevel), nil, s.closeSearchStmts)
	if err != nil {
		return nil, errors.Join(err, w.Close(), ckpt.close())
	}
	r.SetMaxOpenConns(readerConns)
	r.SetMaxIdleConns(readerConns)
	s.r, s.rc = r, newStmtCache(r)
	s.rd = cachedDB{s.rc}
	s.wc = newStmtCache(w)
	// The writer's statements of every turn, prepared once (its one
	// connection cannot prepare while a transaction holds it): wd runs them.
	if err := s.wc.prepare(ctx, sqlConvID, sqlEnsureConv, sqlInsertBatch, sqlBumpTurns, sqlInsertMessage, sqlAddUsage, sqlMarkHandled); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	mrg.start(w)
	if s.full != nil {
		s.full.holdUntil = time.Now().Add(fullHold)
		s.full.start(s.buildConvIndex, s.searchGens, s.postings)
		if err := s.indexBigConversations(ctx); err != nil {
			return nil, errors.Join(err, s.Close())
		}
	}
	return s, nil
}

// wd runs queries on the writer through its statements (those prepared at
// open are never prepared again).
func (s *SQLite) wd() cachedDB { return cachedDB{s.wc} }

// Path is the database file.
func (s *SQLite) Path() string { return s.path }

// DB exposes the writer connection for maintenance (backup, checkpoints).
func (s *SQLite) DB() *sql.DB { return s.w }

// Close stops the background checkpoints and merges and closes the pools.
func (s *SQLite) Close() error {
	s.full.close()
	s.mrg.close()
	return errors.Join(s.rc.close(), s.wc.close(), s.ckpt.close(), s.r.Close(), s.w.Close())
}

// Checkpoint copies the WAL into the database file and truncates it.
func (s *SQLite) Checkpoint(ctx context.Context) error {
	_, err := s.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// SchemaVersion is the highest migration applied.
func (s *SQLite) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.rd.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&v)
	return v, err
}

func (s *SQLite) migrate(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("creating schema_version: %w", err)
	}
	var current int
	if err := s.w.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&current); err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		base := filepath.Base(name)
		n, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migration %s: bad number", base)
		}
		if n <= current {
			continue
		}
		body, err := migrationFiles.ReadFile(name)
		if err != nil {
			return err
		}
		err = s.tx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_version(version, applied_at) VALUES (?, ?)`, n, time.Now().UnixMilli())
			return err
		})
		if err != nil {
			return fmt.Errorf("applying migration %s: %w", base, err)
		}
		s.applied = append(s.applied, base)
	}
	return nil
}

// Applied names the migrations opening the database applied, in order
// (none when it was up to date).
func (s *SQLite) Applied() []string { return s.applied }

// tx runs fn in one immediate transaction on the writer connection.
func (s *SQLite) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// queryer is what both *sql.DB and *sql.Tx offer.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

const (
	sqlConvID     = `SELECT id FROM conversations WHERE key = ?`
	sqlEnsureConv = `INSERT INTO conversations(key, owner, created_at) VALUES (?, ?, ?)
		ON CONFLICT(key) DO UPDATE SET key = excluded.key RETURNING id`
	sqlInsertMessage = `INSERT INTO messages(conv, role, sender_id, sender_name, platform_id, reply_to, text, created_at, tokens, is_active, chunk_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	sqlBumpTurns  = `UPDATE conversations SET turns_since_summary = turns_since_summary + ? WHERE id = ?`
	msgColumns    = `m.id, m.role, m.sender_id, m.sender_name, m.platform_id, m.reply_to, m.text, m.created_at, m.tokens, m.is_active, m.chunk_id`
	sqlRecent     = `SELECT ` + msgColumns + ` FROM messages m WHERE m.conv = ? AND m.is_active = 1 ORDER BY m.id DESC` // no LIMIT ?: "No bound LIMIT" below
	sqlActive     = `SELECT ` + msgColumns + ` FROM messages m WHERE m.conv = ? AND m.is_active = 1 ORDER BY m.id`
	sqlLookup     = `SELECT EXISTS(SELECT 1 FROM messages WHERE conv = ? AND platform_id = ? AND platform_id <> ''), EXISTS(SELECT 1 FROM messages WHERE conv = ? AND reply_to = ? AND reply_to <> '' AND role = 'assistant')` // the <> '' terms let SQLite use the partial indexes
	sqlArchive    = `UPDATE messages SET is_active = 0, chunk_id = ? WHERE conv = ? AND is_active = 1 AND id IN (SELECT value FROM json_each(?))`
	sqlNextChunk  = `UPDATE conversations SET next_chunk = next_chunk + 1 WHERE id = ? RETURNING next_chunk - 1`
	sqlRangeOfIDs = `SELECT min(created_at), max(created_at) FROM messages WHERE +conv = ? AND id IN (SELECT value FROM json_each(?))`
	sqlResetTurns = `UPDATE conversations SET turns_since_summary = max(0, turns_since_summary - ?), last_summary_at = ? WHERE id = ?`
	sumColumns    = `id, level, text, is_active, sources, from_at, to_at, tokens, created_at`
	sqlInsertSum  = `INSERT INTO summaries(id, conv, level, text, is_active, sources, from_at, to_at, tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
	sqlFoldSums   = `UPDATE summaries SET is_active = 0 WHERE conv = ? AND is_active = 1 AND level = ? AND id IN (SELECT value FROM json_each(?))`
	sqlSumRange   = `SELECT min(from_at), max(to_at) FROM summaries WHERE +conv = ? AND id IN (SELECT value FROM json_each(?))`
)

// No bound LIMIT: the statements a turn runs take no LIMIT ?, the caller
// stops reading instead. SQLite's planner looks at the value bound to a
// LIMIT, so binding one expires the statement and the next step prepares it
// again: a whole parse and plan every time it runs
// (TestTurnStatementsArePreparedOnce).

// convID finds a conversation's row id; 0 when it does not exist.
func convID(ctx context.Context, q queryer, key pipeline.Key) (int64, error) {
	var id int64
	err := q.QueryRowContext(ctx, sqlConvID, key.String()).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

func ensureConv(ctx context.Context, tx queryer, key pipeline.Key, cache map[pipeline.Key]int64) (int64, error) {
	if id, ok := cache[key]; ok {
		return id, nil
	}
	if err := key.Validate(); err != nil {
		return 0, err
	}
	// Read first: the conversation almost always exists, and an upsert
	// would rewrite its row in every batch.
	id, err := convID(ctx, tx, key)
	if err != nil {
		return 0, err
	}
	if id == 0 {
		if err := tx.QueryRowContext(ctx, sqlEnsureConv, key.String(), key.Owner(), time.Now().UnixMilli()).Scan(&id); err != nil {
			return 0, fmt.Errorf("creating conversation %s: %w", key, err)
		}
	}
	cache[key] = id
	return id, nil
}

// Append implements Backend.
func (s *SQLite) Append(ctx context.Context, msgs []Message) (int, error) {
	var added int
	err := s.tx(ctx, func(tx *sql.Tx) error {
		added = 0
		n, err := appendTx(ctx, cachedTx{tx, s.wc}, msgs, map[pipeline.Key]int64{})
		added = n
		return err
	})
	return added, err
}

// sqlInsertBatch inserts a whole batch in one statement: FTS5 flushes its
// buffered index terms at every statement boundary, so one statement per
// batch instead of one per row is several times faster. RETURNING lists the
// rows actually inserted (a redelivered message is skipped).
const sqlInsertBatch = `INSERT INTO messages(conv, role, sender_id, sender_name, platform_id, reply_to, text, created_at, tokens, is_active, chunk_id)
	SELECT value ->> '$[0]', value ->> '$[1]', value ->> '$[2]', value ->> '$[3]', value ->> '$[4]', value ->> '$[5]',
	       value ->> '$[6]', value ->> '$[7]', value ->> '$[8]', value ->> '$[9]', value ->> '$[10]'
	FROM json_each(?) WHERE true
	ON CONFLICT DO NOTHING RETURNING conv, role`

func appendTx(ctx context.Context, tx queryer, msgs []Message, convs map[pipeline.Key]int64) (int, error) {
	rows := make([][]any, 0, len(msgs))
	valid := true
	for _, m := range msgs {
		conv, err := ensureConv(ctx, tx, m.Key, convs)
		if err != nil {
			return 0, err
		}
		if !m.Role.Valid() {
			return 0, fmt.Errorf("storing message in %s: invalid role %q", m.Key, m.Role)
		}
		if text, cut := CutText(m.Text); cut {
			m.Text, m.Tokens = text, estimateTokens(text)
		}
		if m.Tokens <= 0 {
			m.Tokens = estimateTokens(m.Text)
		}
		if m.Time.IsZero() {
			m.Time = time.Now()
		}
		// JSON cannot carry invalid UTF-8 (it would be replaced); such a
		// batch takes the row-by-row path so every byte is kept.
		valid = valid && utf8.ValidString(m.Text) && utf8.ValidString(m.SenderName) && utf8.ValidString(m.SenderID) &&
			utf8.ValidString(m.PlatformID) && utf8.ValidString(m.ReplyTo)
		rows = append(rows, []any{conv, string(m.Role), m.SenderID, m.SenderName, m.PlatformID, m.ReplyTo,
			m.Text, m.Time.UnixMilli(), m.Tokens, boolInt(m.Active || m.ChunkID == 0), m.ChunkID})
	}
	turns := map[int64]int{}
	added := 0
	note := func(conv int64, role string) {
		added++
		if role == string(RoleAssistant) {
			turns[conv]++
		}
	}
	if valid {
		// One statement per maxStatementBytes of text: FTS5 holds a
		// statement's terms in memory until its end.
		for len(rows) > 0 {
			n, size := 0, 0
			for n < len(rows) && (n == 0 || size+len(rows[n][6].(string)) <= maxStatementBytes) {
				size += len(rows[n][6].(string))
				n++
			}
			if err := insertBatch(ctx, tx, rows[:n], note); err != nil {
				return 0, err
			}
			rows = rows[n:]
		}
	} else {
		for _, r := range rows {
			res, err := tx.ExecContext(ctx, sqlInsertMessage, r...)
			if err != nil {
				return 0, fmt.Errorf("storing a message: %w", err)
			}
			if n, _ := res.RowsAffected(); n > 0 {
				note(r[0].(int64), r[1].(string))
			}
		}
	}
	// One counter update per conversation, not per reply.
	for conv, n := range turns {
		if _, err := tx.ExecContext(ctx, sqlBumpTurns, n, conv); err != nil {
			return 0, err
		}
	}
	return added, nil
}

// insertBatch inserts rows (appendTx's) in one statement and notes each
// row inserted.
func insertBatch(ctx context.Context, tx queryer, rows [][]any, note func(conv int64, role string)) error {
	doc, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("encoding %d messages: %w", len(rows), err)
	}
	res, err := tx.QueryContext(ctx, sqlInsertBatch, string(doc))
	if err != nil {
		return fmt.Errorf("storing %d messages: %w", len(rows), err)
	}
	for res.Next() {
		var conv int64
		var role string
		if err := res.Scan(&conv, &role); err != nil {
			res.Close()
			return fmt.Errorf("storing %d messages: %w", len(rows), err)
		}
		note(conv, role)
	}
	if err := errors.Join(res.Err(), res.Close()); err != nil {
		return fmt.Errorf("storing %d messages: %w", len(rows), err)
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func scanMessages(rows *sql.Rows, key pipeline.Key, withRank bool) ([]Message, []float64, error) {
	defer rows.Close()
	var out []Message
	var ranks []float64
	// One row's destinations, reused: each row is copied out.
	var r messageRow
	var rank float64
	dest := r.dest()
	if withRank {
		dest = append(dest, &rank)
	}
	for rows.Next() {
		r = messageRow{}
		if err := rows.Scan(dest...); err != nil {
			return nil, nil, err
		}
		out = append(out, r.message(key))
		if withRank {
			ranks = append(ranks, rank)
		}
	}
	return out, ranks, rows.Err()
}

// messageRow is a message as msgColumns select it.
type messageRow struct {
	m      Message
	role   string
	at     int64
	active int
}

// dest is the row's Scan destinations, in msgColumns order.
func (r *messageRow) dest() []any {
	return []any{&r.m.ID, &r.role, &r.m.SenderID, &r.m.SenderName, &r.m.PlatformID, &r.m.ReplyTo, &r.m.Text, &r.at, &r.m.Tokens, &r.active, &r.m.ChunkID}
}

// message is the row's message, of conversation key.
func (r *messageRow) message(key pipeline.Key) Message {
	m := r.m
	m.Key, m.Role, m.Time, m.Active = key, Role(r.role), time.UnixMilli(r.at).UTC(), r.active == 1
	return m
}

// Lookup implements Backend.
func (s *SQLite) Lookup(ctx context.Context, key pipeline.Key, platformID string) (bool, bool, error) {
	if platformID == "" {
		return false, false, nil
	}
	conv, err := convID(ctx, s.rd, key)
	if err != nil || conv == 0 {
		return false, false, err
	}
	var stored, answered bool
	err = s.rd.QueryRowContext(ctx, sqlLookup, conv, platformID, conv, platformID).Scan(&stored, &answered)
	return stored, answered, err
}

// Recent implements Backend.
func (s *SQLite) Recent(ctx context.Context, key pipeline.Key, limit, tokenBudget int) ([]Message, error) {
	conv, err := convID(ctx, s.rd, key)
	if err != nil || conv == 0 {
		return nil, err
	}
	rows, err := s.rd.QueryContext(ctx, sqlRecent, conv)
	if err != nil {
		return nil, fmt.Errorf("loading recent messages of %s: %w", key, err)
	}
	var out []Message
	used := 0
	defer rows.Close()
	var r messageRow
	dest := r.dest()
	for (limit <= 0 || len(out) < limit) && rows.Next() {
		r = messageRow{}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if tokenBudget > 0 && used+r.m.Tokens > tokenBudget {
			break
		}
		used += r.m.Tokens
		out = append(out, r.message(key))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	reverse(out)
	return out, nil
}

func reverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// Active implements Backend.
func (s *SQLite) Active(ctx context.Context, key pipeline.Key) ([]Message, error) {
	conv, err := convID(ctx, s.rd, key)
	if err != nil || conv == 0 {
		return nil, err
	}
	rows, err := s.rd.QueryContext(ctx, sqlActive, conv)
	if err != nil {
		return nil, err
	}
	out, _, err := scanMessages(rows, key, false)
	return out, err
}

func jsonIDs(ids []int64) string {
	b, _ := json.Marshal(ids)
	return string(b)
}

// Archive implements Backend.
func (s *SQLite) Archive(ctx context.Context, key pipeline.Key, ids []int64, sum Summary, turnsSeen int) (Summary, error) {
	if len(ids) == 0 {
		return Summary{}, fmt.Errorf("%w: nothing to archive", ErrConflict)
	}
	ids = uniqueIDs(ids)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		conv, err := convID(ctx, tx, key)
		if err != nil {
			return err
		}
		if conv == 0 {
			return fmt.Errorf("archiving in %s: %w", key, ErrNotFound)
		}
		var chunk int64
		if err := tx.QueryRowContext(ctx, sqlNextChunk, conv).Scan(&chunk); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, sqlArchive, chunk, conv, jsonIDs(ids))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != int64(len(ids)) {
			return fmt.Errorf("%w: %d of %d messages still active in %s", ErrConflict, n, len(ids), key)
		}
		var from, to int64
		if err := tx.QueryRowContext(ctx, sqlRangeOfIDs, conv, jsonIDs(ids)).Scan(&from, &to); err != nil {
			return err
		}
		sum.Level, sum.Sources, sum.Active = 1, []int64{chunk}, true
		sum.From, sum.To = time.UnixMilli(from).UTC(), time.UnixMilli(to).UTC()
		if err := insertSummary(ctx, tx, conv, &sum, false); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, sqlResetTurns, turnsSeen, sum.Created.UnixMilli(), conv)
		return err
	})
	if err != nil {
		return Summary{}, err
	}
	sum.Key = key
	return sum, nil
}

func uniqueIDs(ids []int64) []int64 {
	seen := make(map[int64]bool, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// keptID is the id to insert a row with in SQLite: with keep its own id
// (when set), else NULL, which numbers it anew.
func keptID(id int64, keep bool) any {
	if keep && id > 0 {
		return id
	}
	return nil
}

// insertSummary stores sum in conversation conv and sets its ID: a new
// one, or with keepID its own (a copy between stores).
func insertSummary(ctx context.Context, tx *sql.Tx, conv int64, sum *Summary, keepID bool) error {
	if sum.Created.IsZero() {
		sum.Created = time.Now()
	}
	sum.Created = ms(sum.Created)
	if sum.Tokens <= 0 {
		sum.Tokens = estimateTokens(sum.Text)
	}
	src, _ := json.Marshal(sum.Sources)
	return tx.QueryRowContext(ctx, sqlInsertSum, keptID(sum.ID, keepID), conv, sum.Level, sum.Text, boolInt(sum.Active), string(src),
		sum.From.UnixMilli(), sum.To.UnixMilli(), sum.Tokens, sum.Created.UnixMilli()).Scan(&sum.ID)
}

// Fold implements Backend.
func (s *SQLite) Fold(ctx context.Context, key pipeline.Key, ids []int64, sum Summary) (Summary, error) {
	if len(ids) == 0 || sum.Level < 2 {
		return Summary{}, fmt.Errorf("%w: fold needs sources and a level above 1", ErrConflict)
	}
	ids = uniqueIDs(ids)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		conv, err := convID(ctx, tx, key)
		if err != nil {
			return err
		}
		if conv == 0 {
			return fmt.Errorf("folding in %s: %w", key, ErrNotFound)
		}
		res, err := tx.ExecContext(ctx, sqlFoldSums, conv, sum.Level-1, jsonIDs(ids))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != int64(len(ids)) {
			return fmt.Errorf("%w: %d of %d level-%d summaries still active in %s", ErrConflict, n, len(ids), sum.Level-1, key)
		}
		var from, to int64
		if err := tx.QueryRowContext(ctx, sqlSumRange, conv, jsonIDs(ids)).Scan(&from, &to); err != nil {
			return err
		}
		sum.Sources, sum.Active = ids, true
		sum.From, sum.To = time.UnixMilli(from).UTC(), time.UnixMilli(to).UTC()
		return insertSummary(ctx, tx, conv, &sum, false)
	})
	if err != nil {
		return Summary{}, err
	}
	sum.Key = key
	return sum, nil
}

func loadSummaries(ctx context.Context, q queryer, conv int64, key pipeline.Key, activeOnly bool) ([]Summary, error) {
	query := `SELECT ` + sumColumns + ` FROM summaries WHERE conv = ?`
	if activeOnly {
		query += ` AND is_active = 1`
	}
	rows, err := q.QueryContext(ctx, query+` ORDER BY id`, conv)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Summary
	for rows.Next() {
		var sm Summary
		var active int
		var src string
		var from, to, created int64
		if err := rows.Scan(&sm.ID, &sm.Level, &sm.Text, &active, &src, &from, &to, &sm.Tokens, &created); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(src), &sm.Sources); err != nil {
			return nil, fmt.Errorf("summary %d: sources: %w", sm.ID, err)
		}
		sm.Key, sm.Active = key, active == 1
		sm.From, sm.To, sm.Created = time.UnixMilli(from).UTC(), time.UnixMilli(to).UTC(), time.UnixMilli(created).UTC()
		out = append(out, sm)
	}
	return out, rows.Err()
}

// Summaries implements Backend.
func (s *SQLite) Summaries(ctx context.Context, key pipeline.Key, activeOnly bool) ([]Summary, error) {
	conv, err := convID(ctx, s.rd, key)
	if err != nil || conv == 0 {
		return nil, err
	}
	return loadSummaries(ctx, s.rd, conv, key, activeOnly)
}

// chunksOf resolves a summary to the chunk ids it covers.
func chunksOf(sums []Summary, id int64) ([]int64, bool) {
	byID := make(map[int64]Summary, len(sums))
	for _, s := range sums {
		byID[s.ID] = s
	}
	root, ok := byID[id]
	if !ok {
		return nil, false
	}
	var chunks []int64
	var walk func(s Summary, depth int)
	walk = func(s Summary, depth int) {
		if depth > 64 {
			return
		}
		if s.Level == 1 {
			chunks = append(chunks, s.Sources...)
			return
		}
		for _, src := range s.Sources {
			if c, ok := byID[src]; ok {
				walk(c, depth+1)
			}
		}
	}
	walk(root, 0)
	return chunks, true
}

// Provenance implements Backend.
func (s *SQLite) Provenance(ctx context.Context, key pipeline.Key, summaryID int64) ([]Message, error) {
	conv, err := convID(ctx, s.rd, key)
	if err != nil {
		return nil, err
	}
	if conv == 0 {
		return nil, fmt.Errorf("summary %d in %s: %w", summaryID, key, ErrNotFound)
	}
	sums, err := loadSummaries(ctx, s.rd, conv, key, false)
	if err != nil {
		return nil, err
	}
	chunks, ok := chunksOf(sums, summaryID)
	if !ok {
		return nil, fmt.Errorf("summary %d in %s: %w", summaryID, key, ErrNotFound)
	}
	rows, err := s.rd.QueryContext(ctx, `SELECT `+msgColumns+` FROM messages m WHERE m.conv = ? AND m.chunk_id IN (SELECT value FROM json_each(?)) ORDER BY m.id`, conv, jsonIDs(chunks))
	if err != nil {
		return nil, err
	}
	out, _, err := scanMessages(rows, key, false)
	return out, err
}

// sqlAround selects messages ?2 (a JSON array of ids) of conversation ?1 and
// their neighbours, through the (conv, is_active, id) index: the nearest
// older and newer message among the archived and among the active ones,
// the nearer of each pair kept.
//
// "+conv" keeps the planner on the primary key: the ids are few, the
// conversation's messages many.
const sqlAround = `WITH seed(id) AS MATERIALIZED (SELECT id FROM messages WHERE +conv = ?1 AND id IN (SELECT value FROM json_each(?2)))
SELECT ` + msgColumns + ` FROM messages m WHERE +m.conv = ?1 AND m.id IN (
	SELECT id FROM seed
	UNION SELECT max(coalesce((SELECT id FROM messages WHERE conv = ?1 AND is_active = 0 AND id < j.id ORDER BY id DESC LIMIT 1), -1),
	                 coalesce((SELECT id FROM messages WHERE conv = ?1 AND is_active = 1 AND id < j.id ORDER BY id DESC LIMIT 1), -1)) FROM seed j
	UNION SELECT min(coalesce((SELECT id FROM messages WHERE conv = ?1 AND is_active = 0 AND id > j.id ORDER BY id LIMIT 1), 9223372036854775807),
	                 coalesce((SELECT id FROM messages WHERE conv = ?1 AND is_active = 1 AND id > j.id ORDER BY id LIMIT 1), 9223372036854775807)) FROM seed j
) ORDER BY m.id`

// Around implements Backend.
func (s *SQLite) Around(ctx context.Context, key pipeline.Key, ids []int64) ([]Message, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	conv, err := convID(ctx, s.rd, key)
	if err != nil || conv == 0 {
		return nil, err
	}
	rows, err := s.rd.QueryContext(ctx, sqlAround, conv, jsonIDs(ids))
	if err != nil {
		return nil, fmt.Errorf("reading around messages of %s: %w", key, err)
	}
	out, _, err := scanMessages(rows, key, false)
	if err != nil {
		return nil, fmt.Errorf("reading around messages of %s: %w", key, err)
	}
	return out, nil
}

// Status implements Backend.
func (s *SQLite) Status(ctx context.Context, key pipeline.Key) (Status, error) {
	st := Status{ActiveByLevel: map[int]int{}}
	conv, err := convID(ctx, s.rd, key)
	if err != nil || conv == 0 {
		return st, err
	}
	var last int64
	err = s.rd.QueryRowContext(ctx, `SELECT turns_since_summary, last_summary_at FROM conversations WHERE id = ?`, conv).Scan(&st.TurnsSinceSummary, &last)
	if err != nil {
		return st, err
	}
	if last > 0 {
		st.LastSummary = time.UnixMilli(last).UTC()
	}
	err = s.rd.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(is_active), 0) FROM messages WHERE conv = ?`, conv).Scan(&st.Total, &st.Active)
	if err != nil {
		return st, err
	}
	st.Archived = st.Total - st.Active
	rows, err := s.rd.QueryContext(ctx, `SELECT level, is_active, count(*) FROM summaries WHERE conv = ? GROUP BY level, is_active`, conv)
	if err != nil {
		return st, err
	}
	defer rows.Close()
	for rows.Next() {
		var level, active, n int
		if err := rows.Scan(&level, &active, &n); err != nil {
			return st, err
		}
		if active == 1 {
			st.ActiveByLevel[level] += n
		}
		if level > st.HighestLevel {
			st.HighestLevel = level
		}
	}
	return st, rows.Err()
}

// BudgetHits drops q's excluded messages from ranked hits and applies its
// limit and token budget, as every backend's Search does (and baselines that
// should be compared with it).
func BudgetHits(hits []Hit, q Query) []Hit {
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	skip := make(map[int64]bool, len(q.Exclude))
	for _, id := range q.Exclude {
		skip[id] = true
	}
	out := make([]Hit, 0, min(len(hits), limit))
	used := 0
	for _, h := range hits {
		if skip[h.Message.ID] {
			continue
		}
		if q.TokenBudget > 0 && used+h.Message.Tokens > q.TokenBudget {
			continue // a shorter, lower-ranked hit may still fit
		}
		used += h.Message.Tokens
		out = append(out, h)
		if len(out) == limit {
			break
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Settings implements Backend.
func (s *SQLite) Settings(ctx context.Context, owner string) (Settings, bool, error) {
	st := Settings{Owner: owner}
	var enabled, factsOff int
	var storage string
	var created, updated int64
	err := s.rd.QueryRowContext(ctx, `SELECT memory_enabled, storage, threshold, facts_off, created_at, updated_at FROM owners WHERE owner = ?`, owner).
		Scan(&enabled, &storage, &st.Threshold, &factsOff, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	st.MemoryEnabled, st.Storage, st.FactsOff = enabled == 1, Storage(storage), factsOff == 1
	st.Created, st.Updated = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return st, true, nil
}

const sqlPutSettings = `INSERT INTO owners(owner, memory_enabled, storage, threshold, facts_off, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT(owner) DO UPDATE SET memory_enabled = excluded.memory_enabled, storage = excluded.storage,
	threshold = excluded.threshold, facts_off = excluded.facts_off, updated_at = excluded.updated_at`

// PutSettings implements Backend.
func (s *SQLite) PutSettings(ctx context.Context, st Settings) error {
	return s.tx(ctx, func(tx *sql.Tx) error { return putSettingsTx(ctx, tx, st) })
}

func putSettingsTx(ctx context.Context, tx *sql.Tx, st Settings) error {
	now := time.Now()
	if st.Created.IsZero() {
		st.Created = now
	}
	if st.Updated.IsZero() {
		st.Updated = now
	}
	_, err := tx.ExecContext(ctx, sqlPutSettings, st.Owner, boolInt(st.MemoryEnabled), string(st.Storage), st.Threshold, boolInt(st.FactsOff), st.Created.UnixMilli(), st.Updated.UnixMilli())
	return err
}

// Remember implements Backend.
func (s *SQLite) Remember(ctx context.Context, owner string, m UserMemory, max int) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := rememberTx(ctx, tx, owner, m, max)
		return err
	})
}

func rememberTx(ctx context.Context, tx *sql.Tx, owner string, m UserMemory, max int) (bool, error) {
	var exists bool
	var count int
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM memories WHERE owner = ? AND key = ?), (SELECT count(*) FROM memories WHERE owner = ?)`, owner, m.Key, owner).Scan(&exists, &count); err != nil {
		return false, err
	}
	if !exists && max > 0 && count >= max {
		return false, fmt.Errorf("%w: at most %d", ErrMemoryCap, max)
	}
	now := time.Now()
	if m.Created.IsZero() {
		m.Created = now
	}
	if m.Updated.IsZero() {
		m.Updated = now
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO memories(owner, key, content, created_at, updated_at, author) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT(owner, key) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at, author = excluded.author`,
		owner, m.Key, m.Content, m.Created.UnixMilli(), m.Updated.UnixMilli(), m.Author)
	return !exists, err
}

// Memories implements Backend.
func (s *SQLite) Memories(ctx context.Context, owner string) ([]UserMemory, error) {
	rows, err := s.rd.QueryContext(ctx, `SELECT key, content, created_at, updated_at, author FROM memories WHERE owner = ? ORDER BY key`, owner)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []UserMemory
	for rows.Next() {
		var m UserMemory
		var c, u int64
		if err := rows.Scan(&m.Key, &m.Content, &c, &u, &m.Author); err != nil {
			return nil, err
		}
		m.Created, m.Updated = time.UnixMilli(c).UTC(), time.UnixMilli(u).UTC()
		out = append(out, m)
	}
	return out, rows.Err()
}

// Forget implements Backend.
func (s *SQLite) Forget(ctx context.Context, owner, key string) (bool, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM memories WHERE owner = ? AND key = ?`, owner, key)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

const factColumns = `id, conv_key, content, sources, tags, created_at, updated_at`

// scanFacts reads facts from rows, at most limit of them (0: all).
func scanFacts(rows *sql.Rows, limit int) ([]Fact, error) {
	defer rows.Close()
	var out []Fact
	for (limit <= 0 || len(out) < limit) && rows.Next() {
		var f Fact
		var src, tags string
		var c, u int64
		if err := rows.Scan(&f.ID, &f.Key, &f.Content, &src, &tags, &c, &u); err != nil {
			return nil, err
		}
		_ = json.Unmarshal([]byte(src), &f.Sources)
		_ = json.Unmarshal([]byte(tags), &f.Tags)
		f.Created, f.Updated = time.UnixMilli(c).UTC(), time.UnixMilli(u).UTC()
		out = append(out, f)
	}
	return out, rows.Err()
}

// AddFact implements Backend.
func (s *SQLite) AddFact(ctx context.Context, owner string, f Fact) (Fact, bool, error) {
	var merged bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		f, merged, err = addFactTx(ctx, tx, owner, f, false)
		return err
	})
	return f, merged, err
}

// addFactTx stores f for owner, merged into a similar fact when there is
// one; a new fact gets a new ID, or with keepID its own.
func addFactTx(ctx context.Context, tx *sql.Tx, owner string, f Fact, keepID bool) (Fact, bool, error) {
	now := time.Now()
	if f.Created.IsZero() {
		f.Created = now
	}
	if f.Updated.IsZero() {
		f.Updated = f.Created
	}
	f.Created, f.Updated = ms(f.Created), ms(f.Updated)
	rows, err := tx.QueryContext(ctx, `SELECT `+factColumns+` FROM facts WHERE owner = ? ORDER BY id`, owner)
	if err != nil {
		return f, false, err
	}
	existing, err := scanFacts(rows, 0)
	if err != nil {
		return f, false, err
	}
	for _, old := range existing {
		if SimilarFacts(old.Content, f.Content) {
			m := mergeFact(old, f)
			src, _ := json.Marshal(m.Sources)
			tags, _ := json.Marshal(m.Tags)
			_, err := tx.ExecContext(ctx, `UPDATE facts SET content = ?, norm = ?, sources = ?, tags = ?, updated_at = ? WHERE id = ?`,
				m.Content, NormalizeFact(m.Content), string(src), string(tags), m.Updated.UnixMilli(), m.ID)
			return m, true, err
		}
	}
	src, _ := json.Marshal(f.Sources)
	tags, _ := json.Marshal(f.Tags)
	err = tx.QueryRowContext(ctx, `INSERT INTO facts(id, owner, conv_key, content, norm, sources, tags, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		keptID(f.ID, keepID), owner, f.Key, f.Content, NormalizeFact(f.Content), string(src), string(tags), f.Created.UnixMilli(), f.Updated.UnixMilli()).Scan(&f.ID)
	return f, false, err
}

// Facts implements Backend.
func (s *SQLite) Facts(ctx context.Context, owner, text string, limit int) ([]Fact, error) {
	if limit <= 0 {
		limit = 20
	}
	var rows *sql.Rows
	var err error
	if match := MatchExpr(text); match != "" {
		rows, err = s.rd.QueryContext(ctx, sqlFactsMatching, match, owner)
	} else {
		rows, err = s.rd.QueryContext(ctx, sqlFactsNewest, owner)
	}
	if err != nil {
		return nil, fmt.Errorf("searching facts: %w", err)
	}
	return scanFacts(rows, limit)
}

// The facts of a turn, best first; no LIMIT ? ("No bound LIMIT").
const (
	sqlFactsMatching = `SELECT f.id, f.conv_key, f.content, f.sources, f.tags, f.created_at, f.updated_at
			FROM facts_fts x JOIN facts f ON f.id = x.rowid WHERE facts_fts MATCH ? AND f.owner = ? ORDER BY x.rank, f.id DESC`
	sqlFactsNewest = `SELECT ` + factColumns + ` FROM facts WHERE owner = ? ORDER BY updated_at DESC, id DESC`
)

const sqlUnanswered = `SELECT c.key, ` + msgColumns + ` FROM messages m JOIN conversations c ON c.id = m.conv
	WHERE c.key >= ? AND c.key < ? AND m.role = 'user' AND m.platform_id <> '' AND m.created_at >= ?
	AND NOT EXISTS (SELECT 1 FROM messages a WHERE a.conv = m.conv AND a.reply_to = m.platform_id AND a.reply_to <> '' AND a.role = 'assistant')
	AND NOT EXISTS (SELECT 1 FROM handled h WHERE h.conv_key = c.key AND h.platform_id = m.platform_id)
	ORDER BY m.created_at, m.id`

// unanswered lists a channel's user messages since a time that have no reply
// and were not handled otherwise (see Store.Unanswered).
func (s *SQLite) unanswered(ctx context.Context, channel string, since time.Time) ([]Message, error) {
	rows, err := s.rd.QueryContext(ctx, sqlUnanswered, channel+":", channel+";", since.UnixMilli())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var m Message
		var k, role string
		var at int64
		var active int
		if err := rows.Scan(&k, &m.ID, &role, &m.SenderID, &m.SenderName, &m.PlatformID, &m.ReplyTo, &m.Text, &at, &m.Tokens, &active, &m.ChunkID); err != nil {
			return nil, err
		}
		if m.Key, err = pipeline.ParseKey(k); err != nil {
			continue
		}
		m.Role, m.Time, m.Active = Role(role), time.UnixMilli(at).UTC(), active == 1
		out = append(out, m)
	}
	return out, rows.Err()
}
