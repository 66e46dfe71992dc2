package pgdb_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallbot/recall/memory/pgdb"
	"github.com/recallbot/recall/memory/pgtest"
)

func pool(t *testing.T) *pgdb.Pool {
	t.Helper()
	p, err := pgdb.New(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// What Recall stores goes in and comes back out the same: numbers at their
// limits, text with quotes and backslashes, bytes, times, NULLs, and
// arrays of each (read in the binary format), prepared or not.
func TestValuesRoundTrip(t *testing.T) {
	p := pool(t)
	ctx := context.Background()
	if _, err := p.Exec(ctx, `CREATE TABLE v (i8 bigint, i4 int, s text, b bytea, f float8, ok bool, at timestamptz, ts timestamp,
		a8 bigint[], a4 int[], as_ text[], ab bytea[], af real[], j jsonb)`); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 26, 13, 4, 5, 123456000, time.FixedZone("x", 5*3600+1800))
	text := `it's "quoted", a \backslash\, {braces} and NULL`
	bin := []byte{0, 1, 2, 0xff, '\\', 'x'}
	if _, err := p.Exec(ctx, `INSERT INTO v VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		int64(math.MinInt64), int32(math.MaxInt32), text, bin, 0.1, true, at, at,
		[]int64{math.MaxInt64, -1, 0}, []int32{7, -8}, []string{text, "", "NULL"}, [][]byte{bin, nil, {}}, []float32{1.5, -0.25},
		[]byte(`{"k": [1, "two"]}`)); err != nil {
		t.Fatal(err)
	}
	var (
		i8     int64
		i4     int
		s      string
		b      []byte
		f      float64
		ok     bool
		gotAt  time.Time
		gotTS  time.Time
		a8     []int64
		a4     []int32
		as     []string
		ab     [][]byte
		af     []float32
		j      string
		absent *string
	)
	for _, q := range []string{`SELECT *, NULL::text FROM v WHERE i4 = $1`, `SELECT *, NULL::text FROM v WHERE i4 = 2147483647`} {
		var args []any
		if q[len(q)-1] == '1' {
			args = []any{math.MaxInt32}
		}
		err := p.QueryRow(ctx, q, args...).Scan(&i8, &i4, &s, &b, &f, &ok, &gotAt, &gotTS, &a8, &a4, &as, &ab, &af, &j, &absent)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if i8 != math.MinInt64 || i4 != math.MaxInt32 || s != text || !bytes.Equal(b, bin) || f != 0.1 || !ok || absent != nil {
			t.Errorf("%s: scalars came back as %d %d %q %x %v %v %v", q, i8, i4, s, b, f, ok, absent)
		}
		if !gotAt.Equal(at) {
			t.Errorf("%s: timestamptz %v came back as %v", q, at, gotAt)
		}
		if gotTS.Format("2006-01-02 15:04:05.000000") != at.Format("2006-01-02 15:04:05.000000") {
			t.Errorf("%s: timestamp (wall clock) %v came back as %v", q, at, gotTS)
		}
		if !slices.Equal(a8, []int64{math.MaxInt64, -1, 0}) || !slices.Equal(a4, []int32{7, -8}) || !slices.Equal(as, []string{text, "", "NULL"}) ||
			len(ab) != 3 || !bytes.Equal(ab[0], bin) || ab[1] != nil || ab[2] == nil || !slices.Equal(af, []float32{1.5, -0.25}) {
			t.Errorf("%s: arrays came back as %v %v %q %x %v", q, a8, a4, as, ab, af)
		}
		if j != `{"k": [1, "two"]}` {
			t.Errorf("%s: jsonb came back as %s", q, j)
		}
	}
	// timestamptz[] (the rate limit's windows), prepared and not.
	times := []time.Time{at, at.Add(-time.Hour).UTC()}
	for _, q := range []string{`SELECT $1::timestamptz[]`, `SELECT '{"2026-11-26 13:04:05.123456+05:30","2026-11-26 06:34:05.123456+00"}'::timestamptz[]`} {
		var args []any
		if strings.Contains(q, "$1") {
			args = []any{times}
		}
		var got []time.Time
		if err := p.QueryRow(ctx, q, args...).Scan(&got); err != nil || len(got) != 2 || !got[0].Equal(times[0]) || !got[1].Equal(times[1]) {
			t.Errorf("%s: %v (%v), want %v", q, got, err, times)
		}
	}
	var n string
	if err := p.QueryRow(ctx, `SELECT NULL::text`).Scan(&n); err == nil {
		t.Error("NULL scanned into a string without an error")
	}
	if err := p.QueryRow(ctx, `SELECT 1 WHERE false`).Scan(&n); !errors.Is(err, pgdb.ErrNoRows) {
		t.Errorf("no row: %v, want ErrNoRows", err)
	}
	var e *pgdb.PgError
	if _, err := p.Exec(ctx, `INSERT INTO v(i4) VALUES ($1)`, "not a number"); !errors.As(err, &e) || e.Code != "22P02" {
		t.Errorf("a bad argument: %v, want the server's 22P02", err)
	}
}

// A batch goes in one round trip and one implicit transaction: a failing
// statement undoes the ones before it, and each result is read in order.
func TestBatch(t *testing.T) {
	p := pool(t)
	ctx := context.Background()
	if _, err := p.Exec(ctx, `CREATE TABLE t (id int PRIMARY KEY, s text)`); err != nil {
		t.Fatal(err)
	}
	b := &pgdb.Batch{}
	b.Queue(`INSERT INTO t VALUES ($1, $2)`, 1, "one")
	b.Queue(`INSERT INTO t VALUES ($1, $2) RETURNING id * 10`, 2, "two")
	b.Queue(`SELECT s FROM t ORDER BY id`)
	br := p.SendBatch(ctx, b)
	if tag, err := br.Exec(); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("first: %v %v", tag, err)
	}
	var id int
	if err := br.QueryRow().Scan(&id); err != nil || id != 20 {
		t.Fatalf("second: %d %v", id, err)
	}
	rows, err := br.Query()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	if err := br.Close(); err != nil || !slices.Equal(got, []string{"one", "two"}) {
		t.Fatalf("third: %q %v", got, err)
	}

	b = &pgdb.Batch{}
	b.Queue(`INSERT INTO t VALUES ($1, $2)`, 3, "three")
	b.Queue(`INSERT INTO t VALUES ($1, $2)`, 1, "one again") // duplicate key
	b.Queue(`INSERT INTO t VALUES ($1, $2)`, 4, "four")
	br = p.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		t.Fatalf("the statement before the failing one: %v", err)
	}
	if _, err := br.Exec(); err == nil {
		t.Fatal("a duplicate key was stored")
	}
	if _, err := br.Exec(); err == nil {
		t.Fatal("the statement after the failing one reported success")
	}
	var n int
	if err := p.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("after the failed batch %d rows (%v), want the 2 from before it", n, err)
	}
}

// A transaction commits what fn did, or nothing when fn fails; a
// connection is not given back in the middle of one.
func TestTransactions(t *testing.T) {
	p := pool(t)
	ctx := context.Background()
	if _, err := p.Exec(ctx, `CREATE TABLE t (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := pgdb.BeginFunc(ctx, p, func(tx *pgdb.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO t VALUES ($1)`, 1); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want fn's error", err)
	}
	if err := pgdb.BeginFunc(ctx, p, func(tx *pgdb.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO t VALUES ($1)`, 2)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// A statement that fails inside: the commit is a rollback, and says so.
	tx, err := p.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = tx.Exec(ctx, `INSERT INTO t VALUES ($1)`, 3)
	_, _ = tx.Exec(ctx, `INSERT INTO t VALUES ($1)`, 2)
	if err := tx.Commit(ctx); !errors.Is(err, pgdb.ErrTxCommitRollback) {
		t.Fatalf("commit of a failed transaction: %v", err)
	}
	var ids []int64
	if err := p.QueryRow(ctx, `SELECT array_agg(id) FROM t`).Scan(&ids); err != nil || !slices.Equal(ids, []int64{2}) {
		t.Fatalf("stored %v (%v), want only the committed 2", ids, err)
	}
	err = pgdb.BeginTxFunc(ctx, p, pgdb.TxOptions{IsoLevel: pgdb.RepeatableRead, AccessMode: pgdb.ReadOnly}, func(tx *pgdb.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO t VALUES ($1)`, 9)
		return err
	})
	var e *pgdb.PgError
	if !errors.As(err, &e) || e.Code != "25006" {
		t.Fatalf("a write in a read-only transaction: %v", err)
	}
}

// A statement whose context ends stops at once (the server is asked to
// cancel it), and the pool goes on with a new connection.
func TestCancelledStatement(t *testing.T) {
	p := pool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Exec(ctx, `SELECT pg_sleep(30)`)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the cancelled statement returned after %v", d)
	}
	var one int
	if err := p.QueryRow(context.Background(), `SELECT $1::int`, 1).Scan(&one); err != nil || one != 1 {
		t.Fatalf("after the cancel: %d %v", one, err)
	}
	// The server stopped the sleep: no backend of ours still runs it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := p.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server still runs the cancelled statement")
		}
		time.Sleep(20 * time.Millisecond) // polls the server, not synchronisation
	}
}

// The pool never opens more than MaxConns connections, and a connection
// the server ended is replaced once it has sat idle.
func TestPoolBoundsAndReplacesConnections(t *testing.T) {
	cfg, err := pgdb.ParseConfig(pgtest.URL(t) + "&pool_max_conns=2")
	if err != nil {
		t.Fatal(err)
	}
	// The name singles out this pool's connections: other packages' tests
	// share the database and must not lose theirs.
	name := fmt.Sprintf("pool_test_%d_%d", os.Getpid(), time.Now().UnixNano())
	cfg.RuntimeParams["application_name"] = name
	var dials atomic.Int32
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, addr)
	}
	p, err := pgdb.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	var running, most atomic.Int32
	for range 6 {
		wg.Go(func() {
			c, err := p.Acquire(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Release()
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			_, err = c.Exec(ctx, `SELECT pg_sleep(0.05)`)
			running.Add(-1)
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if most.Load() > 2 || dials.Load() > 2 {
		t.Fatalf("%d connections in use at once, %d dialled; the pool allows 2", most.Load(), dials.Load())
	}
	// The server ends every connection of ours; after a second idle the
	// pool notices and dials anew.
	admin, err := pgdb.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var pid int
	if err := p.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	var ended int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, name).Scan(&ended); err != nil {
		t.Fatal(err)
	}
	if ended == 0 {
		t.Fatal("no connection of the pool's to end")
	}
	time.Sleep(1100 * time.Millisecond) // the idle time after which the pool checks a connection: the behaviour under test
	var again int
	if err := p.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&again); err != nil {
		t.Fatalf("after the server ended the connections: %v", err)
	}
	if again == pid {
		t.Fatal("the ended connection was handed out again")
	}
}

// LISTEN on a connection of its own gets each NOTIFY's payload.
func TestListen(t *testing.T) {
	u := pgtest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := pgdb.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if _, err := l.Exec(ctx, `LISTEN turns`); err != nil {
		t.Fatal(err)
	}
	p := pool(t)
	for _, payload := range []string{"a", "b"} {
		if _, err := p.Exec(ctx, `SELECT pg_notify('turns', $1)`, payload); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"a", "b"} {
		n, err := l.WaitForNotification(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n.Channel != "turns" || n.Payload != want {
			t.Fatalf("got %+v, want payload %s", n, want)
		}
	}
	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	if _, err := l.WaitForNotification(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting with nothing sent: %v", err)
	}
}

// The database/sql driver (the WhatsApp session store's) reads and writes
// as database/sql expects, in transactions too.
func TestDatabaseSQLDriver(t *testing.T) {
	cfg, err := pgdb.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	db := pgdb.OpenDB(cfg)
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE s (jid text PRIMARY KEY, key bytea, n bigint, ok bool, note text); CREATE INDEX ON s (n)`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO s VALUES ($1, $2, $3, $4, $5), ($6, $7, $8, $9, $10)`,
		"a@s.whatsapp.net", []byte{1, 2}, int64(7), true, nil, "b@s.whatsapp.net", []byte{}, int64(-1), false, "x")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 2 {
		t.Fatalf("%d rows affected, want 2", n)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var (
		key  []byte
		n    int64
		ok   bool
		note sql.NullString
	)
	if err := db.QueryRowContext(ctx, `SELECT key, n, ok, note FROM s WHERE jid = $1`, "a@s.whatsapp.net").Scan(&key, &n, &ok, &note); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(key, []byte{1, 2}) || n != 7 || !ok || note.Valid {
		t.Fatalf("read back %x %d %v %v", key, n, ok, note)
	}
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM s`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	var count int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM s`).Scan(&count); err != nil || count != 2 {
		t.Fatalf("after a rolled back delete %d rows (%v), want 2", count, err)
	}
}

// A table changed under a prepared statement fails it once, then it is
// prepared again; a connection keeps a bounded number of statements, and
// one run in the same call as the eviction still runs.
func TestPreparedStatementsStayUsable(t *testing.T) {
	ctx := context.Background()
	c, err := pgdb.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `CREATE TABLE t (id int); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	const q = `SELECT * FROM t WHERE id = $1`
	var id int
	if err := c.QueryRow(ctx, q, 1).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `ALTER TABLE t ADD COLUMN s text DEFAULT 'x'`); err != nil {
		t.Fatal(err)
	}
	var s string
	_ = c.QueryRow(ctx, q, 1).Scan(&id, &s) // may fail: the plan's result type changed
	if err := c.QueryRow(ctx, q, 1).Scan(&id, &s); err != nil || s != "x" {
		t.Fatalf("after the table changed: %q %v", s, err)
	}
	for i := range 600 {
		b := &pgdb.Batch{}
		b.Queue(q, 1)
		b.Queue(`SELECT $1::int + `+strconv.Itoa(i), i)
		br := c.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
		var n int
		if err := br.QueryRow().Scan(&n); err != nil || n != 2*i {
			t.Fatalf("statement %d: %d %v", i, n, err)
		}
	}
	var prepared int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements`).Scan(&prepared); err != nil || prepared > 520 {
		t.Fatalf("%d statements prepared on the connection (%v), want at most the bound", prepared, err)
	}
}

// Against a server without TLS (the tests' own): sslmode=prefer, the
// default, connects in the clear; require refuses rather than do so.
func TestSSLModeWithoutTLS(t *testing.T) {
	u := pgtest.URL(t)
	ctx := context.Background()
	for _, mode := range []string{"prefer", "allow"} {
		c, err := pgdb.Connect(ctx, strings.Replace(u, "sslmode=disable", "sslmode="+mode, 1))
		if err != nil {
			t.Fatalf("sslmode=%s: %v", mode, err)
		}
		_ = c.Close(ctx)
	}
	if _, err := pgdb.Connect(ctx, strings.Replace(u, "sslmode=disable", "sslmode=require", 1)); err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Fatalf("sslmode=require against a server without TLS: %v", err)
	}
}
