package memory

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallbot/recall/memory/internal/fts"
	"github.com/recallbot/recall/pipeline"
)

//go:embed pgmigrations/*.sql
var pgMigrationFiles embed.FS

// Postgres is the backend for a PostgreSQL database shared by any number of
// Recall processes (database.url): the same tables as SQLite, the same
// semantics (it passes the same conformance suite), through a pgx pool whose
// statements are prepared once per connection. Every write is one
// transaction; PostgreSQL's row locks order concurrent writers, where SQLite
// has its single writer connection.
type Postgres struct {
	pool *pgxpool.Pool
	tune *pgSearchTuning // nil: defaultPGSearchTuning (tests set it)
	// searchTrace, when set (tests), is called at each read of a search's
	// postings.
	searchTrace func()
	// applied names the migrations this open applied (bot migrate prints them).
	applied []string
	locks   lockSession // TryLock's advisory locks
}

var _ Backend = (*Postgres)(nil)

// pgQuerier is what both the pool and a transaction offer.
type pgQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// OpenPostgres connects to the database at url (postgres://…) and applies
// pending migrations under an advisory lock, so replicas that start together
// migrate once.
func OpenPostgres(ctx context.Context, url string) (*Postgres, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("reading database.url: %w", redactURLError(err, url))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to PostgreSQL at %s: %w", cfg.ConnConfig.Host, err)
	}
	p := &Postgres{pool: pool}
	if err := p.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return p, nil
}

// redactURLError keeps a password in the URL out of error messages: parse
// errors can quote the connection string.
func redactURLError(err error, url string) error {
	msg := err.Error()
	if m := urlPassword.FindStringSubmatch(url); m != nil && m[1] != "" {
		msg = strings.ReplaceAll(msg, m[1], "xxxxx")
	}
	return errors.New(msg)
}

// urlPassword finds the password of a postgres://user:password@host URL.
var urlPassword = regexp.MustCompile(`^[a-zA-Z]+://[^:/@]*:([^@]*)@`)

// Pool exposes the connection pool (maintenance, tests).
func (p *Postgres) Pool() *pgxpool.Pool { return p.pool }

// Close closes the pool and the lock session (its locks are released).
func (p *Postgres) Close() error {
	p.locks.close()
	p.pool.Close()
	return nil
}

// pgMigrateLock names the advisory lock migrations run under, per schema.
const pgMigrateLock = `SELECT pg_advisory_lock(hashtextextended('recall-migrations:' || current_schema(), 0))`
const pgMigrateUnlock = `SELECT pg_advisory_unlock(hashtextextended('recall-migrations:' || current_schema(), 0))`

// SchemaVersion is the highest migration applied.
func (p *Postgres) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := p.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&v)
	return v, err
}

func (p *Postgres) migrate(ctx context.Context) error {
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, pgMigrateLock); err != nil {
		return fmt.Errorf("waiting for the migration lock: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), pgMigrateUnlock) }() // the session ends the lock anyway
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("creating schema_version: %w", err)
	}
	var current int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&current); err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	names, err := fs.Glob(pgMigrationFiles, "pgmigrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		base := path.Base(name)
		n, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migration %s: bad number", base)
		}
		if n <= current {
			continue
		}
		body, err := pgMigrationFiles.ReadFile(name)
		if err != nil {
			return err
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_version(version, applied_at) VALUES ($1, $2)`, n, time.Now().UnixMilli())
			return err
		})
		if err != nil {
			return fmt.Errorf("applying PostgreSQL migration %s: %w", base, err)
		}
		p.applied = append(p.applied, base)
	}
	return nil
}

// Applied names the migrations opening the database applied, in order
// (none when it was up to date, or another process applied them first:
// they run under the advisory lock).
func (p *Postgres) Applied() []string { return p.applied }

// tx runs fn in one read-committed transaction.
func (p *Postgres) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, p.pool, fn)
}

// pgText makes s storable in a PostgreSQL text column, which holds valid
// UTF-8 without NUL bytes: invalid bytes and NULs become U+FFFD. (SQLite
// and JSON keep such bytes; no platform sends them in text.)
func pgText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

const (
	pgConvID     = `SELECT id FROM conversations WHERE key = $1`
	pgEnsureConv = `INSERT INTO conversations(key, owner, created_at) VALUES ($1, $2, $3)
		ON CONFLICT(key) DO UPDATE SET key = excluded.key RETURNING id`
	pgInsertMessageRows = `INSERT INTO messages(id, conv, role, sender_id, sender_name, platform_id, reply_to, text, created_at, tokens, is_active, chunk_id, search_len)
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[], $10::int[], $11::bool[], $12::bigint[], $13::int[])
		ON CONFLICT DO NOTHING RETURNING id`
	pgInsertTerms = `INSERT INTO message_terms(conv, term, msg, tf_text, tf_sender, doc_len)
		SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::bigint[], $4::int[], $5::int[], $6::int[])`
	pgAddTermStats = `INSERT INTO term_stats(conv, term, df)
		SELECT conv, term, count(*) FROM unnest($1::bigint[], $2::bytea[]) t(conv, term) GROUP BY conv, term ORDER BY conv, term
		ON CONFLICT (conv, term) DO UPDATE SET df = term_stats.df + excluded.df`
	pgMsgColumns = `m.id, m.role, m.sender_id, m.sender_name, m.platform_id, m.reply_to, m.text, m.created_at, m.tokens, m.is_active, m.chunk_id`
	pgSumColumns = `id, level, text, is_active, sources, from_at, to_at, tokens, created_at`
	pgInsertSum  = `INSERT INTO summaries(id, conv, level, text, is_active, sources, from_at, to_at, tokens, created_at)
		VALUES (coalesce($1, nextval(pg_get_serial_sequence('summaries', 'id'))), $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`
	pgFactColumns = `id, conv_key, content, sources::text, tags::text, created_at, updated_at`
)

// pgConv finds a conversation's row id; 0 when it does not exist.
func pgConv(ctx context.Context, q pgQuerier, key pipeline.Key) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, pgConvID, key.String()).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

func pgEnsure(ctx context.Context, q pgQuerier, key pipeline.Key, cache map[pipeline.Key]int64) (int64, error) {
	if id, ok := cache[key]; ok {
		return id, nil
	}
	if err := key.Validate(); err != nil {
		return 0, err
	}
	id, err := pgConv(ctx, q, key)
	if err != nil {
		return 0, err
	}
	if id == 0 {
		if err := q.QueryRow(ctx, pgEnsureConv, key.String(), key.Owner(), time.Now().UnixMilli()).Scan(&id); err != nil {
			return 0, fmt.Errorf("creating conversation %s: %w", key, err)
		}
	}
	cache[key] = id
	return id, nil
}

// pgRow is one message to insert, with its search terms.
type pgRow struct {
	conv int64
	m    Message
}

// pgInsertMessages inserts messages (skipping a platform id already stored
// in the conversation) with their search terms, in one statement (the
// search totals' trigger then updates each conversation once), and returns
// the inserted ones with their ids. With keepIDs a message keeps its ID when
// no row holds it (a copy between stores: the target exports the same ids).
func pgInsertMessages(ctx context.Context, tx pgx.Tx, rows []pgRow, keepIDs bool) ([]pgRow, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	ids, err := pgRowIDs(ctx, tx, "messages", rows, keepIDs)
	if err != nil {
		return nil, err
	}
	type doc struct{ text, sender []string }
	docs := make([]doc, len(rows))
	n := len(rows)
	var (
		convIDs, created, chunks                             = make([]int64, n), make([]int64, n), make([]int64, n)
		roles, senderIDs, senderNames, platformIDs, replyTos = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		texts                                                = make([]string, n)
		tokens, searchLens                                   = make([]int32, n), make([]int32, n)
		active                                               = make([]bool, n)
	)
	for i, r := range rows {
		m := r.m
		docs[i] = doc{fts.Tokens(m.Text), fts.Tokens(m.SenderName)}
		convIDs[i], roles[i], senderIDs[i], senderNames[i], platformIDs[i], replyTos[i] = r.conv, string(m.Role), m.SenderID, m.SenderName, m.PlatformID, m.ReplyTo
		texts[i], created[i], tokens[i], active[i], chunks[i] = m.Text, m.Time.UnixMilli(), int32(m.Tokens), m.Active, m.ChunkID
		searchLens[i] = int32(len(docs[i].text) + len(docs[i].sender))
	}
	res, err := tx.Query(ctx, pgInsertMessageRows, ids, convIDs, roles, senderIDs, senderNames, platformIDs, replyTos, texts, created, tokens, active, chunks, searchLens)
	if err != nil {
		return nil, fmt.Errorf("storing messages: %w", err)
	}
	inserted := map[int64]bool{}
	for res.Next() {
		var id int64
		if err := res.Scan(&id); err != nil {
			res.Close()
			return nil, fmt.Errorf("storing messages: %w", err)
		}
		inserted[id] = true
	}
	res.Close()
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("storing messages: %w", err)
	}
	var added []pgRow
	var addedDocs []doc
	for i, r := range rows {
		if inserted[ids[i]] {
			r.m.ID = ids[i]
			added = append(added, r)
			addedDocs = append(addedDocs, docs[i])
		}
	}
	var convs, msgs []int64
	var terms [][]byte
	var tfText, tfSender, dls []int32
	for i, r := range added {
		d := addedDocs[i]
		type tf struct{ text, sender int32 }
		counts := map[string]*tf{}
		var order []string
		get := func(stem string) *tf {
			c := counts[stem]
			if c == nil {
				c = &tf{}
				counts[stem] = c
				order = append(order, stem)
			}
			return c
		}
		for _, t := range d.text {
			get(t).text++
		}
		for _, t := range d.sender {
			get(t).sender++
		}
		dl := int32(min(len(d.text)+len(d.sender), ftsMaxLen))
		for _, stem := range order {
			if !fts.Indexed(stem) {
				continue // counted in dl, found by no search (fts.MaxTermBytes)
			}
			c := counts[stem]
			convs = append(convs, r.conv)
			terms = append(terms, []byte(stem))
			msgs = append(msgs, r.m.ID)
			tfText = append(tfText, c.text)
			tfSender = append(tfSender, c.sender)
			dls = append(dls, dl)
		}
	}
	if len(terms) > 0 {
		if _, err := tx.Exec(ctx, pgInsertTerms, convs, terms, msgs, tfText, tfSender, dls); err != nil {
			return nil, fmt.Errorf("indexing %d messages for search: %w", len(added), err)
		}
		if _, err := tx.Exec(ctx, pgAddTermStats, convs, terms); err != nil {
			return nil, fmt.Errorf("counting search terms: %w", err)
		}
	}
	return added, nil
}

// pgRowIDs gives each row an id for a table with a BIGSERIAL id: with
// keepIDs its message's ID when that is set and no row holds it (then the
// sequence is moved past it, so it never hands it out), else a new one.
func pgRowIDs(ctx context.Context, tx pgx.Tx, table string, rows []pgRow, keepIDs bool) ([]int64, error) {
	ids := make([]int64, len(rows))
	if keepIDs {
		var want []int64
		for _, r := range rows {
			if r.m.ID > 0 {
				want = append(want, r.m.ID)
			}
		}
		taken, err := pgTakenIDs(ctx, tx, table, want)
		if err != nil {
			return nil, err
		}
		var top int64
		for i, r := range rows {
			if id := r.m.ID; id > 0 && !taken[id] {
				ids[i], taken[id], top = id, true, max(top, id)
			}
		}
		if err := pgSequencePast(ctx, tx, table, top); err != nil {
			return nil, err
		}
	}
	var need int
	for _, id := range ids {
		if id == 0 {
			need++
		}
	}
	if need == 0 {
		return ids, nil
	}
	res, err := tx.Query(ctx, `SELECT nextval(pg_get_serial_sequence($1, 'id')) FROM generate_series(1, $2)`, table, need)
	if err != nil {
		return nil, fmt.Errorf("numbering %d rows of %s: %w", need, table, err)
	}
	defer res.Close()
	for i := range ids {
		if ids[i] != 0 {
			continue
		}
		if !res.Next() {
			return nil, fmt.Errorf("numbering rows of %s: %w", table, res.Err())
		}
		if err := res.Scan(&ids[i]); err != nil {
			return nil, fmt.Errorf("numbering rows of %s: %w", table, err)
		}
	}
	res.Close()
	return ids, res.Err()
}

// pgKeepID is the id to insert a row of table with: with keep its own id
// when set and no row holds it (the sequence moved past it), else nil
// (numbered anew).
func pgKeepID(ctx context.Context, tx pgx.Tx, table string, id int64, keep bool) (*int64, error) {
	if !keep || id <= 0 {
		return nil, nil
	}
	taken, err := pgTakenIDs(ctx, tx, table, []int64{id})
	if err != nil || taken[id] {
		return nil, err
	}
	return &id, pgSequencePast(ctx, tx, table, id)
}

// pgTakenIDs says which of ids rows of table hold.
func pgTakenIDs(ctx context.Context, q pgQuerier, table string, ids []int64) (map[int64]bool, error) {
	taken := map[int64]bool{}
	if len(ids) == 0 {
		return taken, nil
	}
	res, err := q.Query(ctx, `SELECT id FROM `+table+` WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("reading ids of %s: %w", table, err)
	}
	defer res.Close()
	for res.Next() {
		var id int64
		if err := res.Scan(&id); err != nil {
			return nil, err
		}
		taken[id] = true
	}
	return taken, res.Err()
}

// pgSequencePast moves table's id sequence to top at least (0: nothing).
func pgSequencePast(ctx context.Context, q pgQuerier, table string, top int64) error {
	if top <= 0 {
		return nil
	}
	_, err := q.Exec(ctx, `SELECT setval(s, greatest($2, nextval(s))) FROM (SELECT pg_get_serial_sequence($1, 'id')::regclass AS s) q`, table, top)
	if err != nil {
		return fmt.Errorf("moving the id sequence of %s: %w", table, err)
	}
	return nil
}

// pgCleanMessage makes a message's strings storable (see pgText).
func pgCleanMessage(m Message) Message {
	m.SenderID, m.SenderName, m.PlatformID = pgText(m.SenderID), pgText(m.SenderName), pgText(m.PlatformID)
	m.ReplyTo, m.Text = pgText(m.ReplyTo), pgText(m.Text)
	return m
}

// Append implements Backend.
func (p *Postgres) Append(ctx context.Context, msgs []Message) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	var added int
	err := p.tx(ctx, func(tx pgx.Tx) error {
		convs := map[pipeline.Key]int64{}
		rows := make([]pgRow, 0, len(msgs))
		for _, m := range msgs {
			conv, err := pgEnsure(ctx, tx, m.Key, convs)
			if err != nil {
				return err
			}
			if !m.Role.Valid() {
				return fmt.Errorf("storing message in %s: invalid role %q", m.Key, m.Role)
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
			m = pgCleanMessage(m)
			m.Active = m.Active || m.ChunkID == 0
			rows = append(rows, pgRow{conv, m})
		}
		ins, err := pgInsertMessages(ctx, tx, rows, false)
		if err != nil {
			return fmt.Errorf("storing %d messages: %w", len(msgs), err)
		}
		added = len(ins)
		turns := map[int64]int{}
		for _, r := range ins {
			if r.m.Role == RoleAssistant {
				turns[r.conv]++
			}
		}
		for conv, n := range turns {
			if _, err := tx.Exec(ctx, `UPDATE conversations SET turns_since_summary = turns_since_summary + $1 WHERE id = $2`, n, conv); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return added, nil
}

func pgScanMessages(rows pgx.Rows, key pipeline.Key) ([]Message, error) {
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var m Message
		var role string
		var at int64
		if err := rows.Scan(&m.ID, &role, &m.SenderID, &m.SenderName, &m.PlatformID, &m.ReplyTo, &m.Text, &at, &m.Tokens, &m.Active, &m.ChunkID); err != nil {
			return nil, err
		}
		m.Key, m.Role, m.Time = key, Role(role), time.UnixMilli(at).UTC()
		out = append(out, m)
	}
	return out, rows.Err()
}

// Lookup implements Backend.
func (p *Postgres) Lookup(ctx context.Context, key pipeline.Key, platformID string) (bool, bool, error) {
	if platformID == "" {
		return false, false, nil
	}
	platformID = pgText(platformID)
	conv, err := pgConv(ctx, p.pool, key)
	if err != nil || conv == 0 {
		return false, false, err
	}
	var stored, answered bool
	err = p.pool.QueryRow(ctx, `SELECT EXISTS(SELECT 1 FROM messages WHERE conv = $1 AND platform_id = $2 AND platform_id <> ''),
		EXISTS(SELECT 1 FROM messages WHERE conv = $1 AND reply_to = $2 AND reply_to <> '' AND role = 'assistant')`, conv, platformID).Scan(&stored, &answered)
	return stored, answered, err
}

// Recent implements Backend.
func (p *Postgres) Recent(ctx context.Context, key pipeline.Key, limit, tokenBudget int) ([]Message, error) {
	conv, err := pgConv(ctx, p.pool, key)
	if err != nil || conv == 0 {
		return nil, err
	}
	var lim any // NULL: no limit
	if limit > 0 {
		lim = limit
	}
	rows, err := p.pool.Query(ctx, `SELECT `+pgMsgColumns+` FROM messages m WHERE m.conv = $1 AND m.is_active ORDER BY m.id DESC LIMIT $2`, conv, lim)
	if err != nil {
		return nil, fmt.Errorf("loading recent messages of %s: %w", key, err)
	}
	all, err := pgScanMessages(rows, key)
	if err != nil {
		return nil, fmt.Errorf("loading recent messages of %s: %w", key, err)
	}
	var out []Message
	used := 0
	for _, m := range all {
		if tokenBudget > 0 && used+m.Tokens > tokenBudget {
			break
		}
		used += m.Tokens
		out = append(out, m)
	}
	reverse(out)
	return out, nil
}

// Active implements Backend.
func (p *Postgres) Active(ctx context.Context, key pipeline.Key) ([]Message, error) {
	conv, err := pgConv(ctx, p.pool, key)
	if err != nil || conv == 0 {
		return nil, err
	}
	rows, err := p.pool.Query(ctx, `SELECT `+pgMsgColumns+` FROM messages m WHERE m.conv = $1 AND m.is_active ORDER BY m.id`, conv)
	if err != nil {
		return nil, err
	}
	return pgScanMessages(rows, key)
}

// Archive implements Backend.
func (p *Postgres) Archive(ctx context.Context, key pipeline.Key, ids []int64, sum Summary, turnsSeen int) (Summary, error) {
	if len(ids) == 0 {
		return Summary{}, fmt.Errorf("%w: nothing to archive", ErrConflict)
	}
	ids = uniqueIDs(ids)
	err := p.tx(ctx, func(tx pgx.Tx) error {
		conv, err := pgConv(ctx, tx, key)
		if err != nil {
			return err
		}
		if conv == 0 {
			return fmt.Errorf("archiving in %s: %w", key, ErrNotFound)
		}
		var chunk int64
		if err := tx.QueryRow(ctx, `UPDATE conversations SET next_chunk = next_chunk + 1 WHERE id = $1 RETURNING next_chunk - 1`, conv).Scan(&chunk); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE messages SET is_active = false, chunk_id = $1 WHERE conv = $2 AND is_active AND id = ANY($3)`, chunk, conv, ids)
		if err != nil {
			return err
		}
		if n := tag.RowsAffected(); n != int64(len(ids)) {
			return fmt.Errorf("%w: %d of %d messages still active in %s", ErrConflict, n, len(ids), key)
		}
		var from, to int64
		if err := tx.QueryRow(ctx, `SELECT min(created_at), max(created_at) FROM messages WHERE conv = $1 AND id = ANY($2)`, conv, ids).Scan(&from, &to); err != nil {
			return err
		}
		sum.Level, sum.Sources, sum.Active = 1, []int64{chunk}, true
		sum.From, sum.To = time.UnixMilli(from).UTC(), time.UnixMilli(to).UTC()
		if err := pgInsertSummary(ctx, tx, conv, &sum, false); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE conversations SET turns_since_summary = greatest(0, turns_since_summary - $1), last_summary_at = $2 WHERE id = $3`,
			turnsSeen, sum.Created.UnixMilli(), conv)
		return err
	})
	if err != nil {
		return Summary{}, err
	}
	sum.Key = key
	return sum, nil
}

// pgInsertSummary stores sum in conversation conv and sets its ID: a new
// one, or with keepID its own when no summary holds it.
func pgInsertSummary(ctx context.Context, tx pgx.Tx, conv int64, sum *Summary, keepID bool) error {
	if sum.Created.IsZero() {
		sum.Created = time.Now()
	}
	sum.Created = ms(sum.Created)
	sum.Text = pgText(sum.Text)
	if sum.Tokens <= 0 {
		sum.Tokens = estimateTokens(sum.Text)
	}
	src, _ := json.Marshal(sum.Sources)
	id, err := pgKeepID(ctx, tx, "summaries", sum.ID, keepID)
	if err != nil {
		return err
	}
	return tx.QueryRow(ctx, pgInsertSum, id, conv, sum.Level, sum.Text, sum.Active, string(src),
		sum.From.UnixMilli(), sum.To.UnixMilli(), sum.Tokens, sum.Created.UnixMilli()).Scan(&sum.ID)
}

// Fold implements Backend.
func (p *Postgres) Fold(ctx context.Context, key pipeline.Key, ids []int64, sum Summary) (Summary, error) {
	if len(ids) == 0 || sum.Level < 2 {
		return Summary{}, fmt.Errorf("%w: fold needs sources and a level above 1", ErrConflict)
	}
	ids = uniqueIDs(ids)
	err := p.tx(ctx, func(tx pgx.Tx) error {
		conv, err := pgConv(ctx, tx, key)
		if err != nil {
			return err
		}
		if conv == 0 {
			return fmt.Errorf("folding in %s: %w", key, ErrNotFound)
		}
		tag, err := tx.Exec(ctx, `UPDATE summaries SET is_active = false WHERE conv = $1 AND is_active AND level = $2 AND id = ANY($3)`, conv, sum.Level-1, ids)
		if err != nil {
			return err
		}
		if n := tag.RowsAffected(); n != int64(len(ids)) {
			return fmt.Errorf("%w: %d of %d level-%d summaries still active in %s", ErrConflict, n, len(ids), sum.Level-1, key)
		}
		var from, to int64
		if err := tx.QueryRow(ctx, `SELECT min(from_at), max(to_at) FROM summaries WHERE conv = $1 AND id = ANY($2)`, conv, ids).Scan(&from, &to); err != nil {
			return err
		}
		sum.Sources, sum.Active = ids, true
		sum.From, sum.To = time.UnixMilli(from).UTC(), time.UnixMilli(to).UTC()
		return pgInsertSummary(ctx, tx, conv, &sum, false)
	})
	if err != nil {
		return Summary{}, err
	}
	sum.Key = key
	return sum, nil
}

func pgLoadSummaries(ctx context.Context, q pgQuerier, conv int64, key pipeline.Key, activeOnly bool) ([]Summary, error) {
	query := `SELECT ` + pgSumColumns + ` FROM summaries WHERE conv = $1`
	if activeOnly {
		query += ` AND is_active`
	}
	rows, err := q.Query(ctx, query+` ORDER BY id`, conv)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Summary
	for rows.Next() {
		var sm Summary
		var src string
		var from, to, created int64
		if err := rows.Scan(&sm.ID, &sm.Level, &sm.Text, &sm.Active, &src, &from, &to, &sm.Tokens, &created); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(src), &sm.Sources); err != nil {
			return nil, fmt.Errorf("summary %d: sources: %w", sm.ID, err)
		}
		sm.Key = key
		sm.From, sm.To, sm.Created = time.UnixMilli(from).UTC(), time.UnixMilli(to).UTC(), time.UnixMilli(created).UTC()
		out = append(out, sm)
	}
	return out, rows.Err()
}

// Summaries implements Backend.
func (p *Postgres) Summaries(ctx context.Context, key pipeline.Key, activeOnly bool) ([]Summary, error) {
	conv, err := pgConv(ctx, p.pool, key)
	if err != nil || conv == 0 {
		return nil, err
	}
	return pgLoadSummaries(ctx, p.pool, conv, key, activeOnly)
}

// Provenance implements Backend.
func (p *Postgres) Provenance(ctx context.Context, key pipeline.Key, summaryID int64) ([]Message, error) {
	conv, err := pgConv(ctx, p.pool, key)
	if err != nil {
		return nil, err
	}
	if conv == 0 {
		return nil, fmt.Errorf("summary %d in %s: %w", summaryID, key, ErrNotFound)
	}
	sums, err := pgLoadSummaries(ctx, p.pool, conv, key, false)
	if err != nil {
		return nil, err
	}
	chunks, ok := chunksOf(sums, summaryID)
	if !ok {
		return nil, fmt.Errorf("summary %d in %s: %w", summaryID, key, ErrNotFound)
	}
	if chunks == nil {
		chunks = []int64{}
	}
	rows, err := p.pool.Query(ctx, `SELECT `+pgMsgColumns+` FROM messages m WHERE m.conv = $1 AND m.chunk_id = ANY($2) ORDER BY m.id`, conv, chunks)
	if err != nil {
		return nil, err
	}
	return pgScanMessages(rows, key)
}

// Status implements Backend.
func (p *Postgres) Status(ctx context.Context, key pipeline.Key) (Status, error) {
	st := Status{ActiveByLevel: map[int]int{}}
	conv, err := pgConv(ctx, p.pool, key)
	if err != nil || conv == 0 {
		return st, err
	}
	var last int64
	err = p.pool.QueryRow(ctx, `SELECT turns_since_summary, last_summary_at,
		(SELECT count(*) FROM messages WHERE conv = $1), (SELECT count(*) FROM messages WHERE conv = $1 AND is_active)
		FROM conversations WHERE id = $1`, conv).Scan(&st.TurnsSinceSummary, &last, &st.Total, &st.Active)
	if err != nil {
		return st, err
	}
	if last > 0 {
		st.LastSummary = time.UnixMilli(last).UTC()
	}
	st.Archived = st.Total - st.Active
	rows, err := p.pool.Query(ctx, `SELECT level, is_active, count(*) FROM summaries WHERE conv = $1 GROUP BY level, is_active`, conv)
	if err != nil {
		return st, err
	}
	defer rows.Close()
	for rows.Next() {
		var level int
		var active bool
		var n int
		if err := rows.Scan(&level, &active, &n); err != nil {
			return st, err
		}
		if active {
			st.ActiveByLevel[level] += n
		}
		st.HighestLevel = max(st.HighestLevel, level)
	}
	return st, rows.Err()
}

// Settings implements Backend.
func (p *Postgres) Settings(ctx context.Context, owner string) (Settings, bool, error) {
	return pgSettings(ctx, p.pool, owner)
}

func pgSettings(ctx context.Context, q pgQuerier, owner string) (Settings, bool, error) {
	st := Settings{Owner: owner}
	var storage string
	var created, updated int64
	err := q.QueryRow(ctx, `SELECT memory_enabled, storage, threshold, facts_off, created_at, updated_at FROM owners WHERE owner = $1`, owner).
		Scan(&st.MemoryEnabled, &storage, &st.Threshold, &st.FactsOff, &created, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	st.Storage = Storage(storage)
	st.Created, st.Updated = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return st, true, nil
}

// PutSettings implements Backend.
func (p *Postgres) PutSettings(ctx context.Context, st Settings) error {
	return pgPutSettings(ctx, p.pool, st)
}

func pgPutSettings(ctx context.Context, q pgQuerier, st Settings) error {
	now := time.Now()
	if st.Created.IsZero() {
		st.Created = now
	}
	if st.Updated.IsZero() {
		st.Updated = now
	}
	_, err := q.Exec(ctx, `INSERT INTO owners(owner, memory_enabled, storage, threshold, facts_off, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT(owner) DO UPDATE SET memory_enabled = excluded.memory_enabled, storage = excluded.storage,
		threshold = excluded.threshold, facts_off = excluded.facts_off, updated_at = excluded.updated_at`,
		st.Owner, st.MemoryEnabled, string(st.Storage), st.Threshold, st.FactsOff, st.Created.UnixMilli(), st.Updated.UnixMilli())
	return err
}

// Remember implements Backend.
func (p *Postgres) Remember(ctx context.Context, owner string, m UserMemory, max int) error {
	return p.tx(ctx, func(tx pgx.Tx) error {
		_, err := pgRemember(ctx, tx, owner, m, max)
		return err
	})
}

func pgRemember(ctx context.Context, tx pgx.Tx, owner string, m UserMemory, max int) (bool, error) {
	// Serialize one owner's notes so the cap holds under concurrent writers.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('recall-memories:' || $1, 0))`, owner); err != nil {
		return false, err
	}
	m.Content = pgText(m.Content)
	var exists bool
	var count int
	if err := tx.QueryRow(ctx, `SELECT EXISTS(SELECT 1 FROM memories WHERE owner = $1 AND key = $2), (SELECT count(*) FROM memories WHERE owner = $1)`, owner, m.Key).Scan(&exists, &count); err != nil {
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
	_, err := tx.Exec(ctx, `INSERT INTO memories(owner, key, content, created_at, updated_at, author) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT(owner, key) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at, author = excluded.author`,
		owner, m.Key, m.Content, m.Created.UnixMilli(), m.Updated.UnixMilli(), pgText(m.Author))
	return !exists, err
}

// Memories implements Backend.
func (p *Postgres) Memories(ctx context.Context, owner string) ([]UserMemory, error) {
	return pgMemories(ctx, p.pool, owner)
}

func pgMemories(ctx context.Context, q pgQuerier, owner string) ([]UserMemory, error) {
	rows, err := q.Query(ctx, `SELECT key, content, created_at, updated_at, author FROM memories WHERE owner = $1 ORDER BY key COLLATE "C"`, owner)
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
func (p *Postgres) Forget(ctx context.Context, owner, key string) (bool, error) {
	tag, err := p.pool.Exec(ctx, `DELETE FROM memories WHERE owner = $1 AND key = $2`, owner, key)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() > 0, nil
}

func pgScanFacts(rows pgx.Rows) ([]Fact, error) {
	defer rows.Close()
	var out []Fact
	for rows.Next() {
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

// pgJSONStrings encodes a list for a JSONB column ([] for none).
func pgJSONStrings(ss []string) string {
	if ss == nil {
		return "null"
	}
	clean := make([]string, len(ss))
	for i, s := range ss {
		clean[i] = pgText(s)
	}
	b, _ := json.Marshal(clean)
	return string(b)
}

// AddFact implements Backend.
func (p *Postgres) AddFact(ctx context.Context, owner string, f Fact) (Fact, bool, error) {
	var merged bool
	err := p.tx(ctx, func(tx pgx.Tx) error {
		var err error
		f, merged, err = pgAddFact(ctx, tx, owner, f, false)
		return err
	})
	return f, merged, err
}

// pgAddFact stores f for owner, merged into a similar fact when there is
// one; a new fact gets a new ID, or with keepID its own when free.
func pgAddFact(ctx context.Context, tx pgx.Tx, owner string, f Fact, keepID bool) (Fact, bool, error) {
	// One owner's facts are merged one at a time (two near-identical facts
	// arriving together must merge, not both be stored).
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('recall-facts:' || $1, 0))`, owner); err != nil {
		return f, false, err
	}
	now := time.Now()
	if f.Created.IsZero() {
		f.Created = now
	}
	if f.Updated.IsZero() {
		f.Updated = f.Created
	}
	f.Created, f.Updated = ms(f.Created), ms(f.Updated)
	f.Content = pgText(f.Content)
	rows, err := tx.Query(ctx, `SELECT `+pgFactColumns+` FROM facts WHERE owner = $1 ORDER BY id`, owner)
	if err != nil {
		return f, false, err
	}
	existing, err := pgScanFacts(rows)
	if err != nil {
		return f, false, err
	}
	for _, old := range existing {
		if SimilarFacts(old.Content, f.Content) {
			m := mergeFact(old, f)
			_, err := tx.Exec(ctx, `UPDATE facts SET content = $1, norm = $2, sources = $3::jsonb, tags = $4::jsonb, updated_at = $5 WHERE id = $6`,
				m.Content, NormalizeFact(m.Content), pgJSONStrings(m.Sources), pgJSONStrings(m.Tags), m.Updated.UnixMilli(), m.ID)
			return m, true, err
		}
	}
	id, err := pgKeepID(ctx, tx, "facts", f.ID, keepID)
	if err != nil {
		return f, false, err
	}
	err = tx.QueryRow(ctx, `INSERT INTO facts(id, owner, conv_key, content, norm, sources, tags, created_at, updated_at)
		VALUES (coalesce($9, nextval(pg_get_serial_sequence('facts', 'id'))), $1, $2, $3, $4, $5::jsonb, $6::jsonb, $7, $8) RETURNING id`,
		owner, f.Key, f.Content, NormalizeFact(f.Content), pgJSONStrings(f.Sources), pgJSONStrings(f.Tags), f.Created.UnixMilli(), f.Updated.UnixMilli(), id).Scan(&f.ID)
	return f, false, err
}

// Facts implements Backend. An owner's facts are few (extraction merges
// near-duplicates): they are ranked in Go with the BM25 of the JSON backend,
// over the owner's facts.
func (p *Postgres) Facts(ctx context.Context, owner, text string, limit int) ([]Fact, error) {
	if limit <= 0 {
		limit = 20
	}
	phrases := fts.Phrases(text)
	if len(phrases) == 0 {
		rows, err := p.pool.Query(ctx, `SELECT `+pgFactColumns+` FROM facts WHERE owner = $1 ORDER BY updated_at DESC, id DESC LIMIT $2`, owner, limit)
		if err != nil {
			return nil, fmt.Errorf("listing facts: %w", err)
		}
		return pgScanFacts(rows)
	}
	rows, err := p.pool.Query(ctx, `SELECT `+pgFactColumns+` FROM facts WHERE owner = $1 ORDER BY id`, owner)
	if err != nil {
		return nil, fmt.Errorf("searching facts: %w", err)
	}
	facts, err := pgScanFacts(rows)
	if err != nil {
		return nil, fmt.Errorf("searching facts: %w", err)
	}
	docs := make([]*fts.Doc, len(facts))
	for i, f := range facts {
		docs[i] = &fts.Doc{Cols: [][]string{fts.Tokens(f.Content)}}
	}
	scores := fts.Rank(docs, phrases, nil, 0)
	fts.SortScores(scores, func(doc int) int64 { return facts[doc].ID })
	var out []Fact
	for _, s := range scores {
		if len(out) == limit {
			break
		}
		out = append(out, facts[s.Doc])
	}
	return out, nil
}

// ForgetFact implements Backend.
func (p *Postgres) ForgetFact(ctx context.Context, owner string, id int64) (bool, error) {
	tag, err := p.pool.Exec(ctx, `DELETE FROM facts WHERE owner = $1 AND id = $2`, owner, id)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() > 0, nil
}

// Owners implements Backend.
func (p *Postgres) Owners(ctx context.Context) ([]string, error) {
	rows, err := p.pool.Query(ctx, `SELECT owner FROM (SELECT owner FROM owners UNION SELECT owner FROM conversations
		UNION SELECT owner FROM memories UNION SELECT owner FROM facts) o ORDER BY owner COLLATE "C"`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// Ping checks that the database answers (the health check).
func (p *Postgres) Ping(ctx context.Context) error { return p.pool.Ping(ctx) }
