package main

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/recallbot/recall/ops"
)

// When the bot gives its free heap back: once start-up is over and no turn
// ran for quietAtStart (a user writing at once gets a bot that is not
// collecting its start-up garbage; and the search index's first merge, a
// second after the last write, is over), then after each busy spell once
// quiet for quietAfterBusy (a conversation's next message usually comes
// sooner and finds the heap the last turn grew).
const (
	quietAtStart   = 1250 * time.Millisecond
	quietAfterBusy = 30 * time.Second
	quietPoll      = 250 * time.Millisecond
)

// trimWhenQuiet owns giving anonymous memory back to the kernel while the
// bot is quiet: it collects the garbage and returns the free heap
// (debug.FreeOSMemory) at once, where the runtime's scavenger would return
// it over minutes. It starts once start-up is over — after <-started, the
// health report says every one of channels is ok — and runs until ctx ends;
// activity is a count that moves with every turn (the store's written
// messages). It gives up after a minute without the channels healthy.
func trimWhenQuiet(ctx context.Context, started <-chan struct{}, health *ops.Health, channels []string, activity func() int64, log *slog.Logger) {
	select {
	case <-started:
	case <-ctx.Done():
		return
	}
	tick := time.NewTicker(quietPoll)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for !ready(ctx, health, channels) {
		select {
		case <-tick.C:
		case <-deadline:
			return
		case <-ctx.Done():
			return
		}
	}
	q := newQuiet(time.Now(), activity())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if q.due(now, activity()) {
				trim(log)
			}
		}
	}
}

// trim collects the garbage and returns the free heap to the kernel.
func trim(log *slog.Logger) {
	debug.FreeOSMemory()
	log.Debug("gave back the free heap")
}

// quiet decides when the free heap is given back: after start-up once nothing
// happened for quietAtStart, then once after every busy spell, when
// nothing happened for quietAfterBusy.
type quiet struct {
	last    int64     // the activity count seen last
	changed time.Time // when it last moved (or start-up ended)
	wait    time.Duration
	pending bool // something happened since the last trim
}

func newQuiet(now time.Time, activity int64) *quiet {
	return &quiet{last: activity, changed: now, wait: quietAtStart, pending: true}
}

// due reports, given the activity count at now, whether to give memory
// back now.
func (q *quiet) due(now time.Time, activity int64) bool {
	if activity != q.last {
		q.last, q.changed, q.pending = activity, now, true
		return false
	}
	if !q.pending || now.Sub(q.changed) < q.wait {
		return false
	}
	q.pending, q.wait = false, quietAfterBusy
	return true
}

// ready reports whether the health report says every one of channels is
// ok (the terminal chat has none: ready at once). Other parts (the LLM) may
// fail for long: start-up is over all the same.
func ready(ctx context.Context, health *ops.Health, channels []string) bool {
	if len(channels) == 0 {
		return true
	}
	rep := health.Report(ctx)
	for _, c := range channels {
		if rep.Parts[c] != ops.StatusOK {
			return false
		}
	}
	return true
}
