package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/semaphore"
)

// Job parses one input in a worker and returns what the caller gets back.
// It runs in a process of its own: it may loop forever or ask for too much
// memory, and is killed then.
type Job func(input []byte) ([]byte, error)

// Jobs are the jobs a worker knows, by name.
type Jobs map[string]Job

// ErrLimit means a worker went over a limit (time, CPU, memory, output) or
// died: the input is too complex or hostile. The error wrapping it says
// which limit.
var ErrLimit = errors.New("the worker was stopped")

// ErrTooBig means a job asked for more memory than all workers share
// (Limits.Memory): it was not run.
var ErrTooBig = errors.New("the job needs more memory than the workers have")

// ErrBusy means no worker (or not the memory a job asked for) came free
// within Limits.Wait: the job was not run. Try again later.
var ErrBusy = errors.New("every worker is busy")

// JobError is a job's own error, as its worker reported it.
type JobError struct {
	Job, Msg string
}

func (e *JobError) Error() string { return e.Job + ": " + e.Msg }

// Limits bound the workers.
type Limits struct {
	Workers   int           // jobs running at once (default 2)
	Memory    int64         // bytes of address space all workers running at once share (default 256 MiB)
	Wait      time.Duration // longest wait for a worker and memory before ErrBusy (default 10 s)
	Timeout   time.Duration // wall clock of one job, start-up included (default 15 s)
	CPU       time.Duration // CPU time of one job, rounded up to seconds (default 5 s)
	MaxOutput int64         // bytes a job may write back (default 16 MiB)
}

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	if l.Workers <= 0 {
		l.Workers = 2
	}
	if l.Memory <= 0 {
		l.Memory = 256 << 20
	}
	if l.Wait <= 0 {
		l.Wait = 10 * time.Second
	}
	if l.Timeout <= 0 {
		l.Timeout = 15 * time.Second
	}
	if l.CPU <= 0 {
		l.CPU = 5 * time.Second
	}
	if l.MaxOutput <= 0 {
		l.MaxOutput = 16 << 20
	}
	return l
}

// minMemory is the least address space a job gets above what its worker
// has at start (one 64 MiB heap arena of the Go runtime, and some).
const minMemory = 80 << 20

// Pool runs jobs in workers, at most Limits.Workers at once and within
// Limits.Memory together; a job waits for both. Safe for concurrent use.
type Pool struct {
	exec  *Exec
	lim   Limits
	slots *semaphore.Weighted
	mem   *semaphore.Weighted
}

// NewPool returns a pool running e's jobs within lim (zero fields: the
// defaults).
func NewPool(e *Exec, lim Limits) *Pool {
	lim = lim.withDefaults()
	return &Pool{exec: e, lim: lim, slots: semaphore.NewWeighted(int64(lim.Workers)), mem: semaphore.NewWeighted(lim.Memory)}
}

// Limits returns the pool's limits, defaults filled in.
func (p *Pool) Limits() Limits { return p.lim }

// Share is the memory a job gets when it asks for none: an equal share of
// Limits.Memory among Limits.Workers.
func (p *Pool) Share() int64 { return max(p.lim.Memory/int64(p.lim.Workers), minMemory) }

// Run runs job name on input in a worker that may use mem bytes of address
// space above its start (0: Share()), after waiting for a free worker and
// for that memory (at most Limits.Wait: a file answered late is no better
// than one refused). The error is ErrTooBig when mem is over
// Limits.Memory, ErrBusy when the wait was too long, wraps ErrLimit when
// the worker was stopped, is a *JobError when the job failed, or ctx's
// error.
func (p *Pool) Run(ctx context.Context, name string, input []byte, mem int64) ([]byte, error) {
	if mem <= 0 {
		mem = p.Share()
	}
	mem = max(mem, minMemory)
	if mem > p.lim.Memory {
		return nil, fmt.Errorf("%w (%d MiB asked, %d MiB shared)", ErrTooBig, mem>>20, p.lim.Memory>>20)
	}
	wctx, cancel := context.WithTimeout(ctx, p.lim.Wait)
	defer cancel()
	waited := func(what string, err error) error {
		if ctx.Err() == nil {
			return fmt.Errorf("%w: no %s for %s within %s", ErrBusy, what, name, p.lim.Wait)
		}
		return fmt.Errorf("waiting for %s to run %s: %w", what, name, err)
	}
	if err := p.mem.Acquire(wctx, mem); err != nil {
		return nil, waited("memory", err)
	}
	defer p.mem.Release(mem)
	if err := p.slots.Acquire(wctx, 1); err != nil {
		return nil, waited("worker", err)
	}
	defer p.slots.Release(1)
	return p.exec.run(ctx, name, input, mem, p.lim)
}

// capped is a buffer that refuses to grow past max bytes.
type capped struct {
	buf  []byte
	max  int64
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if int64(len(c.buf)+len(p)) > c.max {
		c.over = true
		return 0, errors.New("output over its limit")
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}
