package figures

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strconv"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// The stock FTS5 baseline: what a plain implementation of archive search
// would be. One FTS5 table over every message of the store, SQLite's own
// 'porter unicode61' tokenizer, its own bm25() with the text weighted 1.0 and
// the sender's name 0.5, and the conversation filter a join on the messages
// table, as if the table were external-content on messages (it is
// contentless, in a database of its own beside the fixture, attached to the
// readers, so the cached fixture is never changed). Unlike ours its
// statistics (N, n, avgdl) cover the whole store, not the one conversation.

// stockSchema is the stock index's table.
const stockSchema = `CREATE VIRTUAL TABLE messages_fts USING fts5(text, sender_name, content='', tokenize='porter unicode61')`

// StockIndex returns the path of the stock FTS5 index of the fixture in
// fixtureDir (BuildStockIndex, once, cached under name). Open the store
// first: it registers FTS5 with the driver.
func StockIndex(ctx context.Context, fixtureDir, name string, progress io.Writer) (string, error) {
	dir, err := cachedDB(ctx, name, "the stock FTS5 index of "+filepath.Base(fixtureDir), progress, func(ctx context.Context, path string) error {
		return BuildStockIndex(ctx, filepath.Join(fixtureDir, "recall.db"), path)
	})
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "recall.db"), nil
}

// BuildStockIndex writes at path the stock FTS5 index of every message of
// the store at src.
func BuildStockIndex(ctx context.Context, src, path string) error {
	db, err := sql.Open("sqlite3", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=journal_mode(off)&_pragma=synchronous(off)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	from := "file:" + (&url.URL{Path: src}).EscapedPath() + "?mode=ro"
	for _, q := range []string{stockSchema,
		`ATTACH DATABASE '` + from + `' AS src`,
		`INSERT INTO messages_fts(rowid, text, sender_name) SELECT id, text, sender_name FROM src.messages ORDER BY id`,
		`INSERT INTO messages_fts(messages_fts) VALUES ('optimize')`,
		`DETACH DATABASE src`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("building the stock index: %.60s: %w", q, err)
		}
	}
	return nil
}

// OpenStockReader opens the fixture at path read-only (OpenReader) with the
// stock index at stockPath attached to every connection as "stock".
func OpenStockReader(path, stockPath string) (*sql.DB, error) {
	db, err := OpenReader(path)
	if err != nil {
		return nil, err
	}
	// One connection: the attachment is per connection.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	stock := "file:" + (&url.URL{Path: stockPath}).EscapedPath() + "?mode=ro"
	if _, err := db.Exec(`ATTACH DATABASE '` + stock + `' AS stock`); err != nil {
		db.Close()
		return nil, fmt.Errorf("attaching the stock index: %w", err)
	}
	return db, nil
}

// StockSearch is archive search on the stock index (db from
// OpenStockReader): the query's terms (memory.Terms) ORed as FTS5 phrases
// (the MATCH expression ours gives SQLite for facts), ranked by stock
// bm25(), filtered to key's conversation by a join, ties to the most recent.
// Limit and token budget as memory applies them.
func StockSearch(ctx context.Context, db *sql.DB, key pipeline.Key, q memory.Query) ([]memory.Hit, error) {
	match := memory.MatchExpr(q.Text)
	if match == "" {
		return nil, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	archived := ""
	if q.ArchivedOnly {
		archived = " AND m.is_active = 0"
	}
	query := `SELECT ` + hitColumns + `, -bm25(messages_fts, 1.0, 0.5) AS score
		FROM stock.messages_fts JOIN messages m ON m.id = messages_fts.rowid
		WHERE messages_fts MATCH ?2 AND m.conv = (SELECT id FROM conversations WHERE key = ?1)` + archived + `
		ORDER BY bm25(messages_fts, 1.0, 0.5), m.id DESC LIMIT ` + strconv.Itoa(limit+len(q.Exclude))
	rows, err := db.QueryContext(ctx, query, key.String(), match)
	if err != nil {
		return nil, err
	}
	return scanHits(rows, key, q)
}
