package turnqueue_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/memory/pgtest"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/turnqueue"
)

// clock is a settable clock shared by a test's replicas.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// database migrates a fresh schema and returns its URL.
func database(t *testing.T) string {
	t.Helper()
	u := pgtest.URL(t)
	p, err := memory.OpenPostgres(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	return u
}

// replica is one process's queue, on a pool of its own (named, so a test
// can cut it off the database).
type replica struct {
	name string
	pool *pgxpool.Pool
	q    *turnqueue.Queue
	stop context.CancelFunc
	done chan error
	cut  *cutoff
}

// cutoff refuses new connections once set: with its open connections
// terminated, the replica is as good as dead to the database.
type cutoff struct {
	mu  sync.Mutex
	off bool
}

func (c *cutoff) set() { c.mu.Lock(); c.off = true; c.mu.Unlock() }
func (c *cutoff) is() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.off
}

func newReplica(t *testing.T, dbURL, name string, h pipeline.Handler, opts turnqueue.Options) *replica {
	t.Helper()
	u, _ := url.Parse(dbURL)
	v := u.Query()
	v.Set("application_name", name)
	u.RawQuery = v.Encode()
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, cut: &cutoff{}, done: make(chan error, 1)}
	// Every connection of the replica dials through here, the pool's and
	// those it opens outside the pool (LISTEN): once cut, none comes back.
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if r.cut.is() {
			return nil, fmt.Errorf("%s is cut off the database", name)
		}
		return dial(ctx, network, addr)
	}
	r.pool, err = pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.q = turnqueue.New(r.pool, h, name, opts)
	r.q.Register("telegram", turnqueue.Channel{Out: nopSender{}})
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() { r.done <- r.q.Run(ctx) }()
	t.Cleanup(func() {
		r.stop()
		<-r.done
		r.pool.Close()
	})
	return r
}

// die cuts the replica off the database: its connections are terminated
// and no new one opens — a killed process, as the database sees it.
func (r *replica) die(t *testing.T, dbURL string) {
	t.Helper()
	r.cut.set()
	c, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	// A connection dialled just before the cut shows up a moment later:
	// terminate until none has been seen for a few polls, or the "dead"
	// replica would go on renewing its lease.
	deadline := time.Now().Add(10 * time.Second)
	for quiet := 0; quiet < 5; {
		var n int
		if err := c.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, r.name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			quiet = 0
		} else {
			quiet++
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still has connections to the database", r.name)
		}
		time.Sleep(10 * time.Millisecond) // polls for stragglers, not synchronisation
	}
}

type nopSender struct{}

func (nopSender) Send(context.Context, pipeline.Outbound) (string, error) { return "", nil }

func inbound(chat, msg int) pipeline.Inbound {
	return pipeline.Inbound{Key: pipeline.Key{Channel: "telegram", Chat: strconv.Itoa(chat)}, SenderID: strconv.Itoa(chat),
		MessageID: strconv.Itoa(msg), Text: fmt.Sprintf("message %d", msg), MentionsBot: true}
}

// openTurns counts the turns not finished.
func openTurns(t *testing.T, dbURL string) (open, all int) {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if err := c.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE done_at IS NULL), count(*) FROM turn_queue`).Scan(&open, &all); err != nil {
		t.Fatal(err)
	}
	return open, all
}

// TestQueueRedeliveryAnsweredOnce: Telegram delivers an update again (its
// webhook timed out) and a load balancer hands it to another replica: the
// unique constraint drops it there, before and after the first copy was
// answered.
func TestQueueRedeliveryAnsweredOnce(t *testing.T) {
	db := database(t)
	var mu sync.Mutex
	handled := map[string]int{}
	got := make(chan string, 10)
	h := pipeline.HandlerFunc(func(ctx context.Context, tr *pipeline.Turn) error {
		mu.Lock()
		handled[tr.In.MessageID]++
		mu.Unlock()
		got <- tr.In.MessageID
		return nil
	})
	a := newReplica(t, db, "a", h, turnqueue.Options{Workers: 2})
	b := newReplica(t, db, "b", h, turnqueue.Options{Workers: 2})
	for _, r := range []*replica{a, b, a} {
		if err := r.q.Submit(inbound(1, 10), nopSender{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.q.Submit(inbound(1, 11), nopSender{}); err != nil {
		t.Fatal(err)
	}
	<-got
	<-got
	if err := b.q.Submit(inbound(1, 10), nopSender{}); err != nil { // a day later
		t.Fatal(err)
	}
	if _, all := openTurns(t, db); all != 2 {
		t.Fatalf("%d rows in the queue, want 2 (each update once)", all)
	}
	waitOpen(t, db, 0)
	mu.Lock()
	defer mu.Unlock()
	if handled["10"] != 1 || handled["11"] != 1 {
		t.Fatalf("handled %v, want each message once", handled)
	}
}

// waitOpen waits until n turns are unfinished.
func waitOpen(t *testing.T, db string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		open, _ := openTurns(t, db)
		if open == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d turns unfinished, want %d", open, n)
		}
		runtime.Gosched()
	}
}

// TestQueueOrderAcrossReplicas: 200 messages of 20 conversations reach
// three replicas at random; every message is handled once, the turns of a
// conversation one at a time and in the order they arrived, while
// different conversations run at the same time.
func TestQueueOrderAcrossReplicas(t *testing.T) {
	db := database(t)
	const chats, perChat = 20, 10
	var mu sync.Mutex
	running := map[string]bool{}
	seen := map[string][]int{}
	maxParallel, parallel := 0, 0
	var all sync.WaitGroup
	all.Add(chats * perChat)
	h := pipeline.HandlerFunc(func(ctx context.Context, tr *pipeline.Turn) error {
		k := tr.In.Key.String()
		mu.Lock()
		if running[k] {
			t.Errorf("two turns of %s ran at once", k)
		}
		running[k] = true
		parallel++
		maxParallel = max(maxParallel, parallel)
		mu.Unlock()
		for range 50 {
			runtime.Gosched()
		}
		n, _ := strconv.Atoi(tr.In.MessageID)
		mu.Lock()
		running[k] = false
		parallel--
		seen[k] = append(seen[k], n)
		mu.Unlock()
		all.Done()
		return nil
	})
	var reps []*replica
	for i := range 3 {
		reps = append(reps, newReplica(t, db, "r"+strconv.Itoa(i), h, turnqueue.Options{Workers: 4}))
	}
	for m := range perChat {
		for c := range chats {
			r := reps[rand.IntN(len(reps))]
			if err := r.q.Submit(inbound(c, m), nopSender{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	all.Wait()
	mu.Lock()
	defer mu.Unlock()
	for k, ns := range seen {
		for i, n := range ns {
			if n != i {
				t.Fatalf("%s handled in the order %v", k, ns)
			}
		}
	}
	if len(seen) != chats {
		t.Fatalf("%d conversations handled, want %d", len(seen), chats)
	}
	t.Logf("up to %d turns ran at once", maxParallel)
}

// TestQueueTakeoverWhenAReplicaDies: a replica claims a turn and dies in
// the middle of it (cut off the database, its model call never returns).
// While its lease runs, the other replica runs neither that turn nor the
// next of the same conversation (another conversation goes on); once the
// lease expired, it finishes the turn, then the next, in order, each once.
func TestQueueTakeoverWhenAReplicaDies(t *testing.T) {
	db := database(t)
	c := &clock{t: time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)}
	opts := turnqueue.Options{Workers: 2, Lease: 30 * time.Second, Renew: 5 * time.Millisecond, Rescan: 5 * time.Millisecond, Now: c.Now}

	stuck := make(chan struct{})
	var aStarted sync.Once
	dying := pipeline.HandlerFunc(func(ctx context.Context, tr *pipeline.Turn) error {
		aStarted.Do(func() { close(stuck) })
		<-ctx.Done() // the model never answers
		return ctx.Err()
	})
	a := newReplica(t, db, "a", dying, opts)
	if err := a.q.Submit(inbound(1, 1), nopSender{}); err != nil {
		t.Fatal(err)
	}
	<-stuck
	a.die(t, db)

	got := make(chan string, 10)
	b := newReplica(t, db, "b", pipeline.HandlerFunc(func(ctx context.Context, tr *pipeline.Turn) error {
		got <- tr.In.Key.Chat + "/" + tr.In.MessageID
		return nil
	}), opts)
	for _, in := range []pipeline.Inbound{inbound(1, 2), inbound(2, 1)} {
		if err := b.q.Submit(in, nopSender{}); err != nil {
			t.Fatal(err)
		}
	}
	if g := <-got; g != "2/1" {
		t.Fatalf("first handled %s, want 2/1 (chat 1 waits for its first turn)", g)
	}
	waitOpen(t, db, 2)      // 2/1 is done before the clock jumps past its lease
	c.Add(20 * time.Second) // the lease still runs
	select {
	case g := <-got:
		t.Fatalf("%s handled while the dead replica's lease ran", g)
	case <-time.After(50 * time.Millisecond): // ten rescans: proof of absence, not synchronisation
	}
	c.Add(11 * time.Second) // expired
	if g := <-got; g != "1/1" {
		t.Fatalf("after the lease expired %s was handled, want 1/1", g)
	}
	if g := <-got; g != "1/2" {
		t.Fatalf("then %s, want 1/2", g)
	}
	waitOpen(t, db, 0)
	select {
	case g := <-got:
		t.Fatalf("%s handled twice", g)
	default:
	}
}

// A channel whose turns only one replica can answer (WhatsApp: the one
// holding the connection) is registered on that replica alone: the others
// never claim its turns, and they wait in the table while nobody has it.
func TestQueueUnregisteredChannelIsNotClaimed(t *testing.T) {
	db := database(t)
	got := make(chan string, 10)
	handler := func(name string) pipeline.Handler {
		return pipeline.HandlerFunc(func(ctx context.Context, tr *pipeline.Turn) error {
			got <- name + ":" + tr.In.MessageID
			return nil
		})
	}
	a := newReplica(t, db, "a", handler("a"), turnqueue.Options{Workers: 2})
	b := newReplica(t, db, "b", handler("b"), turnqueue.Options{Workers: 2})
	a.q.Unregister("telegram")
	for msg := 1; msg <= 3; msg++ {
		if err := a.q.Submit(inbound(msg, msg), nopSender{}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if g := <-got; !strings.HasPrefix(g, "b:") {
			t.Fatalf("turn %s ran on a replica that did not register the channel", g)
		}
	}
	b.q.Unregister("telegram")
	if err := b.q.Submit(inbound(4, 4), nopSender{}); err != nil {
		t.Fatal(err)
	}
	waitOpen(t, db, 1) // nobody has the channel: it waits
	a.q.Register("telegram", turnqueue.Channel{Out: nopSender{}})
	if g := <-got; g != "a:4" {
		t.Fatalf("the waiting turn ran as %s, want a:4 once a registered the channel", g)
	}
	waitOpen(t, db, 0)
}
