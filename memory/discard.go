package memory

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/recallbot/recall/pipeline"
)

const sqlDiscard = `DELETE FROM messages WHERE conv = ? AND platform_id = ? AND platform_id <> '' AND role = 'user' AND is_active = 1
	AND NOT EXISTS (SELECT 1 FROM messages a WHERE a.conv = messages.conv AND a.reply_to = messages.platform_id AND a.role = 'assistant')`

// Discard removes a user message that a channel stored on arrival
// (chat.Intake) but that the bot refused before answering it (a rate limit,
// the daily quota), so that it is neither in the history nor answered after
// a restart. Only an active, unanswered user message goes, with its search
// entry; anything else is left alone and removed is false. It runs in the
// owner's write order, after the writes queued before it.
func (s *Store) Discard(ctx context.Context, key pipeline.Key, platformID string) (removed bool, err error) {
	if platformID == "" {
		return false, nil
	}
	var gone bool // written by the writer goroutine; read only once do returned its result
	err = s.do(ctx, key.Owner(), func(ctx context.Context, b Backend) error {
		var err error
		switch b := b.(type) {
		case *SQLite:
			gone, err = b.discard(ctx, key, platformID)
		case *JSON:
			gone, err = b.discard(ctx, key, platformID)
		case *Postgres:
			gone, err = b.discard(ctx, key, platformID)
		default:
			err = fmt.Errorf("discarding a message: backend %T", b)
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("discarding message %s of %s: %w", platformID, key, err)
	}
	return gone, nil
}

func (s *SQLite) discard(ctx context.Context, key pipeline.Key, platformID string) (bool, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		conv, err := convID(ctx, tx, key)
		if err != nil || conv == 0 {
			return err
		}
		res, err := tx.ExecContext(ctx, sqlDiscard, conv, platformID)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n > 0, err
}

func (j *JSON) discard(ctx context.Context, key pipeline.Key, platformID string) (bool, error) {
	removed := false
	err := j.update(ctx, key.Owner(), func(f *jsonFile) (bool, error) {
		removed = false
		c := f.conv(key)
		if c == nil {
			return false, nil
		}
		at := -1
		for i, m := range c.Messages {
			if m.Role == RoleAssistant && m.ReplyTo == platformID {
				return false, nil // answered: it stays
			}
			if m.Role == RoleUser && m.PlatformID == platformID && m.Active {
				at = i
			}
		}
		if at < 0 {
			return false, nil
		}
		c.Messages = slices.Delete(c.Messages, at, at+1) // the clone's own slice
		removed = true
		return true, nil
	})
	if err != nil {
		return false, err
	}
	if removed {
		j.mu.Lock()
		o := j.owners[key.Owner()]
		j.mu.Unlock()
		if o != nil {
			o.resetCache() // the text leaves the search cache too
		}
	}
	return removed, nil
}
