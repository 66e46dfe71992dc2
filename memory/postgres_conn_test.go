package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The store's connections to PostgreSQL, through pgx as OpenPostgres makes
// them: what Recall stores comes back the same, batches and transactions
// keep their promises, a cancelled statement stops, the pool is bounded
// and replaces what the server ended. TLS and passwords are in
// postgres_tls_test.go.

// What Recall stores goes in and comes back out the same: numbers at their
// limits, text with quotes and backslashes, bytes, times, NULLs, and the
// arrays the search and the rate limit read (int8[], int4[], text[],
// bytea[], timestamptz[]).
func TestPostgresValuesRoundTrip(t *testing.T) {
	p := cfOpenPostgres(t)
	ctx := context.Background()
	if _, err := p.pool.Exec(ctx, `CREATE TABLE v (i8 bigint, i4 int, s text, b bytea, f float8, ok bool, at timestamptz,
		a8 bigint[], a4 int[], as_ text[], ab bytea[], at_ timestamptz[], j jsonb)`); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 26, 13, 4, 5, 123456000, time.FixedZone("x", 5*3600+1800))
	text := `it's "quoted", a \backslash\, {braces} and NULL`
	bin := []byte{0, 1, 2, 0xff, '\\', 'x'}
	times := []time.Time{at, at.Add(-time.Hour).UTC()}
	if _, err := p.pool.Exec(ctx, `INSERT INTO v VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		int64(math.MinInt64), int32(math.MaxInt32), text, bin, 0.1, true, at,
		[]int64{math.MaxInt64, -1, 0}, []int32{7, -8}, []string{text, "", "NULL"}, [][]byte{bin, nil, {}}, times,
		`{"k": [1, "two"]}`); err != nil {
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
		a8     []int64
		a4     []int32
		as     []string
		ab     [][]byte
		gotTs  []time.Time
		j      string
		absent *string
	)
	err := p.pool.QueryRow(ctx, `SELECT *, NULL::text FROM v WHERE i4 = $1`, math.MaxInt32).
		Scan(&i8, &i4, &s, &b, &f, &ok, &gotAt, &a8, &a4, &as, &ab, &gotTs, &j, &absent)
	if err != nil {
		t.Fatal(err)
	}
	if i8 != math.MinInt64 || i4 != math.MaxInt32 || s != text || !bytes.Equal(b, bin) || f != 0.1 || !ok || absent != nil || !gotAt.Equal(at) {
		t.Errorf("scalars came back as %d %d %q %x %v %v %v %v", i8, i4, s, b, f, ok, gotAt, absent)
	}
	if !slices.Equal(a8, []int64{math.MaxInt64, -1, 0}) || !slices.Equal(a4, []int32{7, -8}) || !slices.Equal(as, []string{text, "", "NULL"}) ||
		len(ab) != 3 || !bytes.Equal(ab[0], bin) || ab[1] != nil || ab[2] == nil ||
		len(gotTs) != 2 || !gotTs[0].Equal(times[0]) || !gotTs[1].Equal(times[1]) {
		t.Errorf("arrays came back as %v %v %q %x %v", a8, a4, as, ab, gotTs)
	}
	if j != `{"k": [1, "two"]}` {
		t.Errorf("jsonb came back as %s", j)
	}
	var n string
	if err := p.pool.QueryRow(ctx, `SELECT NULL::text`).Scan(&n); err == nil {
		t.Error("NULL scanned into a string without an error")
	}
	if err := p.pool.QueryRow(ctx, `SELECT 1 WHERE false`).Scan(&n); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("no row: %v, want pgx.ErrNoRows", err)
	}
	var e *pgconn.PgError
	if _, err := p.pool.Exec(ctx, `INSERT INTO v(i4) VALUES ($1::text::int)`, "not a number"); !errors.As(err, &e) || e.Code != "22P02" {
		t.Errorf("a bad value: %v, want the server's 22P02", err)
	}
}

// A batch goes in one round trip and one implicit transaction (the search
// relies on it: its SET LOCAL lasts until the batch ends): a failing
// statement undoes the ones before it, and each result is read in order.
func TestPostgresBatchIsOneTransaction(t *testing.T) {
	p := cfOpenPostgres(t)
	ctx := context.Background()
	if _, err := p.pool.Exec(ctx, `CREATE TABLE t (id int PRIMARY KEY, s text)`); err != nil {
		t.Fatal(err)
	}
	b := &pgx.Batch{}
	b.Queue(`SET LOCAL plan_cache_mode = force_generic_plan`)
	b.Queue(`INSERT INTO t VALUES ($1, $2) RETURNING id * 10`, 2, "two")
	b.Queue(`SELECT current_setting('plan_cache_mode')`)
	br := p.pool.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		t.Fatal(err)
	}
	var id int
	if err := br.QueryRow().Scan(&id); err != nil || id != 20 {
		t.Fatalf("second: %d %v", id, err)
	}
	var mode string
	if err := br.QueryRow().Scan(&mode); err != nil || mode != "force_generic_plan" {
		t.Fatalf("SET LOCAL in the batch: %q %v, want it to last until the batch's end", mode, err)
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}

	b = &pgx.Batch{}
	b.Queue(`INSERT INTO t VALUES ($1, $2)`, 3, "three")
	b.Queue(`INSERT INTO t VALUES ($1, $2)`, 2, "two again") // duplicate key
	b.Queue(`INSERT INTO t VALUES ($1, $2)`, 4, "four")
	br = p.pool.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		t.Fatalf("the statement before the failing one: %v", err)
	}
	if _, err := br.Exec(); err == nil {
		t.Fatal("a duplicate key was stored")
	}
	if _, err := br.Exec(); err == nil {
		t.Fatal("the statement after the failing one reported success")
	}
	_ = br.Close() // the batch's error, seen above
	var ids []int64
	if err := p.pool.QueryRow(ctx, `SELECT array_agg(id ORDER BY id) FROM t`).Scan(&ids); err != nil || !slices.Equal(ids, []int64{2}) {
		t.Fatalf("after the failed batch %v (%v), want only the 2 from before it", ids, err)
	}
}

// A transaction commits what fn did, or nothing when fn fails; a commit
// after a failed statement is a rollback and says so; Export's read-only
// transaction refuses writes.
func TestPostgresTransactions(t *testing.T) {
	p := cfOpenPostgres(t)
	ctx := context.Background()
	if _, err := p.pool.Exec(ctx, `CREATE TABLE t (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := p.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO t VALUES ($1)`, 1); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want fn's error", err)
	}
	if err := p.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO t VALUES ($1)`, 2)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = tx.Exec(ctx, `INSERT INTO t VALUES ($1)`, 3)
	_, _ = tx.Exec(ctx, `INSERT INTO t VALUES ($1)`, 2) // fails: the transaction is aborted
	if err := tx.Commit(ctx); !errors.Is(err, pgx.ErrTxCommitRollback) {
		t.Fatalf("commit of a failed transaction: %v", err)
	}
	var ids []int64
	if err := p.pool.QueryRow(ctx, `SELECT array_agg(id) FROM t`).Scan(&ids); err != nil || !slices.Equal(ids, []int64{2}) {
		t.Fatalf("stored %v (%v), want only the committed 2", ids, err)
	}
	err = pgx.BeginTxFunc(ctx, p.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO t VALUES ($1)`, 9)
		return err
	})
	var e *pgconn.PgError
	if !errors.As(err, &e) || e.Code != "25006" {
		t.Fatalf("a write in a read-only transaction: %v", err)
	}
}

// A statement whose context ends returns the context's error at once (what
// callers match to tell the user "busy"); pgx closes its connection and
// asks the server to cancel the statement (it does not run on), and the
// pool goes on with a working connection.
func TestPostgresCancelledStatement(t *testing.T) {
	p := cfOpenPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.pool.Exec(ctx, `SELECT pg_sleep(30)`)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the cancelled statement returned after %v", d)
	}
	var one int
	if err := p.pool.QueryRow(context.Background(), `SELECT $1::int`, 1).Scan(&one); err != nil || one != 1 {
		t.Fatalf("after the cancel: %d %v", one, err)
	}
	// The server stopped the sleep: no backend still runs it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := p.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'`).Scan(&n); err != nil {
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

// The pool never opens more than pool_max_conns connections (from
// database.url), and a connection the server ended is not handed out
// again: the pool pings one that sat idle and dials anew.
func TestPostgresPoolBoundsAndReplacesConnections(t *testing.T) {
	// The name singles out this pool's connections: other packages' tests
	// share the server and must not lose theirs.
	name := fmt.Sprintf("pool_test_%d_%d", os.Getpid(), time.Now().UnixNano())
	u := pgTestURL(t) + "&pool_max_conns=2&application_name=" + name
	p, err := OpenPostgres(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	var running, most atomic.Int32
	start := make(chan struct{})
	for range 6 {
		wg.Go(func() {
			<-start
			c, err := p.pool.Acquire(ctx)
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
	close(start)
	wg.Wait()
	var backends int
	if err := p.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, name).Scan(&backends); err != nil {
		t.Fatal(err)
	}
	if most.Load() > 2 || p.pool.Stat().TotalConns() > 2 || backends > 2 || p.pool.Stat().MaxConns() != 2 {
		t.Fatalf("%d connections in use at once, %d open, %d on the server; the pool allows 2 (max %d)",
			most.Load(), p.pool.Stat().TotalConns(), backends, p.pool.Stat().MaxConns())
	}
	if most.Load() < 2 {
		t.Fatalf("at most %d connection in use at once: the test did not load the pool", most.Load())
	}
	// The server ends every connection of ours; once idle a second, the
	// pool pings a connection before handing it out and dials anew.
	admin, err := pgx.Connect(ctx, pgTestURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var pid int
	if err := p.pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	var ended int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, name).Scan(&ended); err != nil {
		t.Fatal(err)
	}
	if ended == 0 {
		t.Fatal("no connection of the pool's to end")
	}
	time.Sleep(1100 * time.Millisecond) // the idle time after which the pool pings a connection: the behaviour under test
	var again int
	if err := p.pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&again); err != nil {
		t.Fatalf("after the server ended the connections: %v", err)
	}
	if again == pid {
		t.Fatal("the ended connection was handed out again")
	}
}

// LISTEN on a connection of its own (the shared turn queue's wake-ups) gets
// each NOTIFY's payload, and a wait with nothing sent ends with its
// context.
func TestPostgresListen(t *testing.T) {
	p := cfOpenPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := pgx.ConnectConfig(ctx, p.pool.Config().ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if _, err := l.Exec(ctx, `LISTEN turns`); err != nil {
		t.Fatal(err)
	}
	for _, payload := range []string{"a", "b"} {
		if _, err := p.pool.Exec(ctx, `SELECT pg_notify('turns', $1)`, payload); err != nil {
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
	if _, err := l.WaitForNotification(short); !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
		t.Fatalf("waiting with nothing sent: %v", err)
	}
}

// Statements are prepared once per connection and cached (pgx's
// statement cache): a table changed under one fails it at most once, then
// it is prepared again; the cache is bounded, and a statement of the same
// batch as an eviction still runs.
func TestPostgresStatementCache(t *testing.T) {
	p := cfOpenPostgres(t)
	ctx := context.Background()
	c, err := pgx.ConnectConfig(ctx, p.pool.Config().ConnConfig.Copy())
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
	var prepared int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE statement = $1`, q).Scan(&prepared); err != nil || prepared != 1 {
		t.Fatalf("%d prepared statements of %q (%v), want it prepared once", prepared, q, err)
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
		b := &pgx.Batch{}
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
		if err := br.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements`).Scan(&prepared); err != nil || prepared > 520 {
		t.Fatalf("%d statements prepared on the connection (%v), want at most the cache's 512", prepared, err)
	}
}

// Against a server without TLS (the tests' own): sslmode=prefer, the
// default, and allow connect in the clear; require refuses rather than do
// so.
func TestPostgresSSLModeWithoutTLS(t *testing.T) {
	u := pgTestURL(t)
	ctx := context.Background()
	for _, mode := range []string{"prefer", "allow"} {
		p, err := OpenPostgres(ctx, strings.Replace(u, "sslmode=disable", "sslmode="+mode, 1))
		if err != nil {
			t.Fatalf("sslmode=%s: %v", mode, err)
		}
		_ = p.Close()
	}
	p, err := OpenPostgres(ctx, strings.Replace(u, "sslmode=disable", "sslmode=require", 1))
	if err == nil {
		_ = p.Close()
		t.Fatal("sslmode=require connected to a server without TLS")
	}
	if !strings.Contains(err.Error(), "TLS") {
		t.Fatalf("sslmode=require against a server without TLS: %v", err)
	}
}
