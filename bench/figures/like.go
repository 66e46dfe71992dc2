package figures

import (
	"context"
	"database/sql"
	"net/url"
	"strconv"
	"strings"
	"time"

	_ "github.com/ncruces/go-sqlite3/driver" // the "sqlite3" driver memory uses

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// OpenReader opens the database at path read-only, with the pragmas of
// memory's reader pool, for LikeSearch. Open the store (memory.Open or
// memory.OpenSQLite) first: it registers the SQLite extensions the schema
// uses.
func OpenReader(path string) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(wal)")
	q.Add("_pragma", "synchronous(normal)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "query_only(1)")
	db, err := sql.Open("sqlite3", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	return db, nil
}

// LikeSearch is seed 002's archive search, as one SQL query: every keyword
// (memory.Terms of the text) is a `text LIKE '%kw%'`, the score is how many
// keywords a message contains, ties go to the most recent. The limit and
// token budget are applied as memory's search does (hits in rank order while
// they fit).
func LikeSearch(ctx context.Context, db *sql.DB, key pipeline.Key, q memory.Query) ([]memory.Hit, error) {
	terms := memory.Terms(q.Text)
	if len(terms) == 0 {
		return nil, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	var score, filter strings.Builder
	args := []any{key.String()}
	for i, t := range terms {
		if i > 0 {
			score.WriteString(" + ")
			filter.WriteString(" OR ")
		}
		p := "?" + strconv.Itoa(i+2)
		score.WriteString("(m.text LIKE " + p + ")")
		filter.WriteString("m.text LIKE " + p)
		args = append(args, "%"+t+"%")
	}
	archived := ""
	if q.ArchivedOnly {
		archived = " AND m.is_active = 0"
	}
	query := `SELECT ` + hitColumns + `, ` +
		score.String() + ` AS score FROM messages m
		WHERE m.conv = (SELECT id FROM conversations WHERE key = ?1)` + archived + ` AND (` + filter.String() + `)
		ORDER BY score DESC, m.id DESC LIMIT ` + strconv.Itoa(limit+len(q.Exclude))
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return scanHits(rows, key, q)
}

// scanHits reads the hits of a baseline's query, whose columns are
// hitColumns and a score, in rank order, and applies q's token budget as
// memory's search does.
func scanHits(rows *sql.Rows, key pipeline.Key, q memory.Query) ([]memory.Hit, error) {
	defer rows.Close()
	var hits []memory.Hit
	for rows.Next() {
		m := memory.Message{Key: key}
		var role string
		var at int64
		var active int
		var score float64
		if err := rows.Scan(&m.ID, &role, &m.SenderID, &m.SenderName, &m.PlatformID, &m.ReplyTo, &m.Text, &at, &m.Tokens, &active, &m.ChunkID, &score); err != nil {
			return nil, err
		}
		m.Role, m.Time, m.Active = memory.Role(role), time.UnixMilli(at).UTC(), active == 1
		hits = append(hits, memory.Hit{Message: m, Score: score})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return memory.BudgetHits(hits, q), nil
}

// hitColumns are the message columns scanHits reads, of messages m.
const hitColumns = `m.id, m.role, m.sender_id, m.sender_name, m.platform_id, m.reply_to, m.text, m.created_at, m.tokens, m.is_active, m.chunk_id`
