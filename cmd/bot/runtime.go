package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// defaultMemoryLimit is the Go runtime's soft memory limit (heap, stacks and
// the runtime's own structures; not SQLite's memories nor the executable's
// pages) unless GOMEMLIMIT sets another. Below it the collector runs as
// GOGC says (a heap up to twice what is live); near it, it collects sooner,
// so a burst of turns does not leave a heap twice the live size behind. It
// is soft: with more live data the heap grows past it (the collector then
// takes at most about half the CPU), nothing fails; and followLiveHeap
// raises it when more is live, so that never lasts. Measured with the
// bench's 1,000-user load (issue #21): the live heap stays at 9–12 MiB.
const defaultMemoryLimit = 24 << 20

// tuneRuntime sets the runtime's memory knobs first thing in main: the soft
// memory limit (unless the GOMEMLIMIT variable, read by getenv, sets one),
// and the heap profiler's sampling rate (off in a release build: nothing
// reads the profile, and its records grew to ~1.7 MiB under load).
func tuneRuntime(getenv func(string) string) {
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	runtime.MemProfileRate = memProfileRate
}

// limitFollowEvery is how often followLiveHeap looks at the live heap.
const limitFollowEvery = 5 * time.Second

// followLiveHeap keeps the soft memory limit the bot set (not one set by
// GOMEMLIMIT) at least twice the live heap, until ctx ends: a bot that
// holds more than the bench's load (a large vector index, many JSON
// owners) gets GOGC's usual headroom instead of a collector running
// continuously against a limit below what it must keep.
func followLiveHeap(ctx context.Context, getenv func(string) string) {
	if getenv("GOMEMLIMIT") != "" {
		return
	}
	t := time.NewTicker(limitFollowEvery)
	defer t.Stop()
	for {
		adjustMemoryLimit()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// adjustMemoryLimit sets the soft memory limit for the heap live now.
func adjustMemoryLimit() {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		debug.SetMemoryLimit(limitFor(s[0].Value.Uint64()))
	}
}

// limitFor is the soft memory limit for a live heap of live bytes: the
// default, or twice the live heap when that is more.
func limitFor(live uint64) int64 {
	return max(defaultMemoryLimit, 2*int64(min(live, 1<<61)))
}
