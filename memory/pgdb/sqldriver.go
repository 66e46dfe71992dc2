package pgdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
)

// OpenDB returns a database/sql pool over this package's connections, for
// another library's queries (the WhatsApp session store). It does not
// connect yet.
func OpenDB(cfg *Config) *sql.DB { return sql.OpenDB(connector{cfg}) }

type connector struct{ cfg *Config }

func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := ConnectConfig(ctx, c.cfg)
	if err != nil {
		return nil, err
	}
	return &sqlConn{conn}, nil
}

func (c connector) Driver() driver.Driver { return sqlDriver{} }

type sqlDriver struct{}

func (sqlDriver) Open(name string) (driver.Conn, error) {
	cfg, err := ParseConfig(name)
	if err != nil {
		return nil, err
	}
	return connector{cfg}.Connect(context.Background())
}

// sqlConn is a Conn as a database/sql driver connection.
type sqlConn struct{ c *Conn }

var (
	_ driver.QueryerContext     = (*sqlConn)(nil)
	_ driver.ExecerContext      = (*sqlConn)(nil)
	_ driver.ConnBeginTx        = (*sqlConn)(nil)
	_ driver.Pinger             = (*sqlConn)(nil)
	_ driver.SessionResetter    = (*sqlConn)(nil)
	_ driver.Validator          = (*sqlConn)(nil)
	_ driver.NamedValueChecker  = (*sqlConn)(nil)
	_ driver.StmtQueryContext   = (*sqlStmt)(nil)
	_ driver.StmtExecContext    = (*sqlStmt)(nil)
	_ driver.ConnPrepareContext = (*sqlConn)(nil)
)

func (s *sqlConn) Prepare(query string) (driver.Stmt, error) { return &sqlStmt{s, query}, nil }

func (s *sqlConn) PrepareContext(_ context.Context, query string) (driver.Stmt, error) {
	return &sqlStmt{s, query}, nil
}

func (s *sqlConn) Close() error { return s.c.Close(context.Background()) }

func (s *sqlConn) Begin() (driver.Tx, error) {
	return s.BeginTx(context.Background(), driver.TxOptions{})
}

func (s *sqlConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var o TxOptions
	switch sql.IsolationLevel(opts.Isolation) {
	case sql.LevelDefault:
	case sql.LevelReadCommitted:
		o.IsoLevel = ReadCommitted
	case sql.LevelRepeatableRead, sql.LevelSnapshot:
		o.IsoLevel = RepeatableRead
	case sql.LevelSerializable:
		o.IsoLevel = Serializable
	default:
		o.IsoLevel = ReadCommitted
	}
	if opts.ReadOnly {
		o.AccessMode = ReadOnly
	}
	tx, err := s.c.BeginTx(ctx, o)
	if err != nil {
		return nil, err
	}
	return sqlTx{tx}, nil
}

func values(args []driver.NamedValue) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a.Value
	}
	return out
}

func (s *sqlConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	r, err := s.c.Query(ctx, query, values(args)...)
	if err != nil {
		return nil, err
	}
	return &sqlRows{r}, nil
}

func (s *sqlConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	t, err := s.c.Exec(ctx, query, values(args)...)
	if err != nil {
		return nil, err
	}
	return driver.RowsAffected(t.RowsAffected()), nil
}

func (s *sqlConn) Ping(ctx context.Context) error { return s.c.Ping(ctx) }

func (s *sqlConn) ResetSession(context.Context) error {
	if s.c.broken {
		return driver.ErrBadConn
	}
	return nil
}

func (s *sqlConn) IsValid() bool { return !s.c.broken }

// CheckNamedValue takes every argument as it is: this package writes them
// (slices as arrays).
func (s *sqlConn) CheckNamedValue(*driver.NamedValue) error { return nil }

type sqlStmt struct {
	s     *sqlConn
	query string
}

func (st *sqlStmt) Close() error  { return nil }
func (st *sqlStmt) NumInput() int { return -1 }

func (st *sqlStmt) Exec(args []driver.Value) (driver.Result, error) {
	return st.ExecContext(context.Background(), named(args))
}

func (st *sqlStmt) Query(args []driver.Value) (driver.Rows, error) {
	return st.QueryContext(context.Background(), named(args))
}

func (st *sqlStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return st.s.ExecContext(ctx, st.query, args)
}

func (st *sqlStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return st.s.QueryContext(ctx, st.query, args)
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, a := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return out
}

type sqlTx struct{ tx *Tx }

func (t sqlTx) Commit() error   { return t.tx.Commit(context.Background()) }
func (t sqlTx) Rollback() error { return t.tx.Rollback(context.Background()) }

type sqlRows struct{ r *Rows }

func (r *sqlRows) Columns() []string { return r.r.Columns() }
func (r *sqlRows) Close() error      { r.r.Close(); return nil }

func (r *sqlRows) Next(dest []driver.Value) error {
	if !r.r.Next() {
		return io.EOF
	}
	vs, err := r.r.Values()
	if err != nil {
		return err
	}
	for i := range dest {
		dest[i] = vs[i]
	}
	return nil
}
