package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultTTL is how long a lease lasts without renewal when Options.TTL is 0.
const DefaultTTL = 15 * time.Second

// Options tune a Lease.
type Options struct {
	// TTL is how long the lease lasts after each renewal (DefaultTTL).
	// Another holder takes it over at the latest one TTL after the holder
	// died.
	TTL time.Duration
	// Every is how often Run renews a held lease and retries a taken one
	// (TTL/3).
	Every time.Duration
	// Now is the clock expiry is measured with (time.Now).
	Now func() time.Time
	// Log hears about leases won and lost (nil: nothing is logged).
	Log *slog.Logger
}

// Lease is one named lease as one holder sees it. Its methods are safe for
// concurrent use.
type Lease struct {
	pool   *pgxpool.Pool
	name   string
	holder string
	opts   Options
}

// New returns the lease name as holder sees it. It makes no database call.
// The table is created by the PostgreSQL migrations (memory.OpenPostgres).
func New(pool *pgxpool.Pool, name, holder string, opts Options) *Lease {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.Every <= 0 {
		opts.Every = opts.TTL / 3
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Lease{pool: pool, name: name, holder: holder, opts: opts}
}

// Name is the lease's name.
func (l *Lease) Name() string { return l.name }

// Holder is who this Lease acts for.
func (l *Lease) Holder() string { return l.holder }

const sqlAcquire = `INSERT INTO leases(name, holder, expires_at, acquired_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at,
	acquired_at = CASE WHEN leases.holder = EXCLUDED.holder THEN leases.acquired_at ELSE EXCLUDED.acquired_at END
WHERE leases.holder = EXCLUDED.holder OR leases.expires_at <= EXCLUDED.acquired_at
RETURNING holder`

const sqlRenew = `UPDATE leases SET expires_at = $3 WHERE name = $1 AND holder = $2 AND expires_at > $4`

const sqlRelease = `UPDATE leases SET expires_at = $3 WHERE name = $1 AND holder = $2`

const sqlState = `SELECT holder, expires_at FROM leases WHERE name = $1`

// TryAcquire takes the lease when nobody holds it, its holder let it
// expire, or it is this holder's already; then it lasts until the returned
// time (by Options.Now). ok is false when another holder has it.
func (l *Lease) TryAcquire(ctx context.Context) (until time.Time, ok bool, err error) {
	now := l.opts.Now()
	until = now.Add(l.opts.TTL)
	var h string
	err = l.pool.QueryRow(ctx, sqlAcquire, l.name, l.holder, until, now).Scan(&h)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("taking lease %s: %w", l.name, err)
	}
	return until, true, nil
}

// Renew extends a lease this holder has and that has not expired. ok is
// false when it was lost (expired, and perhaps taken over): the holder must
// stop acting on it.
func (l *Lease) Renew(ctx context.Context) (until time.Time, ok bool, err error) {
	now := l.opts.Now()
	until = now.Add(l.opts.TTL)
	tag, err := l.pool.Exec(ctx, sqlRenew, l.name, l.holder, until, now)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("renewing lease %s: %w", l.name, err)
	}
	if tag.RowsAffected() == 0 {
		return time.Time{}, false, nil
	}
	return until, true, nil
}

// Release gives the lease up at once when this holder has it, so another
// takes it over without waiting for the expiry.
func (l *Lease) Release(ctx context.Context) error {
	if _, err := l.pool.Exec(ctx, sqlRelease, l.name, l.holder, l.opts.Now()); err != nil {
		return fmt.Errorf("releasing lease %s: %w", l.name, err)
	}
	return nil
}

// State is who holds the lease and until when; holder is "" when nobody
// ever took it. (A lease past its expiry is free, whatever holder says.)
func (l *Lease) State(ctx context.Context) (holder string, until time.Time, err error) {
	err = l.pool.QueryRow(ctx, sqlState, l.name).Scan(&holder, &until)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("reading lease %s: %w", l.name, err)
	}
	return holder, until, nil
}

// Held reports whether this holder had the lease at its last renewal and it
// has not expired since, by the local clock.
func (l *Lease) Held(ctx context.Context) (bool, error) {
	h, until, err := l.State(ctx)
	if err != nil {
		return false, err
	}
	return h == l.holder && until.After(l.opts.Now()), nil
}

// Run campaigns for the lease until ctx ends: while another holder has it,
// it tries again every Options.Every; once it has it, it runs work with a
// context that is cancelled when the lease is lost (not renewed before it
// expires) or ctx ends, and renews the lease every Options.Every meanwhile.
// When work returns after the lease was lost, Run campaigns again; when
// work fails while the lease is held, Run gives the lease up and returns
// the error. At the end Run releases the lease, so another holder takes
// over at once, and returns nil.
func (l *Lease) Run(ctx context.Context, work func(ctx context.Context) error) error {
	for {
		until, ok, err := l.TryAcquire(ctx)
		if err != nil && ctx.Err() == nil {
			l.opts.Log.Warn("cannot reach the database to take a lease; retrying", "lease", l.name, "err", err)
		}
		if ok {
			l.opts.Log.Info("took the lease", "lease", l.name, "holder", l.holder)
			lost, err := l.hold(ctx, until, work)
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opts.Every)
			rerr := l.Release(rctx)
			cancel()
			if rerr != nil && !lost {
				l.opts.Log.Warn("releasing a lease failed; it expires by itself", "lease", l.name, "err", rerr)
			}
			if err != nil {
				return err
			}
			if lost {
				l.opts.Log.Warn("lost the lease: it could not be renewed in time; another replica takes over", "lease", l.name, "holder", l.holder)
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		t := time.NewTimer(l.opts.Every)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// hold runs work while renewing the lease. lost reports that work was
// stopped because the lease was lost; err is work's error while it was
// held.
func (l *Lease) hold(ctx context.Context, until time.Time, work func(ctx context.Context) error) (lost bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- work(wctx) }()
	tick := time.NewTicker(l.opts.Every)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if lost || ctx.Err() != nil {
				return lost, nil
			}
			return false, err
		case <-tick.C:
			if lost {
				continue
			}
			next, ok, err := l.Renew(wctx)
			switch {
			case ok:
				until = next
			case err == nil || !l.opts.Now().Before(until):
				// Taken over, or expired while the database could not
				// be reached: stop acting on it.
				lost = true
				cancel()
			default:
				l.opts.Log.Warn("renewing a lease failed; retrying before it expires", "lease", l.name, "until", until, "err", err)
			}
		}
	}
}
