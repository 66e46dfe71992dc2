package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// Platform messages handled without a stored reply (migration 0003): a
// command, an answer to a question, a turn that ended with a notice. They
// count as answered for the dedupe stage (Lookup) and after a restart
// (Unanswered).

const (
	sqlMarkHandled = `INSERT INTO handled(conv_key, platform_id, at) VALUES (?, ?, ?)
		ON CONFLICT(conv_key, platform_id) DO NOTHING`
	sqlHandled      = `SELECT count(*) FROM handled WHERE conv_key = ? AND platform_id = ?`
	sqlPruneHandled = `DELETE FROM handled WHERE at < ?`
)

// handledKeep is how long a handled id is remembered: longer than any
// platform redelivers an update (Telegram keeps them 24 hours).
const handledKeep = 30 * 24 * time.Hour

// MarkHandled records durably that the platform message platformID of key
// was handled. first is false when it was recorded already: a redelivery,
// or another replica that took it first. An empty platformID records
// nothing and reports first.
func (s *Store) MarkHandled(ctx context.Context, key pipeline.Key, platformID string) (first bool, err error) {
	if platformID == "" {
		return true, nil
	}
	if s.pg != nil {
		first, err := s.pg.markHandled(ctx, key.String(), platformID, time.Now())
		if err != nil {
			return false, fmt.Errorf("recording message %s of %s as handled: %w", platformID, key, err)
		}
		return first, nil
	}
	res, err := s.sqlite.wd().ExecContext(ctx, sqlMarkHandled, key.String(), platformID, time.Now().UnixMilli())
	if err != nil {
		return false, fmt.Errorf("recording message %s of %s as handled: %w", platformID, key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("recording message %s of %s as handled: %w", platformID, key, err)
	}
	return n > 0, nil
}

// Handled reports whether MarkHandled recorded the message.
func (s *Store) Handled(ctx context.Context, key pipeline.Key, platformID string) (bool, error) {
	if platformID == "" {
		return false, nil
	}
	if s.pg != nil {
		ok, err := s.pg.handled(ctx, key.String(), platformID)
		if err != nil {
			return false, fmt.Errorf("looking up message %s of %s: %w", platformID, key, err)
		}
		return ok, nil
	}
	var n int
	if err := s.sqlite.rd.QueryRowContext(ctx, sqlHandled, key.String(), platformID).Scan(&n); err != nil {
		return false, fmt.Errorf("looking up message %s of %s: %w", platformID, key, err)
	}
	return n > 0, nil
}

// pruneHandled forgets handled ids older than handledKeep.
func (s *SQLite) pruneHandled(ctx context.Context, now time.Time) error {
	if _, err := s.w.ExecContext(ctx, sqlPruneHandled, now.Add(-handledKeep).UnixMilli()); err != nil {
		return fmt.Errorf("pruning handled message ids: %w", err)
	}
	return nil
}
