package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// UpdateRateWindow reads user's rate-limit window (the times of the
// accepted messages in the current window, oldest first, and whether a
// refusal was told since), lets update change it, and stores the result —
// under the row's lock, so the replicas' rate limits count one window per
// user (limits.RateWindows).
func (p *Postgres) UpdateRateWindow(ctx context.Context, user string, update func(times []time.Time, told bool) ([]time.Time, bool)) error {
	err := p.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO rate_windows(user_id, times) VALUES ($1, '{}') ON CONFLICT (user_id) DO NOTHING`, user); err != nil {
			return err
		}
		var (
			times []time.Time
			told  bool
		)
		if err := tx.QueryRow(ctx, `SELECT times, told FROM rate_windows WHERE user_id = $1 FOR UPDATE`, user).Scan(&times, &told); err != nil {
			return err
		}
		times, told = update(times, told)
		if len(times) == 0 && !told {
			_, err := tx.Exec(ctx, `DELETE FROM rate_windows WHERE user_id = $1`, user)
			return err
		}
		if times == nil {
			times = []time.Time{}
		}
		_, err := tx.Exec(ctx, `UPDATE rate_windows SET times = $2, told = $3 WHERE user_id = $1`, user, times, told)
		return err
	})
	if err != nil {
		return fmt.Errorf("updating the rate window of %s: %w", user, err)
	}
	return nil
}
