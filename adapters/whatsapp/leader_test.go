package whatsapp

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallbot/recall/memory/pgtest"
	"github.com/recallbot/recall/pipeline"
)

// pgLease is a leader lease in PostgreSQL for these tests, with the
// semantics of Lease (the lease package's, on the replicas' branch, is the
// one the bot runs): a row per name with its holder and expiry by the
// database's clock, taken when free or expired, renewed every `every`,
// released at the end — unless the holder "crashed" (crash), which stops
// renewing and releases nothing, as a killed process does.
type pgLease struct {
	pool          *pgxpool.Pool
	name, holder  string
	ttl, every    time.Duration
	crashed       atomic.Bool
	refused       chan struct{} // an attempt found another holder
	lastRenewedAt atomic.Int64  // the expiry of the last renewal (unix ms, the database's clock)
}

const pgLeaseTable = `CREATE TABLE IF NOT EXISTS test_leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)`

func (l *pgLease) try(ctx context.Context) (bool, error) {
	var until time.Time
	err := l.pool.QueryRow(ctx, `INSERT INTO test_leases(name, holder, expires_at) VALUES ($1, $2, clock_timestamp() + $3::interval)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		WHERE test_leases.holder = excluded.holder OR test_leases.expires_at <= clock_timestamp()
		RETURNING expires_at`, l.name, l.holder, l.ttl.String()).Scan(&until)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err == nil {
		l.lastRenewedAt.Store(until.UnixMilli())
	}
	return err == nil, err
}

func (l *pgLease) renew(ctx context.Context) bool {
	var until time.Time
	err := l.pool.QueryRow(ctx, `UPDATE test_leases SET expires_at = clock_timestamp() + $3::interval
		WHERE name = $1 AND holder = $2 AND expires_at > clock_timestamp() RETURNING expires_at`, l.name, l.holder, l.ttl.String()).Scan(&until)
	if err == nil {
		l.lastRenewedAt.Store(until.UnixMilli())
	}
	return err == nil
}

func (l *pgLease) Run(ctx context.Context, work func(ctx context.Context) error) error {
	for {
		ok, err := l.try(ctx)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if ok {
			wctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- work(wctx) }()
			tick := time.NewTicker(l.every)
			var werr error
		hold:
			for {
				select {
				case werr = <-done:
					break hold
				case <-tick.C:
					if l.crashed.Load() {
						continue // a dead process renews nothing
					}
					if !l.renew(ctx) {
						cancel()
					}
				}
			}
			tick.Stop()
			cancel()
			if ctx.Err() != nil {
				if !l.crashed.Load() {
					_, _ = l.pool.Exec(context.Background(), `UPDATE test_leases SET expires_at = clock_timestamp() WHERE name = $1 AND holder = $2`, l.name, l.holder)
				}
				return nil
			}
			if werr != nil {
				return werr
			}
		} else {
			select {
			case l.refused <- struct{}{}:
			default:
			}
		}
		t := time.NewTimer(l.every)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// oneSocket is WhatsApp's side of one linked device: it accepts one
// connection at a time and counts the times two replicas were connected at
// once (WhatsApp would have replaced the first).
type oneSocket struct {
	mu        sync.Mutex
	connected map[*socketClient]time.Time
	overlaps  int
}

// socketClient is one replica's fake client, connected through oneSocket.
type socketClient struct {
	*fakeClient
	sock        *oneSocket
	connectedAt atomic.Int64 // unix ms of the last connect
}

func (c *socketClient) Connect() error {
	c.sock.mu.Lock()
	if len(c.sock.connected) > 0 {
		c.sock.overlaps++
	}
	c.sock.connected[c] = time.Now()
	c.sock.mu.Unlock()
	c.connectedAt.Store(time.Now().UnixMilli())
	return c.fakeClient.Connect()
}

func (c *socketClient) Disconnect() {
	c.sock.mu.Lock()
	delete(c.sock.connected, c)
	c.sock.mu.Unlock()
	c.fakeClient.Disconnect()
}

// replica is one bot process's WhatsApp channel: the adapter on its own
// client, its lease, and the messages it handed to the pipeline.
type replica struct {
	name   string
	cli    *socketClient
	ad     *Adapter
	lease  *pgLease
	got    chan pipeline.Inbound
	cancel context.CancelFunc
	done   chan error
}

func newReplica(t *testing.T, name string, pool *pgxpool.Pool, sock *oneSocket, ttl time.Duration) *replica {
	r := &replica{name: name, got: make(chan pipeline.Inbound, 10)}
	r.cli = &socketClient{fakeClient: newFakeClient(t), sock: sock}
	ad, err := New(Options{DataDir: t.TempDir(), Client: r.cli}, func(in pipeline.Inbound, _ pipeline.Sender) error {
		r.got <- in
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.ad = ad
	r.lease = &pgLease{pool: pool, name: "channel:whatsapp", holder: name, ttl: ttl, every: ttl / 10, refused: make(chan struct{}, 1)}
	t.Cleanup(func() { r.stop(); ad.Close() })
	return r
}

// start runs the channel as the bot does on PostgreSQL: RunLeader.
func (r *replica) start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan error, 1)
	go func() { r.done <- r.ad.RunLeader(ctx, r.lease) }()
}

// stop ends the process gracefully (the lease is released).
func (r *replica) stop() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
		r.cancel = nil
	}
}

// crash kills the process: no release, no renewal, the socket gone.
func (r *replica) crash() {
	r.lease.crashed.Store(true)
	r.stop()
	r.cli.Disconnect()
}

// TestLeaderHoldsTheConnection: two replicas run the WhatsApp channel on
// one database; exactly one connects, the other stands by (healthy) and
// connects only once the first's lease is gone — after its expiry when the
// first dies without a word, at once when it stops and releases it. A
// replica whose channel runs again answers each message once.
func TestLeaderHoldsTheConnection(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, pgLeaseTable); err != nil {
		t.Fatal(err)
	}
	sock := &oneSocket{connected: map[*socketClient]time.Time{}}
	const ttl = 2 * time.Second
	a, b := newReplica(t, "a", pool, sock, ttl), newReplica(t, "b", pool, sock, ttl)

	a.start()
	a.cli.waitFor("a connected", func() bool { return a.cli.connected })
	b.start()
	for range 3 { // b campaigns and is refused, three times
		select {
		case <-b.lease.refused:
		case <-time.After(10 * time.Second):
			t.Fatal("b never asked for the lease")
		}
	}
	if n := b.cli.connectCount(); n != 0 {
		t.Fatalf("b connected %d times while a held the lease", n)
	}
	if err := b.ad.Health(); err != nil {
		t.Errorf("a standing-by replica is unhealthy: %v", err)
	}

	// a dies: b connects after a's lease expired, not before.
	expiry := time.UnixMilli(a.lease.lastRenewedAt.Load())
	a.crash()
	b.cli.waitFor("b connected after a died", func() bool { return b.cli.connected })
	if at := time.UnixMilli(b.cli.connectedAt.Load()); at.Before(expiry) {
		t.Errorf("b connected at %s, before a's lease expired at %s", at.Format(time.StampMilli), expiry.Format(time.StampMilli))
	} else if at.Sub(expiry) > ttl {
		t.Errorf("b took over %s after the expiry, want within the lease's %s", at.Sub(expiry), ttl)
	}

	// a comes back (its channel runs again on the same adapter) and
	// stands by; b stops gracefully: a connects at once, well before b's
	// lease would have expired.
	a.lease.crashed.Store(false)
	a.start()
	select {
	case <-a.lease.refused:
	case <-time.After(10 * time.Second):
		t.Fatal("a never asked for the lease again")
	}
	bExpiry := time.UnixMilli(b.lease.lastRenewedAt.Load())
	b.stop()
	b.cli.Disconnect() // the process exits after its last replies
	a.cli.waitFor("a connected after b stopped", func() bool { return a.cli.connected })
	if at := time.UnixMilli(a.cli.connectedAt.Load()); !at.Before(bExpiry) {
		t.Errorf("a connected at %s, not before b's released lease would have expired (%s)", at.Format(time.StampMilli), bExpiry.Format(time.StampMilli))
	}
	ev := msgEvent(pnJID, pnJID, "M1", "after the takeover")
	ev.Info.Timestamp = time.Now()
	a.cli.deliver(ev)
	select {
	case in := <-a.got:
		if in.Text != "after the takeover" {
			t.Errorf("a handed %q to the pipeline", in.Text)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a's second run took no message")
	}
	select {
	case in := <-a.got:
		t.Errorf("the message went to the pipeline twice (the first run's handler too): %q", in.Text)
	default:
	}

	// a loses the lease while alive (an operator hands it elsewhere; a
	// replica cut off from the database by its renewals failing): it lets
	// go of the connection by itself.
	if _, err := pool.Exec(ctx, `UPDATE test_leases SET holder = 'maintenance'`); err != nil {
		t.Fatal(err)
	}
	a.cli.waitFor("a disconnected after losing the lease", func() bool { return !a.cli.connected })

	sock.mu.Lock()
	defer sock.mu.Unlock()
	if sock.overlaps != 0 {
		t.Errorf("two replicas were connected at once %d times", sock.overlaps)
	}
}

func (f *fakeClient) connectCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.connects
}
