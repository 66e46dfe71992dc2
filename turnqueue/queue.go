package turnqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallbot/recall/pipeline"
)

// Defaults of Options.
const (
	DefaultWorkers     = 8
	DefaultLease       = 30 * time.Second
	DefaultRescan      = time.Second
	DefaultKeep        = 48 * time.Hour
	DefaultMaxAttempts = 5
	DefaultGrace       = 30 * time.Second
)

// notifyChannel is the LISTEN/NOTIFY channel of new rows; the payload is
// the schema, so replicas of other schemas on the database ignore them.
const notifyChannel = "recall_turns"

// dbTimeout bounds each of the queue's own statements.
const dbTimeout = 10 * time.Second

// Options tune a Queue.
type Options struct {
	Workers     int           // turns run at a time by this replica (DefaultWorkers)
	Lease       time.Duration // how long a claimed turn is this replica's without renewal (DefaultLease)
	Renew       time.Duration // how often a running turn's lease is renewed (Lease/3)
	Rescan      time.Duration // how often to look for turns whose lease expired (DefaultRescan)
	Keep        time.Duration // how long finished rows are kept to drop redeliveries (DefaultKeep)
	MaxAttempts int           // claims of one turn before it is given up (DefaultMaxAttempts)
	Grace       time.Duration // how long Run lets running turns finish once ctx ended (DefaultGrace)
	Now         func() time.Time
	Log         *slog.Logger
	// Resume, when set, runs first for a turn another replica left
	// unfinished (claimed again): it finishes what that replica's
	// delivery left under way (chat.SharedOutbox.Resume); finished
	// reports that the turn needs nothing more.
	Resume func(ctx context.Context, t *pipeline.Turn) (finished bool, err error)
	// Sticky, when set, reports after each turn whether the
	// conversation's next turns must run on this replica (a command
	// asked a question whose answer only it understands,
	// commands.Commands.Asking): the conversation is then claimed by this
	// replica alone, renewed like a turn's lease, until Sticky says no.
	Sticky func(key pipeline.Key) bool
}

// Channel is where the turns of one chat channel are answered on this
// replica.
type Channel struct {
	Out pipeline.Sender
	// Restore gives back what an Inbound loses when stored (a media's
	// Fetch); nil keeps it as stored.
	Restore func(pipeline.Inbound) pipeline.Inbound
}

// Queue is this replica's side of the shared queue: Submit inserts, Run
// claims and runs turns with the chain h.
type Queue struct {
	pool   *pgxpool.Pool
	h      pipeline.Handler
	holder string
	opts   Options

	base     context.Context // parent of every turn's context; cancelled at a hard stop
	hardStop context.CancelFunc
	wake     chan struct{} // one idle worker looks for work
	failing  atomic.Bool   // the database could not be reached: logged once per outage

	mu       sync.Mutex
	pinned   map[pipeline.Key]bool // conversations held for this replica (Options.Sticky)
	channels map[string]Channel
	stopping bool
	running  bool
}

// New returns the queue of the database behind pool as replica holder (a
// name unique among the replicas) runs it, with the chain h. It makes no
// database call; the table is created by the PostgreSQL migrations.
func New(pool *pgxpool.Pool, h pipeline.Handler, holder string, opts Options) *Queue {
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.Renew <= 0 || opts.Renew >= opts.Lease {
		opts.Renew = opts.Lease / 3
	}
	if opts.Rescan <= 0 {
		opts.Rescan = DefaultRescan
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	q := &Queue{pool: pool, h: pipeline.Chain(h, pipeline.Recover()), holder: holder, opts: opts,
		wake: make(chan struct{}, 1), channels: map[string]Channel{}, pinned: map[pipeline.Key]bool{}}
	q.base, q.hardStop = context.WithCancel(context.Background())
	return q
}

// Register makes this replica answer the turns of channel through ch.
// Turns of channels no replica registered wait in the table.
func (q *Queue) Register(channel string, ch Channel) {
	q.mu.Lock()
	q.channels[channel] = ch
	q.mu.Unlock()
	q.ring()
}

// Unregister stops this replica from claiming channel's turns (a turn
// already claimed finishes): they wait in the table for a replica that
// registered it.
func (q *Queue) Unregister(channel string) {
	q.mu.Lock()
	delete(q.channels, channel)
	q.mu.Unlock()
}

const sqlInsert = `WITH ins AS (
	INSERT INTO turn_queue(channel, conv_key, platform_id, inbound, received_at)
	VALUES ($1, $2, NULLIF($3, ''), $4, $5)
	ON CONFLICT (conv_key, platform_id) DO NOTHING
	RETURNING id
)
SELECT ins.id FROM ins CROSS JOIN LATERAL (SELECT pg_notify('` + notifyChannel + `', current_schema())) n`

// Submit inserts a turn for in's conversation and returns once it is in
// the database; out is ignored (the turn is answered through the sender
// registered for its channel, by whichever replica runs it). A message
// already in the queue (same conversation and platform message id) is
// dropped: redelivered. It returns pipeline.ErrStopped once Run is
// stopping, and an error wrapping pipeline.ErrUnavailable when the database
// cannot take it (the channel leaves the update with the platform).
func (q *Queue) Submit(in pipeline.Inbound, _ pipeline.Sender) error {
	_, err := q.submit(in)
	return err
}

func (q *Queue) submit(in pipeline.Inbound) (inserted bool, err error) {
	if err := in.Key.Validate(); err != nil {
		return false, fmt.Errorf("submitting turn: %w", err)
	}
	q.mu.Lock()
	stopping := q.stopping
	q.mu.Unlock()
	if stopping {
		return false, pipeline.ErrStopped
	}
	body, err := json.Marshal(in)
	if err != nil {
		return false, fmt.Errorf("encoding turn %s of %s: %w", in.MessageID, in.Key, err)
	}
	ctx, cancel := context.WithTimeout(q.base, dbTimeout)
	defer cancel()
	var id int64
	err = q.pool.QueryRow(ctx, sqlInsert, in.Key.Channel, in.Key.String(), in.MessageID, body, q.opts.Now()).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		q.opts.Log.Debug("dropped a redelivered update (already in the shared queue)", "key", in.Key, "msg_id", in.MessageID)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%w: queueing turn %s of %s: %w", pipeline.ErrUnavailable, in.MessageID, in.Key, err)
	}
	q.ring()
	return true, nil
}

// ring wakes one idle worker.
func (q *Queue) ring() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

const sqlClaim = `UPDATE turn_queue t SET holder = $1, lease_until = $2, attempts = t.attempts + 1
WHERE t.id = (
	SELECT c.id FROM turn_queue c
	WHERE c.done_at IS NULL AND c.channel = ANY($4)
		AND (c.lease_until IS NULL OR c.lease_until <= $3)
		AND NOT EXISTS (SELECT 1 FROM turn_queue p WHERE p.conv_key = c.conv_key AND p.done_at IS NULL AND p.id < c.id)
		AND NOT EXISTS (SELECT 1 FROM turn_affinity a WHERE a.conv_key = c.conv_key AND a.holder <> $1 AND a.until > $3)
	ORDER BY c.id
	LIMIT 1
	FOR UPDATE SKIP LOCKED
)
RETURNING t.id, t.inbound, t.attempts`

const sqlRenew = `UPDATE turn_queue SET lease_until = $3 WHERE id = $1 AND holder = $2 AND done_at IS NULL AND lease_until > $4`

const sqlDone = `UPDATE turn_queue SET done_at = $3 WHERE id = $1 AND holder = $2 AND done_at IS NULL`

const sqlRelease = `UPDATE turn_queue SET lease_until = NULL WHERE id = $1 AND holder = $2 AND done_at IS NULL`

const sqlSweep = `DELETE FROM turn_queue WHERE done_at < $1`

// sqlSweepPins deletes the holds that lapsed long ago (their replica died).
const sqlSweepPins = `DELETE FROM turn_affinity WHERE until < $1`

const sqlPin = `INSERT INTO turn_affinity(conv_key, holder, until) VALUES ($1, $2, $3)
ON CONFLICT (conv_key) DO UPDATE SET holder = EXCLUDED.holder, until = EXCLUDED.until`

const sqlUnpin = `DELETE FROM turn_affinity WHERE conv_key = $1 AND holder = $2`

const sqlPinned = `SELECT EXISTS (SELECT 1 FROM turn_affinity WHERE conv_key = $1 AND until > $2)`

// claimed is a turn this replica leased.
type claimed struct {
	id       int64
	in       pipeline.Inbound
	attempts int
	until    time.Time
}

// claim leases the next turn this replica can run; ok is false when there
// is none.
func (q *Queue) claim() (t claimed, ok bool, err error) {
	q.mu.Lock()
	names := make([]string, 0, len(q.channels))
	for n := range q.channels {
		names = append(names, n)
	}
	q.mu.Unlock()
	if len(names) == 0 {
		return t, false, nil
	}
	ctx, cancel := context.WithTimeout(q.base, dbTimeout)
	defer cancel()
	now := q.opts.Now()
	t.until = now.Add(q.opts.Lease)
	var body []byte
	err = q.pool.QueryRow(ctx, sqlClaim, q.holder, t.until, now, names).Scan(&t.id, &body, &t.attempts)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, false, nil
	}
	if err != nil {
		return t, false, fmt.Errorf("claiming a turn from the shared queue: %w", err)
	}
	if err := json.Unmarshal(body, &t.in); err != nil {
		// Not runnable on any replica: finished, so it holds nothing up.
		q.finish(t.id, sqlDone)
		return t, false, fmt.Errorf("decoding turn %d of the shared queue (dropped): %w", t.id, err)
	}
	return t, true, nil
}

// finish runs sqlDone or sqlRelease for turn id, logging a failure.
func (q *Queue) finish(id int64, stmt string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(q.base), dbTimeout)
	defer cancel()
	args := []any{id, q.holder}
	if stmt == sqlDone {
		args = append(args, q.opts.Now())
	}
	if _, err := q.pool.Exec(ctx, stmt, args...); err != nil {
		q.opts.Log.Warn("updating a turn of the shared queue failed; its lease expires by itself", "turn", id, "err", err)
	}
}

// Run claims and runs turns, Options.Workers at a time, until ctx ends;
// then it stops claiming, lets running turns finish for Options.Grace,
// cancels those still running (their rows go back to the queue for
// another replica) and returns once every goroutine it started returned.
func (q *Queue) Run(ctx context.Context) error {
	q.mu.Lock()
	if q.running {
		q.mu.Unlock()
		return errors.New("turnqueue: Run called twice")
	}
	q.running = true
	q.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { q.listen(ctx) })
	wg.Go(func() { q.sweep(ctx) })
	wg.Go(func() { q.keepPins(ctx) })
	wg.Go(func() { q.rescan(ctx) })
	for range q.opts.Workers {
		wg.Go(func() { q.work(ctx) })
	}
	<-ctx.Done()
	q.mu.Lock()
	q.stopping = true
	q.mu.Unlock()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	grace := time.NewTimer(q.opts.Grace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		q.opts.Log.Warn("shutdown deadline reached: cancelling the turns still running; other replicas take them over")
		q.hardStop()
		<-done
	}
	q.hardStop()
	return nil
}

// rescan wakes a worker every Options.Rescan until ctx ends: how turns
// whose lease expired are found (no NOTIFY says so).
func (q *Queue) rescan(ctx context.Context) {
	tick := time.NewTicker(q.opts.Rescan)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			q.ring()
		}
	}
}

// work claims and runs turns until ctx ends. An idle worker waits to be
// woken (a new row, a rescan, or a worker that found work: there may be
// more), so an idle replica asks the database once per rescan.
func (q *Queue) work(ctx context.Context) {
	for ctx.Err() == nil {
		t, ok, err := q.claim()
		switch {
		case err != nil && q.base.Err() == nil:
			if !q.failing.Swap(true) {
				q.opts.Log.Warn("the shared queue cannot be read; retrying every rescan", "rescan", q.opts.Rescan, "err", err)
			}
		case err == nil && q.failing.Swap(false):
			q.opts.Log.Info("the shared queue can be read again")
		}
		if ok {
			q.ring() // there may be more: another idle worker looks
			q.run(t)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		}
	}
}

// run runs one claimed turn, renewing its lease meanwhile.
func (q *Queue) run(t claimed) {
	log := q.opts.Log.With("key", t.in.Key)
	if t.attempts > q.opts.MaxAttempts {
		log.Error("giving up a turn: every replica that ran it died or was stopped before it ended", "msg_id", t.in.MessageID, "attempts", t.attempts-1)
		q.finish(t.id, sqlDone)
		return
	}
	if t.attempts > 1 {
		log.Info("taking over a turn another replica left unfinished", "msg_id", t.in.MessageID, "attempt", t.attempts)
	}
	q.mu.Lock()
	ch, ok := q.channels[t.in.Key.Channel]
	q.mu.Unlock()
	if !ok { // registered channels only are claimed
		q.finish(t.id, sqlRelease)
		return
	}
	in := t.in
	if ch.Restore != nil {
		in = ch.Restore(in)
	}
	tctx, cancel := context.WithCancel(q.base)
	defer cancel()
	var (
		lost     bool
		renewing sync.WaitGroup
		stop     = make(chan struct{})
	)
	renewing.Go(func() { lost = q.renew(tctx, t, stop, cancel) })
	turn := &pipeline.Turn{In: in, Out: ch.Out, Log: log}
	finished := false
	if t.attempts > 1 && q.opts.Resume != nil {
		var rerr error
		if finished, rerr = q.opts.Resume(tctx, turn); rerr != nil {
			log.Warn("finishing the delivery another replica left under way", "msg_id", in.MessageID, "err", rerr)
		}
	}
	var err error
	if !finished {
		err = q.h.Handle(tctx, turn)
	}
	if tctx.Err() == nil {
		q.stick(in.Key) // before the turn is done: its next turn must find it
	}
	close(stop)
	renewing.Wait()
	switch {
	case lost:
		log.Warn("lost the lease of a turn while running it (the database could not be reached in time); another replica runs it", "msg_id", in.MessageID)
		return
	case err != nil && q.base.Err() != nil:
		log.Warn("turn cancelled at shutdown; another replica runs it", "msg_id", in.MessageID)
		q.finish(t.id, sqlRelease)
		return
	}
	q.finish(t.id, sqlDone)
	var pe *pipeline.PanicError
	switch {
	case err == nil:
	case errors.As(err, &pe):
		log.Error("turn panicked", "msg_id", in.MessageID, "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	default:
		log.Error("turn failed", "msg_id", in.MessageID, "err", err)
	}
}

// renew keeps t's lease until stop is closed; when the lease is lost it
// cancels the turn and reports true.
func (q *Queue) renew(ctx context.Context, t claimed, stop <-chan struct{}, cancel context.CancelFunc) bool {
	tick := time.NewTicker(q.opts.Renew)
	defer tick.Stop()
	until := t.until
	for {
		select {
		case <-stop:
			return false
		case <-tick.C:
		}
		now := q.opts.Now()
		next := now.Add(q.opts.Lease)
		rctx, rcancel := context.WithTimeout(ctx, max(q.opts.Renew, time.Second))
		tag, err := q.pool.Exec(rctx, sqlRenew, t.id, q.holder, next, now)
		rcancel()
		switch {
		case err == nil && tag.RowsAffected() == 1:
			until = next
		case err == nil || !now.Before(until):
			cancel()
			return true
		case ctx.Err() != nil:
			return false
		}
	}
}

// stick holds key's next turns for this replica while Options.Sticky says
// so, and lets them go once it no longer does.
func (q *Queue) stick(key pipeline.Key) {
	if q.opts.Sticky == nil {
		return
	}
	want := q.opts.Sticky(key)
	q.mu.Lock()
	had := q.pinned[key]
	if want {
		q.pinned[key] = true
	} else {
		delete(q.pinned, key)
	}
	q.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(q.base), dbTimeout)
	defer cancel()
	var err error
	switch {
	case want:
		_, err = q.pool.Exec(ctx, sqlPin, key.String(), q.holder, q.opts.Now().Add(q.opts.Lease))
	case had:
		_, err = q.pool.Exec(ctx, sqlUnpin, key.String(), q.holder)
	}
	if err != nil {
		q.opts.Log.Warn("holding a conversation that waits for an answer on this replica", "key", key, "err", err)
	}
}

// keepPins renews the conversations held for this replica every
// Options.Renew until ctx ends, then lets them all go.
func (q *Queue) keepPins(ctx context.Context) {
	tick := time.NewTicker(q.opts.Renew)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			q.mu.Lock()
			keys := make([]pipeline.Key, 0, len(q.pinned))
			for k := range q.pinned {
				keys = append(keys, k)
			}
			q.pinned = map[pipeline.Key]bool{}
			q.mu.Unlock()
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dbTimeout)
			for _, k := range keys {
				_, _ = q.pool.Exec(uctx, sqlUnpin, k.String(), q.holder) // else it lapses by itself
			}
			cancel()
			return
		case <-tick.C:
		}
		q.mu.Lock()
		keys := make([]pipeline.Key, 0, len(q.pinned))
		for k := range q.pinned {
			keys = append(keys, k)
		}
		q.mu.Unlock()
		for _, k := range keys {
			q.stick(k)
		}
	}
}

// Pinned reports whether key's turns are held for one replica (a question
// waits for its answer there). A failure to ask says no.
func (q *Queue) Pinned(ctx context.Context, key pipeline.Key) bool {
	var ok bool
	if err := q.pool.QueryRow(ctx, sqlPinned, key.String(), q.opts.Now()).Scan(&ok); err != nil {
		return false
	}
	return ok
}

// sweep deletes finished rows older than Options.Keep, and holds that
// lapsed an hour ago, at start and hourly.
func (q *Queue) sweep(ctx context.Context) {
	tick := time.NewTicker(time.Hour)
	defer tick.Stop()
	for {
		sctx, cancel := context.WithTimeout(ctx, dbTimeout)
		if _, err := q.pool.Exec(sctx, sqlSweep, q.opts.Now().Add(-q.opts.Keep)); err != nil && ctx.Err() == nil {
			q.opts.Log.Warn("deleting finished turns from the shared queue failed", "err", err)
		}
		if _, err := q.pool.Exec(sctx, sqlSweepPins, q.opts.Now().Add(-time.Hour)); err != nil && ctx.Err() == nil {
			q.opts.Log.Warn("deleting lapsed conversation holds failed", "err", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// listen wakes a worker on every row inserted by any replica, until ctx
// ends. Without it the workers still look every Options.Rescan.
func (q *Queue) listen(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		listening, err := q.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if listening {
			failures = 0
		}
		if failures == 0 {
			q.opts.Log.Warn("listening for new turns failed; looking every rescan meanwhile", "err", err, "rescan", q.opts.Rescan)
		}
		failures++
		t := time.NewTimer(q.opts.Rescan)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// listenOnce listens until the connection fails; listening reports that
// it got as far as LISTEN.
func (q *Queue) listenOnce(ctx context.Context) (listening bool, err error) {
	// A connection of its own, outside the pool: it waits all the time.
	conn, err := pgx.ConnectConfig(ctx, q.pool.Config().ConnConfig.Copy())
	if err != nil {
		return false, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return false, err
	}
	if _, err := conn.Exec(ctx, `LISTEN `+notifyChannel); err != nil {
		return false, err
	}
	q.ring() // rows inserted before we listened
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		if n.Payload == schema {
			q.ring()
		}
	}
}
