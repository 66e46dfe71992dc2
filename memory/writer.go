package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// ErrQueueFull is returned by Enqueue when the write-behind queue holds its
// maximum number of messages (storage has been failing for a while).
var ErrQueueFull = errors.New("write queue full")

// writer is the write-behind queue: the only goroutine that writes to the
// backends. Appends are batched into one transaction per backend; other
// writes (archive, settings, purge, moves) run one at a time in queue order,
// so every write to an owner happens in the order it was asked for.
//
// A failing append batch stays at the head of the queue and is retried with
// backoff; later writes wait behind it. Reads see queued messages through
// pending (read-your-writes).
type writer struct {
	route   func(owner string) Backend
	log     *slog.Logger
	maxMsgs int
	base    time.Duration // first retry delay
	maxWait time.Duration // longest retry delay

	mu       sync.Mutex
	queue    []*writeItem
	queued   int // messages in queue
	pending  map[pipeline.Key][]Message
	failing  error // last error, nil when the last attempt succeeded
	since    time.Time
	failures int64 // failed attempts, ever
	written  int64 // messages committed, ever
	closed   bool
	wake     chan struct{}
	idle     *sync.Cond // signalled when the queue shrinks
	stop     chan struct{}
	finished chan struct{}
}

type writeItem struct {
	owner string
	msgs  []Message                                  // an append, or
	op    func(ctx context.Context, b Backend) error // another write
	done  chan error                                 // nil for fire-and-forget appends
	// An op's caller that stops waiting (its ctx ends) abandons it when it
	// has not started — it never runs — or else cancels it through stop
	// and waits for it to return: the op writes the caller's variables.
	// Both under the writer's mu.
	abandoned bool
	stop      context.CancelFunc
}

type writerOptions struct {
	maxMsgs  int
	base     time.Duration
	maxWait  time.Duration
	log      *slog.Logger
	routeFor func(owner string) Backend
}

func newWriter(o writerOptions) *writer {
	if o.maxMsgs <= 0 {
		o.maxMsgs = 10000
	}
	if o.base <= 0 {
		o.base = 100 * time.Millisecond
	}
	if o.maxWait <= 0 {
		o.maxWait = 5 * time.Second
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	w := &writer{
		route: o.routeFor, log: o.log, maxMsgs: o.maxMsgs, base: o.base, maxWait: o.maxWait,
		pending: map[pipeline.Key][]Message{}, wake: make(chan struct{}, 1),
		stop: make(chan struct{}), finished: make(chan struct{}),
	}
	w.idle = sync.NewCond(&w.mu)
	go w.run()
	return w
}

// enqueue adds messages of one owner; done (may be nil) receives the result
// once they are committed.
func (w *writer) enqueue(msgs []Message, done chan error) error {
	if len(msgs) == 0 {
		if done != nil {
			done <- nil
		}
		return nil
	}
	owner := msgs[0].Key.Owner()
	if n := cutMessages(msgs); n > 0 {
		w.log.Warn("messages over the size bound were cut", "messages", n, "bound_bytes", MaxMessageBytes)
	}
	for i := range msgs {
		if err := msgs[i].Key.Validate(); err != nil {
			return err
		}
		if msgs[i].Key.Owner() != owner {
			return fmt.Errorf("one append must hold one owner's messages (%s, %s)", owner, msgs[i].Key.Owner())
		}
		if !msgs[i].Role.Valid() {
			return fmt.Errorf("invalid role %q", msgs[i].Role)
		}
		if msgs[i].Time.IsZero() {
			msgs[i].Time = time.Now()
		}
		msgs[i].Time = ms(msgs[i].Time)
		if msgs[i].Tokens <= 0 {
			msgs[i].Tokens = estimateTokens(msgs[i].Text)
		}
		msgs[i].Active = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.queued+len(msgs) > w.maxMsgs {
		return fmt.Errorf("%w (%d messages waiting): %v", ErrQueueFull, w.queued, w.failing)
	}
	w.queue = append(w.queue, &writeItem{owner: owner, msgs: msgs, done: done})
	w.queued += len(msgs)
	for _, m := range msgs {
		w.pending[m.Key] = append(w.pending[m.Key], m)
	}
	w.signal()
	return nil
}

// do queues a write and waits for its result, or for ctx. When ctx ends
// first the write still happens later, in order.
func (w *writer) do(ctx context.Context, owner string, op func(context.Context, Backend) error) error {
	done := make(chan error, 1)
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	it := &writeItem{owner: owner, op: op, done: done}
	w.queue = append(w.queue, it)
	w.signal()
	w.mu.Unlock()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	w.mu.Lock()
	stop := it.stop
	if stop == nil { // not started: it never will
		it.abandoned = true
	}
	w.mu.Unlock()
	if stop != nil {
		stop()
		if err := <-done; err == nil { // it finished before it saw the cancel
			return nil
		}
	}
	return fmt.Errorf("waiting for the write queue: %w", ctx.Err())
}

func (w *writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// pendingFor returns queued, not yet committed messages of a conversation.
func (w *writer) pendingFor(key pipeline.Key) []Message {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Message(nil), w.pending[key]...)
}

// WriteStats describes the queue, for metrics and health.
type WriteStats struct {
	Queued   int       // messages waiting
	Written  int64     // messages committed since start
	Failures int64     // failed write attempts since start
	Failing  error     // the current problem; nil when writes succeed
	Since    time.Time // when the current problem started
}

func (w *writer) stats() WriteStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return WriteStats{Queued: w.queued, Written: w.written, Failures: w.failures, Failing: w.failing, Since: w.since}
}

// flush waits until everything queued before the call is written.
func (w *writer) flush(ctx context.Context) error {
	return w.do(ctx, "", func(context.Context, Backend) error { return nil })
}

// close stops accepting writes, tries to write what is queued until ctx ends,
// and reports what could not be written.
func (w *writer) close(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.signal()
	w.mu.Unlock()
	flushed := make(chan struct{})
	go func() {
		w.mu.Lock()
		for len(w.queue) > 0 && !w.stopping() {
			w.idle.Wait()
		}
		w.mu.Unlock()
		close(flushed)
	}()
	select {
	case <-flushed:
	case <-ctx.Done():
	}
	close(w.stop)
	w.signal()
	<-w.finished
	w.mu.Lock()
	w.idle.Broadcast()
	w.mu.Unlock()
	<-flushed
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.queued > 0 || len(w.queue) > 0 {
		return fmt.Errorf("%d messages and %d writes could not be stored: %v", w.queued, len(w.queue), w.failing)
	}
	return nil
}

func (w *writer) stopping() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

func (w *writer) run() {
	defer close(w.finished)
	delay := time.Duration(0)
	for {
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-w.stop:
				t.Stop()
			}
		}
		if w.stopping() {
			w.abandon()
			return
		}
		w.mu.Lock()
		batch := w.takeBatch()
		w.mu.Unlock()
		if len(batch) == 0 {
			select {
			case <-w.wake:
			case <-w.stop:
			}
			continue
		}
		if err := w.apply(batch); err != nil {
			if delay == 0 {
				delay = w.base
			} else {
				delay = min(delay*2, w.maxWait)
			}
			continue
		}
		delay = 0
	}
}

// takeBatch returns the head of the queue: a run of appends (up to 1000
// messages), or a single other write.
func (w *writer) takeBatch() []*writeItem {
	if len(w.queue) == 0 {
		return nil
	}
	if w.queue[0].op != nil {
		return w.queue[:1]
	}
	n, msgs := 0, 0
	for n < len(w.queue) && w.queue[n].op == nil && msgs < 1000 {
		msgs += len(w.queue[n].msgs)
		n++
	}
	return w.queue[:n]
}

// abandon fails what is still queued at stop time.
func (w *writer) abandon() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, it := range w.queue {
		if it.done != nil && it.op != nil {
			it.done <- ErrClosed
			it.done = nil
		}
	}
}

// apply writes a batch taken from the head of the queue. Items that were
// written leave the queue; on error the rest stay at the head.
func (w *writer) apply(batch []*writeItem) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if op := batch[0]; op.op != nil {
		w.mu.Lock()
		if op.abandoned {
			w.mu.Unlock()
			w.finish([]*writeItem{op}, nil)
			return nil
		}
		ctx, stop := context.WithCancel(ctx)
		defer stop()
		op.stop = stop
		w.mu.Unlock()
		var err error
		if op.owner == "" {
			err = op.op(ctx, nil)
		} else {
			err = op.op(ctx, w.route(op.owner))
		}
		// Other writes report their error to the caller and leave the queue:
		// the caller decides (a failed summary is retried at the next trigger).
		w.finish([]*writeItem{op}, nil)
		op.done <- err
		return nil
	}
	// Group appends by backend: one transaction for all SQLite owners, one
	// file write per JSON owner.
	groups := map[Backend][]*writeItem{}
	var order []Backend
	for _, it := range batch {
		b := w.route(it.owner)
		if _, ok := groups[b]; !ok {
			order = append(order, b)
		}
		groups[b] = append(groups[b], it)
	}
	var failed error
	for _, b := range order {
		items := groups[b]
		if j, ok := b.(*JSON); ok {
			// Each JSON owner is its own file: write them separately so one
			// failing file does not hold the others back.
			byOwner := map[string][]*writeItem{}
			var owners []string
			for _, it := range items {
				if _, ok := byOwner[it.owner]; !ok {
					owners = append(owners, it.owner)
				}
				byOwner[it.owner] = append(byOwner[it.owner], it)
			}
			for _, o := range owners {
				if err := w.appendItems(ctx, j, byOwner[o]); err != nil {
					failed = err
				}
			}
			continue
		}
		if err := w.appendItems(ctx, b, items); err != nil {
			failed = err
		}
	}
	return failed
}

func (w *writer) appendItems(ctx context.Context, b Backend, items []*writeItem) error {
	var msgs []Message
	for _, it := range items {
		msgs = append(msgs, it.msgs...)
	}
	_, err := b.Append(ctx, msgs)
	if err != nil {
		w.mu.Lock()
		w.failures++
		if w.failing == nil {
			w.since = time.Now()
			w.log.Error("storing messages failed; they stay queued and are retried", "err", err, "queued", w.queued)
		}
		w.failing = err
		w.mu.Unlock()
		return err
	}
	w.finish(items, nil)
	for _, it := range items {
		if it.done != nil {
			it.done <- nil
		}
	}
	return nil
}

// dropPending removes written messages from the overlay. Items leave the
// queue head in order and a conversation's messages all go to one backend,
// so what was written is the front of each conversation's pending list:
// trimming the front keeps a backlog of thousands linear, not quadratic.
func (w *writer) dropPending(written []Message) {
	for len(written) > 0 {
		key := written[0].Key
		n := 1
		for n < len(written) && written[n].Key == key {
			n++
		}
		p := w.pending[key]
		if n <= len(p) && samePending(p[0], written[0]) && samePending(p[n-1], written[n-1]) {
			p = p[n:]
		} else {
			// Not the front (cannot happen; stay correct anyway).
			for _, m := range written[:n] {
				for i := range p {
					if samePending(p[i], m) {
						p = append(p[:i:i], p[i+1:]...)
						break
					}
				}
			}
		}
		if len(p) == 0 {
			delete(w.pending, key)
		} else {
			w.pending[key] = p
		}
		written = written[n:]
	}
}

func samePending(a, b Message) bool {
	return a.PlatformID == b.PlatformID && a.Role == b.Role && a.Time.Equal(b.Time) && a.Text == b.Text
}

// finish removes written items from the queue and the pending overlay.
func (w *writer) finish(items []*writeItem, _ error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	gone := make(map[*writeItem]bool, len(items))
	for _, it := range items {
		gone[it] = true
		if it.msgs == nil {
			continue
		}
		w.queued -= len(it.msgs)
		w.written += int64(len(it.msgs))
		w.dropPending(it.msgs)
		if w.failing != nil {
			w.log.Info("storage recovered; queued messages written", "after", time.Since(w.since).Round(time.Millisecond))
			w.failing = nil
		}
	}
	kept := w.queue[:0]
	for _, it := range w.queue {
		if !gone[it] {
			kept = append(kept, it)
		}
	}
	for i := len(kept); i < len(w.queue); i++ {
		w.queue[i] = nil
	}
	w.queue = kept
	w.idle.Broadcast()
}
