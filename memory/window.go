package memory

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// While an owner's memory is off (/summary_off) nothing of theirs is kept
// beyond the conversation's recent window: once a message written since
// memory went off is older than the last keep exchanges, it is deleted —
// with its search entry — not archived. What was stored before memory went
// off is left alone (/summary_off deletes nothing), and so is anything
// archived.

// sqlTrimWindow deletes the active, unarchived messages of a conversation
// written since a time that come before its keep-th newest user message.
const sqlTrimWindow = `DELETE FROM messages WHERE conv = ? AND is_active = 1 AND chunk_id = 0 AND created_at >= ?
	AND id < coalesce((SELECT id FROM messages WHERE conv = ? AND role = 'user' ORDER BY id DESC LIMIT 1 OFFSET ?), 0)`

// TrimToWindow deletes the messages of key written at or after since that
// are older than the conversation's last keep exchanges (counted by user
// messages), and reports how many went. It runs in the owner's write
// order, after the writes queued before it. keep < 1 keeps one exchange.
func (s *Store) TrimToWindow(ctx context.Context, key pipeline.Key, since time.Time, keep int) (int, error) {
	keep = max(keep, 1)
	var n int // written by the writer goroutine; read only once do returned
	err := s.do(ctx, key.Owner(), func(ctx context.Context, b Backend) error {
		var err error
		switch b := b.(type) {
		case *SQLite:
			n, err = b.trimWindow(ctx, key, since, keep)
		case *JSON:
			n, err = b.trimWindow(ctx, key, since, keep)
		case *Postgres:
			n, err = b.trimWindow(ctx, key, since, keep)
		default:
			err = fmt.Errorf("backend %T", b)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("keeping only the recent window of %s: %w", key, err)
	}
	return n, nil
}

func (s *SQLite) trimWindow(ctx context.Context, key pipeline.Key, since time.Time, keep int) (int, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		conv, err := convID(ctx, tx, key)
		if err != nil || conv == 0 {
			return err
		}
		res, err := tx.ExecContext(ctx, sqlTrimWindow, conv, since.UnixMilli(), conv, keep-1)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

func (j *JSON) trimWindow(ctx context.Context, key pipeline.Key, since time.Time, keep int) (int, error) {
	removed := 0
	err := j.update(ctx, key.Owner(), func(f *jsonFile) (bool, error) {
		removed = 0
		c := f.conv(key)
		if c == nil {
			return false, nil
		}
		start, users := -1, 0 // the index of the keep-th newest user message
		for i := len(c.Messages) - 1; i >= 0; i-- {
			if c.Messages[i].Role == RoleUser {
				if users++; users == keep {
					start = i
					break
				}
			}
		}
		if start <= 0 {
			return false, nil
		}
		kept := make([]Message, 0, len(c.Messages))
		for i, m := range c.Messages {
			if i < start && m.Active && m.ChunkID == 0 && !m.Time.Before(since) {
				removed++
				continue
			}
			kept = append(kept, m)
		}
		if removed == 0 {
			return false, nil
		}
		c.Messages = slices.Clip(kept)
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	if removed > 0 {
		j.mu.Lock()
		o := j.owners[key.Owner()]
		j.mu.Unlock()
		if o != nil {
			o.resetCache() // the text leaves the search cache too
		}
	}
	return removed, nil
}
