package memory

import (
	"context"
	"fmt"
	"time"
)

// Token usage per user and UTC day (migration 0002), for the daily quota
// (limits.Quota) and /stats. It lives in SQLite whatever backend an owner
// chose. A row is one user's day: a few bytes a day per active user, so old
// days are kept (they cost nothing worth pruning).

const (
	sqlAddUsage = `INSERT INTO usage(user_id, day, tokens) VALUES (?, ?, ?)
		ON CONFLICT(user_id, day) DO UPDATE SET tokens = tokens + excluded.tokens`
	sqlUsage    = `SELECT coalesce(sum(tokens), 0) FROM usage WHERE user_id = ? AND day = ?`
	sqlUsageDay = `SELECT coalesce(sum(tokens), 0), count(*) FROM usage WHERE day = ?`
)

// UsageDay is how a day is written in the usage table: the UTC date of t.
func UsageDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// AddUsage adds tokens to what the user used on the UTC day of at. Tokens
// <= 0 change nothing.
func (s *Store) AddUsage(ctx context.Context, userID string, at time.Time, tokens int) error {
	if tokens <= 0 {
		return nil
	}
	if s.pg != nil {
		if err := s.pg.addUsage(ctx, userID, UsageDay(at), tokens); err != nil {
			return fmt.Errorf("recording %d tokens for %s: %w", tokens, userID, err)
		}
		return nil
	}
	if _, err := s.sqlite.wd().ExecContext(ctx, sqlAddUsage, userID, UsageDay(at), tokens); err != nil {
		return fmt.Errorf("recording %d tokens for %s: %w", tokens, userID, err)
	}
	return nil
}

// Usage returns the tokens the user used on the UTC day of at.
func (s *Store) Usage(ctx context.Context, userID string, at time.Time) (int, error) {
	var n int
	var err error
	if s.pg != nil {
		n, err = s.pg.usage(ctx, userID, UsageDay(at))
	} else {
		err = s.sqlite.rd.QueryRowContext(ctx, sqlUsage, userID, UsageDay(at)).Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("reading the token usage of %s: %w", userID, err)
	}
	return n, nil
}

// UsageOn returns the tokens used on the UTC day of at by everyone, and by
// how many users.
func (s *Store) UsageOn(ctx context.Context, at time.Time) (tokens int64, users int, err error) {
	if s.pg != nil {
		tokens, users, err = s.pg.usageOn(ctx, UsageDay(at))
	} else {
		err = s.sqlite.r.QueryRowContext(ctx, sqlUsageDay, UsageDay(at)).Scan(&tokens, &users)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("reading the token usage of %s: %w", UsageDay(at), err)
	}
	return tokens, users, nil
}
