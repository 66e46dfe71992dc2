package lease_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallbot/recall/lease"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/memory/pgtest"
)

// clock is a settable clock shared by a test's holders.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)} }

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

func pool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	p, err := memory.OpenPostgres(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p.Pool()
}

// TestLeaseOneHolderAtATime: while one replica holds the lease another
// cannot take it; once it expired unrenewed, the other takes it and the
// first learns at its next renewal that it lost it.
func TestLeaseOneHolderAtATime(t *testing.T) {
	ctx := context.Background()
	p, c := pool(t), newClock()
	opts := lease.Options{TTL: 10 * time.Second, Now: c.Now}
	a := lease.New(p, "telegram-poll", "replica-a", opts)
	b := lease.New(p, "telegram-poll", "replica-b", opts)

	if _, ok, err := a.TryAcquire(ctx); err != nil || !ok {
		t.Fatalf("a: first TryAcquire = %v, %v; want it", ok, err)
	}
	if _, ok, err := b.TryAcquire(ctx); err != nil || ok {
		t.Fatalf("b took a lease a holds: %v, %v", ok, err)
	}
	c.Add(9 * time.Second)
	if _, ok, err := a.Renew(ctx); err != nil || !ok {
		t.Fatalf("a could not renew its lease: %v, %v", ok, err)
	}
	c.Add(9 * time.Second) // 18s after the start, 9s after the renewal
	if _, ok, _ := b.TryAcquire(ctx); ok {
		t.Fatal("b took the lease before the renewed expiry")
	}
	c.Add(2 * time.Second) // past it: a died (stopped renewing)
	if _, ok, err := b.TryAcquire(ctx); err != nil || !ok {
		t.Fatalf("b did not take over an expired lease: %v, %v", ok, err)
	}
	if _, ok, err := a.Renew(ctx); err != nil || ok {
		t.Fatalf("a renewed a lease b took over: %v, %v", ok, err)
	}
	if h, _, _ := a.State(ctx); h != "replica-b" {
		t.Fatalf("holder = %q, want replica-b", h)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := a.TryAcquire(ctx); err != nil || !ok {
		t.Fatalf("a could not take a released lease: %v, %v", ok, err)
	}
}

// TestLeaseRunTakesOverFromADeadHolder: a replica that took the lease and
// died (never renews) holds up the others only until the lease expires;
// then exactly one of the waiting replicas runs the work.
func TestLeaseRunTakesOverFromADeadHolder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, c := pool(t), newClock()
	opts := lease.Options{TTL: 10 * time.Second, Every: 5 * time.Millisecond, Now: c.Now}
	dead := lease.New(p, "telegram-poll", "dead", opts)
	if _, ok, err := dead.TryAcquire(ctx); err != nil || !ok {
		t.Fatalf("TryAcquire = %v, %v", ok, err)
	}
	started := make(chan string, 2)
	var wg sync.WaitGroup
	for _, name := range []string{"b", "c"} {
		l := lease.New(p, "telegram-poll", name, opts)
		wg.Go(func() {
			if err := l.Run(ctx, func(ctx context.Context) error {
				started <- name
				<-ctx.Done()
				return nil
			}); err != nil {
				t.Errorf("%s: Run: %v", name, err)
			}
		})
	}
	// Both campaign against a live lease: neither may start. They have
	// tried many times once the dead holder's own renewal attempt fails.
	for range 3 {
		if _, ok, _ := dead.Renew(ctx); !ok {
			t.Fatal("the holder lost its lease while nobody could take it")
		}
	}
	select {
	case n := <-started:
		t.Fatalf("%s started while the lease was held", n)
	default:
	}
	c.Add(11 * time.Second)
	first := <-started
	if h, _, _ := dead.State(ctx); h != first {
		t.Fatalf("holder = %q, but %q runs the work", h, first)
	}
	// The other keeps campaigning against a live lease: it never starts.
	for range 3 {
		if _, ok, _ := dead.TryAcquire(ctx); ok {
			t.Fatal("the dead holder took back a lease that was taken over")
		}
	}
	select {
	case n := <-started:
		t.Fatalf("%s started too, while %s held the lease", n, first)
	default:
	}
	cancel()
	wg.Wait()
}

// TestLeaseRunStopsWorkWhenLost: a holder whose lease was taken over (its
// renewals did not reach the database in time) stops its work at the next
// renewal; at shutdown it releases the lease so another takes it at once.
func TestLeaseRunStopsWorkWhenLost(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, c := pool(t), newClock()
	a := lease.New(p, "whatsapp", "a", lease.Options{TTL: 10 * time.Second, Every: 5 * time.Millisecond, Now: c.Now})
	running, stopped := make(chan struct{}), make(chan struct{})
	runs := 0
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, func(ctx context.Context) error {
			runs++
			if runs == 1 {
				close(running)
				<-ctx.Done()
				close(stopped)
			} else {
				<-ctx.Done()
			}
			return nil
		})
	}()
	<-running
	// b's clock runs 11s ahead: for b the lease expired.
	ahead := func() time.Time { return c.Now().Add(11 * time.Second) }
	b := lease.New(p, "whatsapp", "b", lease.Options{TTL: 10 * time.Second, Now: ahead})
	if _, ok, err := b.TryAcquire(ctx); err != nil || !ok {
		t.Fatalf("b: TryAcquire = %v, %v", ok, err)
	}
	<-stopped // a's work was cancelled: it does not act on a lost lease
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if h, until, _ := a.State(context.Background()); h == "a" && until.After(c.Now()) {
		t.Fatalf("a still holds the lease after Run returned (until %v)", until)
	}
}
