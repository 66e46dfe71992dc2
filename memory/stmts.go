package memory

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// stmtCacheMax bounds the statements a pool keeps; the package's queries
// are constants, far fewer than this.
const stmtCacheMax = 128

// stmtCache owns a pool's prepared statements, by SQL text. database/sql
// prepares a statement once per connection and reuses it, where a plain
// query parses and plans its SQL on every call: a tenth of a turn's CPU.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, m: map[string]*sql.Stmt{}}
}

// prepare prepares queries now (the writer's: its one connection cannot
// prepare while a transaction holds it).
func (c *stmtCache) prepare(ctx context.Context, queries ...string) error {
	for _, q := range queries {
		if _, err := c.get(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// get returns the statement of query, preparing it when it is new; nil
// (and no error) when the cache is full.
func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	if len(c.m) >= stmtCacheMax {
		return nil, nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.m[query] = st
	return st, nil
}

// lookup returns the statement of query when it is prepared.
func (c *stmtCache) lookup(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[query]
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for q, st := range c.m {
		errs = append(errs, st.Close())
		delete(c.m, q)
	}
	return errors.Join(errs...)
}

// cachedDB is a queryer on a pool that prepares each query once.
type cachedDB struct{ c *stmtCache }

func (d cachedDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := d.c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return d.c.db.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

func (d cachedDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := d.c.get(ctx, query)
	if err != nil || st == nil {
		return d.c.db.QueryRowContext(ctx, query, args...) // reports the error
	}
	return st.QueryRowContext(ctx, args...)
}

func (d cachedDB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := d.c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return d.c.db.ExecContext(ctx, query, args...)
	}
	return st.ExecContext(ctx, args...)
}

// cachedTx is a queryer on a transaction that uses the statements prepared
// ahead on its pool, and runs other queries as they are.
type cachedTx struct {
	tx *sql.Tx
	c  *stmtCache
}

func (t cachedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.c.lookup(query); st != nil {
		return t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

func (t cachedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.c.lookup(query); st != nil {
		return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}

func (t cachedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.c.lookup(query); st != nil {
		return t.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}
