package figures

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/recallbot/recall/bench/chattext"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// IngestRows are n messages: user+assistant exchanges spread round-robin over
// convs conversations.
func IngestRows(convs, n int) []memory.Message {
	g := chattext.NewMessages(11)
	names := chattext.Names
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	msgs := make([]memory.Message, 0, n+1)
	for i := 0; len(msgs) < n; i++ {
		key := pipeline.Key{Channel: "telegram", Chat: strconv.Itoa(500 + i%convs)}
		at := t0.Add(time.Duration(i) * time.Second)
		pid := strconv.Itoa(i)
		people := []string{names[i%convs%len(names)], names[(i%convs+7)%len(names)]}
		msgs = append(msgs,
			memory.Message{Key: key, Role: memory.RoleUser, SenderID: "7", SenderName: people[0], PlatformID: pid, Text: g.Message(false, people), Time: at},
			memory.Message{Key: key, Role: memory.RoleAssistant, PlatformID: "a" + pid, ReplyTo: pid, Text: g.Message(true, people), Time: at.Add(time.Second)})
	}
	return msgs[:n]
}

// IngestResult is the time each way of storing the same messages took.
type IngestResult struct {
	Messages int           // per way and round
	Writer   time.Duration // Store.Enqueue of every exchange, then Flush
	Raw      time.Duration // prepared INSERT per row, 1,000 rows per transaction
	Batch    time.Duration // one INSERT … SELECT FROM json_each per 1,000 rows
}

// Rate is messages per second over d for rounds rounds.
func (r IngestResult) Rate(d time.Duration, rounds int) float64 {
	return float64(r.Messages*rounds) / d.Seconds()
}

// Ingest stores msgs into fresh databases in dir (os.TempDir() when ""),
// rounds times each way: through the write-behind writer, and with raw
// batched INSERTs into the same schema (the FTS triggers fire for both),
// alternating which goes first. The messages must be whole exchanges.
func Ingest(ctx context.Context, dir string, msgs []memory.Message, rounds int) (IngestResult, error) {
	res := IngestResult{Messages: len(msgs)}
	fresh := func(f func(context.Context, string, []memory.Message) (time.Duration, error), into *time.Duration) error {
		d, err := os.MkdirTemp(dir, "recall-ingest-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		took, err := f(ctx, d, msgs)
		*into += took
		return err
	}
	for i := 0; i < rounds; i++ {
		ways := []func() error{
			func() error { return fresh(ingestWriter, &res.Writer) },
			func() error { return fresh(ingestRaw, &res.Raw) },
			func() error { return fresh(ingestBatch, &res.Batch) },
		}
		for j := range ways {
			if err := ways[(i+j)%len(ways)](); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

func countMessages(ctx context.Context, db *sql.DB, want int) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM messages`).Scan(&n); err != nil {
		return err
	}
	if n != want {
		return fmt.Errorf("stored %d messages, want %d", n, want)
	}
	return nil
}

// ingestWriter stores msgs through the write-behind writer and returns the
// time from the first Enqueue to the end of Flush.
func ingestWriter(ctx context.Context, dir string, msgs []memory.Message) (time.Duration, error) {
	st, err := memory.Open(ctx, memory.Options{Dir: dir, QueueSize: len(msgs) + 1})
	if err != nil {
		return 0, err
	}
	defer st.Close(ctx)
	start := time.Now()
	for i := 0; i+1 < len(msgs); i += 2 {
		if err := st.Enqueue(msgs[i], msgs[i+1]); err != nil {
			return 0, err
		}
	}
	if err := st.Flush(ctx); err != nil {
		return 0, err
	}
	d := time.Since(start)
	if err := countMessages(ctx, st.SQLite().DB(), len(msgs)); err != nil {
		return 0, fmt.Errorf("writer: %w", err)
	}
	return d, nil
}

func ingestRaw(ctx context.Context, dir string, msgs []memory.Message) (time.Duration, error) {
	return ingestRawWith(ctx, dir, msgs, false)
}

func ingestBatch(ctx context.Context, dir string, msgs []memory.Message) (time.Duration, error) {
	return ingestRawWith(ctx, dir, msgs, true)
}

// sqlInsertJSON inserts the rows of a JSON array of arrays in one statement.
const sqlInsertJSON = `INSERT INTO messages(conv, role, sender_id, sender_name, platform_id, reply_to, text, created_at, tokens, is_active, chunk_id)
	SELECT value->>'$[0]', value->>'$[1]', value->>'$[2]', value->>'$[3]', value->>'$[4]', value->>'$[5]',
		value->>'$[6]', value->>'$[7]', value->>'$[8]', value->>'$[9]', value->>'$[10]'
	FROM json_each(?) ORDER BY key`

// ingestRawWith stores msgs with plain INSERTs: conversations first, then
// per 1,000 messages one transaction with a prepared statement (or, with
// oneStatement, one INSERT … SELECT FROM json_each: FTS5 flushes once per
// statement, the fastest raw insert we know).
func ingestRawWith(ctx context.Context, dir string, msgs []memory.Message, oneStatement bool) (time.Duration, error) {
	s, err := memory.OpenSQLite(ctx, filepath.Join(dir, "recall.db"))
	if err != nil {
		return 0, err
	}
	defer s.Close()
	db := s.DB()
	start := time.Now()
	convs := map[pipeline.Key]int64{}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	for _, m := range msgs {
		if _, ok := convs[m.Key]; ok {
			continue
		}
		var id int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO conversations(key, owner, created_at) VALUES (?, ?, ?) RETURNING id`,
			m.Key.String(), m.Key.Owner(), time.Now().UnixMilli()).Scan(&id); err != nil {
			tx.Rollback()
			return 0, err
		}
		convs[m.Key] = id
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	for off := 0; off < len(msgs); off += 1000 {
		batch := msgs[off:min(off+1000, len(msgs))]
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return 0, err
		}
		if oneStatement {
			rows := make([][]any, 0, len(batch))
			for _, m := range batch {
				rows = append(rows, []any{convs[m.Key], string(m.Role), m.SenderID, m.SenderName, m.PlatformID, m.ReplyTo,
					m.Text, m.Time.UnixMilli(), estimateTokens(m.Text), 1, 0})
			}
			doc, _ := json.Marshal(rows)
			if _, err := tx.ExecContext(ctx, sqlInsertJSON, string(doc)); err != nil {
				tx.Rollback()
				return 0, err
			}
		} else {
			ins, err := tx.PrepareContext(ctx, `INSERT INTO messages(conv, role, sender_id, sender_name, platform_id, reply_to, text, created_at, tokens, is_active, chunk_id)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0)`)
			if err != nil {
				tx.Rollback()
				return 0, err
			}
			for _, m := range batch {
				if _, err := ins.ExecContext(ctx, convs[m.Key], string(m.Role), m.SenderID, m.SenderName, m.PlatformID, m.ReplyTo,
					m.Text, m.Time.UnixMilli(), estimateTokens(m.Text)); err != nil {
					ins.Close()
					tx.Rollback()
					return 0, err
				}
			}
			ins.Close()
		}
		if err := tx.Commit(); err != nil {
			return 0, err
		}
	}
	d := time.Since(start)
	if err := countMessages(ctx, db, len(msgs)); err != nil {
		return 0, fmt.Errorf("raw insert: %w", err)
	}
	return d, nil
}
