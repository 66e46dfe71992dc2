package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/recallbot/recall/lease"
	"github.com/recallbot/recall/ops"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/turnqueue"
)

// Replicas: with database.url set, any number of processes with the same
// configuration share the PostgreSQL database. Turns go through the shared
// queue (turnqueue) instead of this process's dispatcher, so any replica
// runs any update, in order per conversation, once; a channel that only one
// process may run at a time (Channel.Leader: Telegram's long polling) runs
// on the replica holding its lease (package lease), the others stand by.
// On SQLite nothing of this runs: one process, the dispatcher.

// replicaName is this process's default name among the replicas.
func replicaName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "recall"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// newQueue returns the shared queue running the chain when the store is on
// PostgreSQL, nil otherwise.
func (a *App) newQueue() *turnqueue.Queue {
	pg := a.Store.Postgres()
	if pg == nil {
		return nil
	}
	opts := turnqueue.Options{Workers: a.Config.Pipeline.MaxConcurrent, Lease: a.Config.Database.TurnLease, Grace: a.Config.Shutdown.Timeout, Log: a.Log}
	if a.Shared != nil {
		opts.Resume = func(ctx context.Context, t *pipeline.Turn) (bool, error) { return a.Shared.Resume(ctx, a.Store, t) }
	}
	// A question (/summary, /purge) lives in the memory of the replica
	// that asked it: the conversation's next turns go to that replica.
	opts.Sticky = a.Commands.Asking
	if a.parts.Queue != nil {
		a.parts.Queue(&opts)
	}
	q := turnqueue.New(pg.Pool(), a.Handler, a.Replica, opts)
	// The intake does not store an answer to a question, asked here or
	// on another replica.
	asking := a.Commands.Asking
	a.Intake.Asking = func(key pipeline.Key) bool {
		if asking(key) {
			return true
		}
		ctx, cancel := context.WithTimeout(context.Background(), pinnedTimeout)
		defer cancel()
		return q.Pinned(ctx, key)
	}
	return q
}

// pinnedTimeout bounds the intake's look at whether a question waits on
// another replica.
const pinnedTimeout = 2 * time.Second

// asLeader makes ch run only on the replica that holds the lease
// "channel:<name>" (taken over within a lease TTL when that replica dies);
// on the others the channel stands by, healthy. With LeaderTurns the
// holder alone takes the channel's turns from queue, while it holds the
// lease. ch is unchanged when the store is not on PostgreSQL or ch needs
// no leader.
func (a *App) asLeader(ch Channel, queue *turnqueue.Queue) Channel {
	pg := a.Store.Postgres()
	if pg == nil || !ch.Leader {
		return ch
	}
	opts := lease.Options{TTL: a.Config.Database.LeaderLease, Log: a.Log}
	if a.parts.Lease != nil {
		a.parts.Lease(&opts)
	}
	l := lease.New(pg.Pool(), "channel:"+ch.Name, a.Replica, opts)
	a.Health.AddNote(ops.Note{Name: "lease channel:" + ch.Name, Run: func(ctx context.Context) string { return leaseNote(ctx, l, a.Replica) }})
	run := ch.Run
	h := &standby{inner: ch.Health}
	ch.Run = func(ctx context.Context) error {
		return l.Run(ctx, func(held context.Context) error {
			h.leading.Store(true)
			defer h.leading.Store(false)
			if ch.LeaderTurns && queue != nil {
				queue.Register(ch.Name, turnqueue.Channel{Out: ch.Sender, Restore: ch.Restore})
				defer queue.Unregister(ch.Name)
			}
			err := run(held)
			if ctx.Err() == nil && ch.Yield != nil {
				ch.Yield() // the lease was lost (or the channel failed): let the next holder have it
			}
			return err
		})
	}
	if ch.Health != nil {
		ch.Health = h
	}
	return ch
}

// leaseNote says who holds l, for /healthz.
func leaseNote(ctx context.Context, l *lease.Lease, me string) string {
	ctx, cancel := context.WithTimeout(ctx, ops.DatabaseTimeout)
	defer cancel()
	holder, until, err := l.State(ctx)
	switch {
	case err != nil:
		return "unknown: " + err.Error()
	case holder == "" || !until.After(time.Now()):
		return "free"
	case holder == me:
		return "held by this replica until " + until.UTC().Format(time.RFC3339)
	}
	return "held by " + holder + " until " + until.UTC().Format(time.RFC3339)
}

// standby is the health of a channel that runs on the lease holder only:
// healthy while another replica holds it.
type standby struct {
	inner   ops.HealthReporter
	leading atomic.Bool
}

func (s *standby) Health() error {
	if !s.leading.Load() {
		return nil
	}
	return s.inner.Health()
}
