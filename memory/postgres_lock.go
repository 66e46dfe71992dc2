package memory

import (
	"context"
	"fmt"
	"time"
)

// TryLock takes the session advisory lock name (per schema) on a
// connection of its own, at once or not at all: ok is false when another
// session — another replica — holds it. unlock releases it and the
// connection; should the process die first, the connection's end releases
// it. Each held lock keeps one pooled connection.
func (p *Postgres) TryLock(ctx context.Context, name string) (unlock func(), ok bool, err error) {
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("taking lock %s: %w", name, err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended(current_schema() || ':' || $1, 0))`, name).Scan(&ok); err != nil {
		conn.Release()
		return nil, false, fmt.Errorf("taking lock %s: %w", name, err)
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	return func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock(hashtextextended(current_schema() || ':' || $1, 0))`, name); err != nil {
			// The lock may still be held by the session: close it.
			_ = conn.Conn().Close(uctx)
		}
		conn.Release()
	}, true, nil
}
