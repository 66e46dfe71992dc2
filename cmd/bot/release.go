package main

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/recallbot/recall/ops"
	"github.com/recallbot/recall/procmem"
)

// releaseWhenReady waits until start-up is over — after <-started, the
// health report says every one of channels is ok — then collects start-up's
// garbage, returns the free heap to the kernel and gives back the
// executable's pages that start-up alone used
// (procmem.ReleaseExecutable). It gives up when ctx ends or after a minute
// without the channels healthy (the pages then stay: nothing else changes).
func releaseWhenReady(ctx context.Context, started <-chan struct{}, health *ops.Health, channels []string, log *slog.Logger) {
	select {
	case <-started:
	case <-ctx.Done():
		return
	}
	tick := time.NewTicker(50 * time.Millisecond)
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
	// Start-up's garbage first, and the heap pages it leaves free back to
	// the kernel: the collection maps the type data and function tables it
	// reads now, not at the next cycle after the release.
	debug.FreeOSMemory()
	released, err := procmem.ReleaseExecutable()
	if err != nil {
		log.Debug("could not give back the executable's pages start-up used", "err", err)
		return
	}
	log.Debug("gave back the executable's pages start-up used", "bytes", released)
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
