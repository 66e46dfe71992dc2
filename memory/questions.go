package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// Questions a command asked and waits for an answer to (migration 0007, PostgreSQL 0010):
// one per conversation, kept so that a restart does not lose them.

// Question is a command's question waiting for its answer in a
// conversation. Kind and Args are the command's own data: what step
// answers it, and what was chosen before.
type Question struct {
	Key     pipeline.Key
	Asked   string // sender id of the member who was asked
	Kind    string
	Args    string
	Expires time.Time
}

// questionsKeep is how long past its expiry a question is remembered: an
// answer that late is told the question expired, instead of going to the
// model as chat.
const questionsKeep = 24 * time.Hour

const (
	sqlPutQuestion = `INSERT INTO questions(conv_key, asked, kind, args, expires) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(conv_key) DO UPDATE SET asked = excluded.asked, kind = excluded.kind, args = excluded.args, expires = excluded.expires`
	sqlDeleteQuestion = `DELETE FROM questions WHERE conv_key = ?`
	sqlQuestions      = `SELECT conv_key, asked, kind, args, expires FROM questions WHERE expires >= ?`
	sqlPruneQuestions = `DELETE FROM questions WHERE expires < ?`

	pgPutQuestion = `INSERT INTO questions(conv_key, asked, kind, args, expires) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT(conv_key) DO UPDATE SET asked = excluded.asked, kind = excluded.kind, args = excluded.args, expires = excluded.expires`
	pgDeleteQuestion = `DELETE FROM questions WHERE conv_key = $1`
	pgQuestions      = `SELECT conv_key, asked, kind, args, expires FROM questions WHERE expires >= $1`
)

// PutQuestion records q as its conversation's question, replacing the one
// before.
func (s *Store) PutQuestion(ctx context.Context, q Question) error {
	var err error
	if s.pg != nil {
		_, err = s.pg.pool.Exec(ctx, pgPutQuestion, q.Key.String(), q.Asked, q.Kind, q.Args, q.Expires.UnixMilli())
	} else {
		_, err = s.sqlite.wd().ExecContext(ctx, sqlPutQuestion, q.Key.String(), q.Asked, q.Kind, q.Args, q.Expires.UnixMilli())
	}
	if err != nil {
		return fmt.Errorf("recording the question asked in %s: %w", q.Key, err)
	}
	return nil
}

// DeleteQuestion forgets the conversation's question (answered, cancelled,
// or abandoned for another command).
func (s *Store) DeleteQuestion(ctx context.Context, key pipeline.Key) error {
	var err error
	if s.pg != nil {
		_, err = s.pg.pool.Exec(ctx, pgDeleteQuestion, key.String())
	} else {
		_, err = s.sqlite.wd().ExecContext(ctx, sqlDeleteQuestion, key.String())
	}
	if err != nil {
		return fmt.Errorf("forgetting the question asked in %s: %w", key, err)
	}
	return nil
}

// Questions returns the questions waiting for an answer, and those expired
// less than a day before now (an answer to one is told it expired).
func (s *Store) Questions(ctx context.Context, now time.Time) ([]Question, error) {
	since := now.Add(-questionsKeep).UnixMilli()
	var rows questionRows
	if s.pg != nil {
		r, err := s.pg.pool.Query(ctx, pgQuestions, since)
		if err != nil {
			return nil, fmt.Errorf("reading the questions waiting for an answer: %w", err)
		}
		defer r.Close()
		rows = r
	} else {
		r, err := s.sqlite.rd.QueryContext(ctx, sqlQuestions, since)
		if err != nil {
			return nil, fmt.Errorf("reading the questions waiting for an answer: %w", err)
		}
		defer r.Close()
		rows = r
	}
	out, err := scanQuestions(rows)
	if err != nil {
		return nil, fmt.Errorf("reading the questions waiting for an answer: %w", err)
	}
	return out, nil
}

// questionRows is what both backends' rows offer (pgx.Rows, *sql.Rows).
type questionRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// scanQuestions reads rows of (key, asked, kind, args, expires).
func scanQuestions(rows questionRows) ([]Question, error) {
	var out []Question
	for rows.Next() {
		var key, asked, kind, args string
		var expires int64
		if err := rows.Scan(&key, &asked, &kind, &args, &expires); err != nil {
			return nil, err
		}
		k, err := pipeline.ParseKey(key)
		if err != nil {
			return nil, err
		}
		out = append(out, Question{Key: k, Asked: asked, Kind: kind, Args: args, Expires: time.UnixMilli(expires)})
	}
	return out, rows.Err()
}

// pruneQuestions forgets questions a day past their expiry.
func (s *SQLite) pruneQuestions(ctx context.Context, now time.Time) error {
	if _, err := s.w.ExecContext(ctx, sqlPruneQuestions, now.Add(-questionsKeep).UnixMilli()); err != nil {
		return fmt.Errorf("pruning expired questions: %w", err)
	}
	return nil
}
