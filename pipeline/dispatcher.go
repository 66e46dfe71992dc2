package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Defaults for NewDispatcher.
const (
	DefaultMaxQueue = 1000             // turns waiting per conversation before Submit says ErrBusy
	DefaultGrace    = 30 * time.Second // how long Run and Close let turns finish at shutdown
)

// maxRefusals bounds the refused turns waiting for their Refuser; past it a
// refused turn is only logged.
const maxRefusals = 10000

// refuseTimeout bounds one run of the Refuser.
const refuseTimeout = 30 * time.Second

// Refuser handles a turn that its conversation's queue had no room for
// (WithMaxQueue): it tells the user — first is true for the first refusal
// since the conversation's queue was last empty, one notice per burst — and
// undoes what the channel did on arrival (a stored copy). It runs on the
// dispatcher's own goroutine, one refusal at a time, never inside Submit.
type Refuser func(ctx context.Context, t *Turn, first bool) error

// Dispatcher runs turns: those of one conversation strictly in submission
// order, one at a time; those of different conversations concurrently, at
// most maxConcurrent in flight. A slow turn holds only its own conversation
// (and one of the maxConcurrent slots); conversations waiting for a slot are
// served round-robin, one turn each, so a busy conversation cannot starve the
// others.
//
// Goroutines: workers are started on demand, never more than maxConcurrent,
// and exit when no conversation has work; one more runs the Refuser
// (WithRefuser) while turns past a full queue wait for it. Each belongs to
// the dispatcher; Shutdown returns only after all of them (and so every
// handler) returned.
//
// Lifecycle: Submit until Shutdown (or Run's ctx ending, or Close) begins;
// after that Submit returns ErrStopped. Shutdown lets running and queued turns
// finish until its ctx ends, then cancels the running turns' contexts, drops
// the queued ones, waits, and reports what was dropped.
type Dispatcher struct {
	h        Handler
	log      *slog.Logger
	max      int
	maxQueue int
	grace    time.Duration

	// base is the parent of every turn's context. It is the dispatcher's own
	// lifecycle, not a request context: it is cancelled only at a hard stop.
	base     context.Context
	hardStop context.CancelCauseFunc

	refuse Refuser // nil: refused turns are only reported by Submit

	wg   sync.WaitGroup // workers and the refusal goroutine
	quit chan struct{}  // closed when shutdown begins
	done chan struct{}  // closed when shutdown has begun and no worker is left

	mu       sync.Mutex
	lanes    map[Key]*lane // conversations with a turn queued or running
	ready    []*lane       // lanes with queued turns and no running turn, FIFO
	workers  int
	inFlight int
	queued   int
	stopping bool
	doneSent bool
	result   *ShutdownError // set once, by the hard stop; not changed after

	refusals []refusal // refused turns waiting for refuse
	refusing bool      // the refusal goroutine runs
}

// refusal is a refused turn for the Refuser.
type refusal struct {
	j     job
	first bool
}

// lane is one conversation's queue. It is in ready, or its turn is running.
type lane struct {
	key     Key
	jobs    []job
	refused bool // a turn was refused since the lane was made: the burst was told
}

type job struct {
	in  Inbound
	out Sender
}

// DispatcherOption changes a Dispatcher's defaults.
type DispatcherOption func(*Dispatcher)

// WithMaxQueue caps the turns waiting per conversation (DefaultMaxQueue);
// n <= 0 removes the cap.
func WithMaxQueue(n int) DispatcherOption { return func(d *Dispatcher) { d.maxQueue = n } }

// WithRefuser sets what is done with a turn past the conversation's queue
// (Submit still returns ErrBusy for it).
func WithRefuser(r Refuser) DispatcherOption { return func(d *Dispatcher) { d.refuse = r } }

// WithGrace sets how long Run and Close let turns finish before cancelling
// them (DefaultGrace).
func WithGrace(grace time.Duration) DispatcherOption { return func(d *Dispatcher) { d.grace = grace } }

// NewDispatcher returns a dispatcher that runs h for each submitted turn, at
// most maxConcurrent (at least 1) at a time. log receives handler errors and
// panics; nil discards.
func NewDispatcher(h Handler, maxConcurrent int, log *slog.Logger, opts ...DispatcherOption) *Dispatcher {
	if log == nil {
		log = discard
	}
	d := &Dispatcher{
		h:        h,
		log:      log,
		max:      max(maxConcurrent, 1),
		maxQueue: DefaultMaxQueue,
		grace:    DefaultGrace,
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		lanes:    make(map[Key]*lane),
	}
	for _, o := range opts {
		o(d)
	}
	d.base, d.hardStop = context.WithCancelCause(context.Background())
	return d
}

// Submit queues a turn for in's conversation and returns at once; it never
// waits for a turn to be processed. out is where the turn's answers go. It
// returns ErrStopped once shutdown has begun, ErrBusy when the conversation's
// queue is full, and an ErrBadKey error for an invalid key.
func (d *Dispatcher) Submit(in Inbound, out Sender) error {
	if err := in.Key.Validate(); err != nil {
		return fmt.Errorf("submitting turn: %w", err)
	}
	if out == nil {
		return fmt.Errorf("submitting turn for %s: nil Sender", in.Key)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopping {
		return ErrStopped
	}
	l := d.lanes[in.Key]
	if l != nil && d.maxQueue > 0 && len(l.jobs) >= d.maxQueue {
		d.refuseLocked(l, job{in: in, out: out})
		return fmt.Errorf("%w: %d turns waiting in %s", ErrBusy, len(l.jobs), in.Key)
	}
	if l == nil {
		l = &lane{key: in.Key}
		d.lanes[in.Key] = l
		d.ready = append(d.ready, l)
		if d.workers < d.max {
			d.workers++
			d.wg.Go(d.work)
		}
	}
	l.jobs = append(l.jobs, job{in: in, out: out})
	d.queued++
	return nil
}

// Stats reports how many turns are running and how many are waiting.
func (d *Dispatcher) Stats() (inFlight, queued int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.inFlight, d.queued
}

// Run blocks until ctx is done, then shuts down, giving turns the grace
// period (WithGrace) to finish. When Shutdown is called elsewhere first, Run
// waits for that shutdown instead. It returns nil after a clean drain and a
// *ShutdownError when turns had to be dropped.
func (d *Dispatcher) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return d.Close()
	case <-d.quit:
		return d.wait()
	}
}

// Close shuts down with the grace period (WithGrace); see Shutdown.
func (d *Dispatcher) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), d.grace)
	defer cancel()
	return d.Shutdown(ctx)
}

// Shutdown stops accepting turns (Submit returns ErrStopped from now on) and
// waits for the running and the already queued turns to finish. If ctx ends
// first, it cancels the running turns' contexts, discards the queued ones,
// waits for the handlers to return and reports the count in a *ShutdownError
// that wraps ctx's error. It is safe to call more than once and concurrently;
// every call returns once all turns are done, with the same error once turns
// were dropped.
func (d *Dispatcher) Shutdown(ctx context.Context) error {
	d.mu.Lock()
	if !d.stopping {
		d.stopping = true
		close(d.quit)
		d.signalDoneLocked()
	}
	d.mu.Unlock()

	select {
	case <-d.done:
	case <-ctx.Done():
		d.stopHard(ctx)
	}
	return d.wait()
}

// wait returns once shutdown has begun and every worker has exited.
func (d *Dispatcher) wait() error {
	<-d.done
	d.wg.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.result != nil {
		return d.result
	}
	return nil
}

// stopHard discards the queued turns and cancels the running ones.
func (d *Dispatcher) stopHard(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.result != nil || (d.inFlight == 0 && d.queued == 0) {
		return // stopped already, or drained in the meantime
	}
	d.result = &ShutdownError{Cancelled: d.inFlight, Discarded: d.queued, Err: ctx.Err()}
	for _, l := range d.ready {
		delete(d.lanes, l.key) // not running: nobody else will
	}
	for _, l := range d.lanes {
		l.jobs = nil // running: its worker deletes it when the turn returns
	}
	d.ready = nil
	d.queued = 0
	d.refusals = nil
	d.log.Warn("shutdown deadline reached, dropping turns",
		"cancelled", d.result.Cancelled, "discarded", d.result.Discarded)
	d.hardStop(ErrStopped)
}

// signalDoneLocked closes done once shutdown has begun and no worker is left.
func (d *Dispatcher) signalDoneLocked() {
	if d.stopping && d.workers == 0 && !d.refusing && !d.doneSent {
		d.doneSent = true
		close(d.done)
	}
}

// work runs ready lanes, one turn at a time, until none is ready.
func (d *Dispatcher) work() {
	d.mu.Lock()
	for len(d.ready) > 0 {
		l := d.ready[0]
		d.ready[0] = nil
		d.ready = d.ready[1:]
		j := l.jobs[0]
		l.jobs[0] = job{}
		l.jobs = l.jobs[1:]
		d.queued--
		d.inFlight++
		d.mu.Unlock()

		d.run(j)

		d.mu.Lock()
		d.inFlight--
		if len(l.jobs) > 0 {
			d.ready = append(d.ready, l) // to the back: others get their turn first
		} else {
			delete(d.lanes, l.key)
		}
	}
	d.workers--
	d.signalDoneLocked()
	d.mu.Unlock()
}

// refuseLocked hands a turn l has no room for to the Refuser, starting the
// refusal goroutine when it is not running.
func (d *Dispatcher) refuseLocked(l *lane, j job) {
	if d.refuse == nil {
		return
	}
	first := !l.refused
	l.refused = true
	if len(d.refusals) >= maxRefusals {
		d.log.Warn("too many refused turns waiting to be told; refusing silently", "key", l.key, "msg_id", j.in.MessageID)
		return
	}
	d.refusals = append(d.refusals, refusal{j: j, first: first})
	if !d.refusing {
		d.refusing = true
		d.wg.Go(d.refuseWork)
	}
}

// refuseWork runs the Refuser for the refused turns until none is left.
func (d *Dispatcher) refuseWork() {
	d.mu.Lock()
	for len(d.refusals) > 0 {
		r := d.refusals[0]
		d.refusals[0] = refusal{}
		d.refusals = d.refusals[1:]
		d.mu.Unlock()

		ctx, cancel := context.WithTimeout(d.base, refuseTimeout)
		log := d.log.With("key", r.j.in.Key)
		err := safeHandle(ctx, HandlerFunc(func(ctx context.Context, t *Turn) error { return d.refuse(ctx, t, r.first) }),
			&Turn{In: r.j.in, Out: r.j.out, Log: log})
		cancel()
		if err != nil {
			log.Warn("refusing a turn past the conversation's queue", "msg_id", r.j.in.MessageID, "err", err)
		}

		d.mu.Lock()
	}
	d.refusing = false
	d.signalDoneLocked()
	d.mu.Unlock()
}

// run processes one turn with its own context, logging errors and panics.
func (d *Dispatcher) run(j job) {
	ctx, cancel := context.WithCancel(d.base)
	defer cancel()
	log := d.log.With("key", j.in.Key)
	err := safeHandle(ctx, d.h, &Turn{In: j.in, Out: j.out, Log: log})
	if err == nil {
		return
	}
	var pe *PanicError
	switch {
	case errors.As(err, &pe):
		log.Error("turn panicked", "msg_id", j.in.MessageID, "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	case ctx.Err() != nil:
		log.Warn("turn cancelled", "msg_id", j.in.MessageID, "err", err, "cause", context.Cause(ctx))
	default:
		log.Error("turn failed", "msg_id", j.in.MessageID, "err", err)
	}
}
