package pgdb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// ErrNoRows is what Row.Scan returns when the query found no row.
var ErrNoRows = errors.New("no rows in result set")

// Pool is a pool of connections to one database, at most Config.MaxConns
// open at once. A connection that failed is dropped; one idle for over a
// second is checked before it is handed out.
type Pool struct {
	cfg  *Config
	sem  chan struct{} // one token per connection in use
	mu   sync.Mutex
	idle []*Conn // most recently used last
	done bool
}

// New connects a pool to the database at connString.
func New(ctx context.Context, connString string) (*Pool, error) {
	cfg, err := ParseConfig(connString)
	if err != nil {
		return nil, err
	}
	return NewWithConfig(ctx, cfg)
}

// NewWithConfig makes a pool as cfg says and checks that it connects.
func NewWithConfig(ctx context.Context, cfg *Config) (*Pool, error) {
	p := &Pool{cfg: cfg, sem: make(chan struct{}, max(1, cfg.MaxConns))}
	c, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	p.release(c)
	return p, nil
}

// Config is the pool's configuration; change a Copy.
func (p *Pool) Config() *Config { return p.cfg }

// Close closes the idle connections, and the others as they come back.
func (p *Pool) Close() {
	p.mu.Lock()
	p.done = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		_ = c.Close(context.Background())
	}
}

// idleCheck is how long a connection may sit idle before it is checked.
const idleCheck = time.Second

func (p *Pool) acquire(ctx context.Context) (*Conn, error) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for {
		p.mu.Lock()
		if p.done {
			p.mu.Unlock()
			<-p.sem
			return nil, errors.New("pgdb: the pool is closed")
		}
		var c *Conn
		if n := len(p.idle); n > 0 {
			c = p.idle[n-1]
			p.idle = p.idle[:n-1]
		}
		p.mu.Unlock()
		if c == nil {
			break
		}
		if time.Since(c.idleAt) < idleCheck || c.Ping(ctx) == nil {
			return c, nil
		}
		_ = c.Close(ctx)
		if err := ctx.Err(); err != nil {
			<-p.sem
			return nil, err
		}
	}
	c, err := ConnectConfig(ctx, p.cfg)
	if err != nil {
		<-p.sem
		return nil, err
	}
	return c, nil
}

// release takes a connection back: idle again when it is fine and outside
// any transaction, else closed.
func (p *Pool) release(c *Conn) {
	p.mu.Lock()
	if c.broken || c.txStatus != 'I' || p.done {
		p.mu.Unlock()
		_ = c.Close(context.Background())
	} else {
		c.idleAt = time.Now()
		p.idle = append(p.idle, c)
		p.mu.Unlock()
	}
	<-p.sem
}

// with runs fn on a connection of the pool.
func (p *Pool) with(ctx context.Context, fn func(c *Conn) error) error {
	c, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	defer p.release(c)
	return fn(c)
}

// Query runs a query and returns its rows (read whole).
func (p *Pool) Query(ctx context.Context, sql string, args ...any) (*Rows, error) {
	var r *Rows
	err := p.with(ctx, func(c *Conn) (err error) { r, err = c.Query(ctx, sql, args...); return err })
	return r, err
}

// QueryRow runs a query for at most one row.
func (p *Pool) QueryRow(ctx context.Context, sql string, args ...any) *Row {
	r, err := p.Query(ctx, sql, args...)
	return &Row{rows: r, err: err}
}

// Exec runs a statement (without arguments, possibly several).
func (p *Pool) Exec(ctx context.Context, sql string, args ...any) (CommandTag, error) {
	var t CommandTag
	err := p.with(ctx, func(c *Conn) (err error) { t, err = c.Exec(ctx, sql, args...); return err })
	return t, err
}

// SendBatch runs the batch's statements in one round trip, in one
// implicit transaction.
func (p *Pool) SendBatch(ctx context.Context, b *Batch) *BatchResults {
	var r *BatchResults
	if err := p.with(ctx, func(c *Conn) error { r = c.SendBatch(ctx, b); return nil }); err != nil {
		return &BatchResults{err: err}
	}
	return r
}

// Ping checks that the database answers.
func (p *Pool) Ping(ctx context.Context) error {
	return p.with(ctx, func(c *Conn) error { return c.Ping(ctx) })
}

// Begin starts a read-committed transaction on a connection of the pool,
// held until Commit or Rollback.
func (p *Pool) Begin(ctx context.Context) (*Tx, error) {
	return p.BeginTx(ctx, TxOptions{})
}

// BeginTx starts a transaction with the given options.
func (p *Pool) BeginTx(ctx context.Context, opts TxOptions) (*Tx, error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := c.BeginTx(ctx, opts)
	if err != nil {
		p.release(c)
		return nil, err
	}
	tx.release = func() { p.release(c) }
	return tx, nil
}

// PoolConn is a connection taken from the pool until Release.
type PoolConn struct {
	*Conn
	p *Pool
}

// Acquire takes a connection from the pool (a session: advisory locks).
func (p *Pool) Acquire(ctx context.Context) (*PoolConn, error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &PoolConn{Conn: c, p: p}, nil
}

// Release gives the connection back to the pool.
func (c *PoolConn) Release() {
	if c.p != nil {
		c.p.release(c.Conn)
		c.p = nil
	}
}

// Query runs a query and returns its rows (read whole).
func (c *Conn) Query(ctx context.Context, sql string, args ...any) (*Rows, error) {
	res, err := c.exec(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	return &Rows{res: res, i: -1}, nil
}

// QueryRow runs a query for at most one row.
func (c *Conn) QueryRow(ctx context.Context, sql string, args ...any) *Row {
	r, err := c.Query(ctx, sql, args...)
	return &Row{rows: r, err: err}
}

// Exec runs a statement (without arguments, possibly several).
func (c *Conn) Exec(ctx context.Context, sql string, args ...any) (CommandTag, error) {
	res, err := c.exec(ctx, sql, args)
	return res.tag, err
}

// SendBatch runs the batch's statements in one round trip (one more when
// some are new to the connection), in one implicit transaction unless one
// is open.
func (c *Conn) SendBatch(ctx context.Context, b *Batch) *BatchResults {
	if len(b.qs) == 0 {
		return &BatchResults{}
	}
	res, err := c.extended(ctx, b.qs)
	return &BatchResults{res: res, err: err}
}

// TxOptions are a transaction's isolation level and access mode.
type TxOptions struct {
	IsoLevel   string // e.g. RepeatableRead; "": the database's default
	AccessMode string // ReadOnly or ReadWrite; "": read-write
}

// Isolation levels and access modes.
const (
	ReadCommitted  = "read committed"
	RepeatableRead = "repeatable read"
	Serializable   = "serializable"
	ReadOnly       = "read only"
	ReadWrite      = "read write"
)

// BeginTx starts a transaction on this connection.
func (c *Conn) BeginTx(ctx context.Context, opts TxOptions) (*Tx, error) {
	sql := "BEGIN"
	if opts.IsoLevel != "" {
		sql += " ISOLATION LEVEL " + opts.IsoLevel
	}
	if opts.AccessMode != "" {
		sql += " " + opts.AccessMode
	}
	if _, err := c.simple(ctx, sql); err != nil {
		return nil, err
	}
	return &Tx{c: c}, nil
}

// Begin starts a read-committed transaction on this connection.
func (c *Conn) Begin(ctx context.Context) (*Tx, error) { return c.BeginTx(ctx, TxOptions{}) }

// ErrTxCommitRollback is Commit's error when the transaction had failed
// and the server rolled it back.
var ErrTxCommitRollback = errors.New("commit unexpectedly resulted in rollback")

// Tx is a transaction, on one connection until Commit or Rollback.
type Tx struct {
	c       *Conn
	release func() // gives a pool's connection back
	done    bool
}

func (t *Tx) end() {
	t.done = true
	if t.release != nil {
		t.release()
		t.release = nil
	}
}

// Commit commits the transaction.
func (t *Tx) Commit(ctx context.Context) error {
	if t.done {
		return errors.New("pgdb: the transaction has ended")
	}
	defer t.end()
	res, err := t.c.simple(ctx, "COMMIT")
	if err != nil {
		return err
	}
	if len(res) > 0 && res[0].tag == "ROLLBACK" {
		return ErrTxCommitRollback
	}
	return nil
}

// Rollback rolls the transaction back; nothing once it has ended.
func (t *Tx) Rollback(ctx context.Context) error {
	if t.done {
		return nil
	}
	defer t.end()
	if t.c.broken {
		return nil
	}
	_, err := t.c.simple(ctx, "ROLLBACK")
	return err
}

// Query runs a query in the transaction.
func (t *Tx) Query(ctx context.Context, sql string, args ...any) (*Rows, error) {
	return t.c.Query(ctx, sql, args...)
}

// QueryRow runs a query for at most one row in the transaction.
func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) *Row {
	return t.c.QueryRow(ctx, sql, args...)
}

// Exec runs a statement in the transaction.
func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (CommandTag, error) {
	return t.c.Exec(ctx, sql, args...)
}

// SendBatch runs the batch's statements in the transaction in one round
// trip.
func (t *Tx) SendBatch(ctx context.Context, b *Batch) *BatchResults { return t.c.SendBatch(ctx, b) }

// Beginner is what starts transactions: a Pool or a Conn.
type Beginner interface {
	BeginTx(ctx context.Context, opts TxOptions) (*Tx, error)
}

// BeginFunc runs fn in a read-committed transaction: committed when fn
// returns nil, rolled back otherwise.
func BeginFunc(ctx context.Context, db Beginner, fn func(*Tx) error) error {
	return BeginTxFunc(ctx, db, TxOptions{}, fn)
}

// BeginTxFunc is BeginFunc with options.
func BeginTxFunc(ctx context.Context, db Beginner, opts TxOptions, fn func(*Tx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Rows are a query's rows, read whole.
type Rows struct {
	res result
	i   int
	err error
}

// Next moves to the next row; false after the last.
func (r *Rows) Next() bool {
	if r.err != nil || r.i >= len(r.res.rows) {
		return false
	}
	r.i++
	return r.i < len(r.res.rows)
}

// Scan stores the current row's columns in dest (pointers; nil skips a
// column).
func (r *Rows) Scan(dest ...any) error {
	if r.i < 0 || r.i >= len(r.res.rows) {
		return errors.New("pgdb: Scan without a row (call Next first)")
	}
	row := r.res.rows[r.i]
	if len(dest) != len(row) {
		return fmt.Errorf("pgdb: %d columns scanned into %d destinations", len(row), len(dest))
	}
	for i, d := range dest {
		if d == nil {
			continue
		}
		if err := scanValue(r.res.fields[i], row[i], d); err != nil {
			r.err = fmt.Errorf("reading column %s: %w", r.res.fields[i].name, err)
			return r.err
		}
	}
	return nil
}

// Values are the current row's columns as database/sql drivers give them.
func (r *Rows) Values() ([]any, error) {
	row := r.res.rows[r.i]
	out := make([]any, len(row))
	for i := range row {
		v, err := driverValue(r.res.fields[i], row[i])
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// Columns are the result's column names.
func (r *Rows) Columns() []string {
	out := make([]string, len(r.res.fields))
	for i, f := range r.res.fields {
		out[i] = f.name
	}
	return out
}

// CommandTag is what the statement did.
func (r *Rows) CommandTag() CommandTag { return r.res.tag }

// Err is the error that ended reading (a Scan's).
func (r *Rows) Err() error { return r.err }

// Close releases the rows.
func (r *Rows) Close() { r.i = len(r.res.rows) }

// Row is a query's first row.
type Row struct {
	rows *Rows
	err  error
}

// Scan stores the row's columns in dest; ErrNoRows when there is none.
func (r *Row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if !r.rows.Next() {
		return ErrNoRows
	}
	return r.rows.Scan(dest...)
}

// Batch is statements sent together.
type Batch struct{ qs []query }

// Queue adds a statement.
func (b *Batch) Queue(sql string, args ...any) { b.qs = append(b.qs, query{sql, args}) }

// Len is the number of statements queued.
func (b *Batch) Len() int { return len(b.qs) }

// BatchResults are a batch's results, read in the order queued.
type BatchResults struct {
	res []result
	i   int
	err error
}

func (b *BatchResults) next() (result, error) {
	if b.i >= len(b.res) {
		if b.err != nil {
			return result{}, b.err
		}
		return result{}, errors.New("pgdb: no more results in the batch")
	}
	r := b.res[b.i]
	b.i++
	return r, r.err
}

// Exec reads the next statement's result.
func (b *BatchResults) Exec() (CommandTag, error) {
	r, err := b.next()
	return r.tag, err
}

// Query reads the next statement's rows.
func (b *BatchResults) Query() (*Rows, error) {
	r, err := b.next()
	if err != nil {
		return nil, err
	}
	return &Rows{res: r, i: -1}, nil
}

// QueryRow reads the next statement's first row.
func (b *BatchResults) QueryRow() *Row {
	r, err := b.Query()
	return &Row{rows: r, err: err}
}

// Close reports the batch's error, if any.
func (b *BatchResults) Close() error {
	b.i = len(b.res)
	return b.err
}

// Identifier is a name (schema, table, …) quoted for SQL.
type Identifier []string

// Sanitize quotes the identifier's parts and joins them with dots.
func (id Identifier) Sanitize() string {
	parts := make([]string, len(id))
	for i, s := range id {
		s = strings.ReplaceAll(s, `"`, `""`)
		parts[i] = `"` + strings.ReplaceAll(s, "\x00", "") + `"`
	}
	return strings.Join(parts, ".")
}
