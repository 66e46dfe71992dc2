package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// lockTimeout bounds one statement on the lock session. The statements
// never run under the caller's context: pgx closes a connection whose
// query is cancelled, and that would release every lock of this process.
const lockTimeout = 10 * time.Second

// lockSession is the one connection, outside the pool, on which this
// process holds its session advisory locks (a summary's, while the model
// writes it). One connection for all of them: a connection per lock held
// took a PostgreSQL connection per summary in flight, and 200 users
// summarized at once ran the server out of connections ("too many clients
// already"). Outside the pool: a lock held while a model answers must not
// take a pooled connection the holder's own queries need.
type lockSession struct {
	mu   sync.Mutex
	conn *pgx.Conn       // nil until the first lock, and after it broke
	gen  int             // counts the connections opened: a lock belongs to one
	held map[string]bool // names held on conn by this process
}

// TryLock takes the session advisory lock name (per schema) on the lock
// session of this process, at once or not at all: ok is false when
// another session — another replica — holds it, or this process does
// already. unlock releases it. Should the process die first, the
// session's end releases it; should the session break, its locks go with
// it (they are not taken again) and the next TryLock opens a new one.
func (p *Postgres) TryLock(ctx context.Context, name string) (unlock func(), ok bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, fmt.Errorf("taking lock %s: %w", name, err)
	}
	l := &p.locks
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[name] {
		return nil, false, nil
	}
	for attempt := 0; ; attempt++ {
		if l.conn == nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockTimeout)
			conn, err := pgx.ConnectConfig(cctx, p.pool.Config().ConnConfig.Copy())
			cancel()
			if err != nil {
				return nil, false, fmt.Errorf("taking lock %s: %w", name, err)
			}
			l.conn, l.held = conn, map[string]bool{}
			l.gen++
		}
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockTimeout)
		err := l.conn.QueryRow(qctx, `SELECT pg_try_advisory_lock(hashtextextended(current_schema() || ':' || $1, 0))`, name).Scan(&ok)
		cancel()
		if err == nil {
			break
		}
		// The session broke (the server restarted, the network): its
		// locks are gone. A new one, once.
		l.dropLocked()
		if attempt > 0 {
			return nil, false, fmt.Errorf("taking lock %s: %w", name, err)
		}
	}
	if !ok {
		return nil, false, nil
	}
	l.held[name] = true
	gen := l.gen
	var once sync.Once
	return func() { once.Do(func() { l.unlock(ctx, name, gen) }) }, true, nil
}

// unlock releases name, taken on the session of generation gen.
func (l *lockSession) unlock(ctx context.Context, name string, gen int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil || l.gen != gen {
		return // that session is gone, and the lock with it
	}
	delete(l.held, name)
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockTimeout)
	defer cancel()
	var released bool
	err := l.conn.QueryRow(uctx, `SELECT pg_advisory_unlock(hashtextextended(current_schema() || ':' || $1, 0))`, name).Scan(&released)
	if err != nil {
		l.dropLocked() // what it held is released with it
	}
}

// dropLocked closes the session, releasing every lock on it.
func (l *lockSession) dropLocked() {
	if l.conn == nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = l.conn.Close(cctx)
	l.conn, l.held = nil, nil
}

// close releases the locks and ends the session (Postgres.Close). The
// locks are released before it returns: the server ends a closed session
// a moment later.
func (l *lockSession) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = l.conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`) // on failure, closing releases them
		cancel()
	}
	l.dropLocked()
}
