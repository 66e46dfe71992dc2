package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// TryLock takes the session advisory lock name (per schema) on a
// connection of its own, outside the pool (a lock held while a model
// answers must not take a pooled connection the holder's own queries
// need), at once or not at all: ok is false when another session —
// another replica — holds it. unlock closes the connection, which releases
// the lock; should the process die first, the connection's end releases it.
func (p *Postgres) TryLock(ctx context.Context, name string) (unlock func(), ok bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, p.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, false, fmt.Errorf("taking lock %s: %w", name, err)
	}
	closeConn := func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = conn.Close(cctx) // the lock goes with the session
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended(current_schema() || ':' || $1, 0))`, name).Scan(&ok); err != nil {
		closeConn()
		return nil, false, fmt.Errorf("taking lock %s: %w", name, err)
	}
	if !ok {
		closeConn()
		return nil, false, nil
	}
	return closeConn, true, nil
}
