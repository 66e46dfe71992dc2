package main

import (
	"runtime"
	"runtime/debug"
)

// defaultMemoryLimit is the Go runtime's soft memory limit (heap, stacks and
// the runtime's own structures; not SQLite's memories nor the executable's
// pages) unless GOMEMLIMIT sets another. Below it the collector runs as
// GOGC says (a heap up to twice what is live); near it, it collects sooner,
// so a burst of turns does not leave a heap twice the live size behind. It
// is soft: with more live data the heap grows past it (the collector then
// takes at most about half the CPU), nothing fails. Measured with the
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
