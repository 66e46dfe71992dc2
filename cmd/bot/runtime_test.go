package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestTuneRuntimeSetsASoftMemoryLimitUnlessGOMEMLIMITDoes(t *testing.T) {
	was, rate := debug.SetMemoryLimit(-1), runtime.MemProfileRate
	t.Cleanup(func() { debug.SetMemoryLimit(was); runtime.MemProfileRate = rate })

	debug.SetMemoryLimit(1 << 40)
	tuneRuntime(func(string) string { return "" })
	if got := debug.SetMemoryLimit(-1); got != defaultMemoryLimit {
		t.Errorf("memory limit %d without GOMEMLIMIT; want %d", got, defaultMemoryLimit)
	}
	if runtime.MemProfileRate != memProfileRate {
		t.Errorf("MemProfileRate %d; want %d", runtime.MemProfileRate, memProfileRate)
	}

	// The runtime read GOMEMLIMIT itself: the bot leaves its limit alone.
	debug.SetMemoryLimit(1 << 40)
	tuneRuntime(func(k string) string {
		if k == "GOMEMLIMIT" {
			return "1GiB"
		}
		return ""
	})
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("memory limit %d with GOMEMLIMIT set; want the runtime's own (%d)", got, int64(1<<40))
	}
}

// A bot that must keep more than the default limit live (a large vector
// index) gets a limit of twice its live heap, not a collector that runs
// continuously; a small one keeps the default.
func TestMemoryLimitFollowsTheLiveHeap(t *testing.T) {
	was := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(was) })
	if got := limitFor(10 << 20); got != defaultMemoryLimit {
		t.Errorf("limit for 10 MiB live = %d, want the default %d", got, defaultMemoryLimit)
	}
	if got := limitFor(100 << 20); got != 200<<20 {
		t.Errorf("limit for 100 MiB live = %d, want 200 MiB", got)
	}
	held := make([][]byte, 64)
	for i := range held {
		held[i] = make([]byte, 1<<20)
	}
	runtime.GC()
	adjustMemoryLimit()
	if got := debug.SetMemoryLimit(-1); got < 2*64<<20 {
		t.Errorf("with 64 MiB live the limit is %d MiB, want at least 128", got>>20)
	}
	runtime.KeepAlive(held)
}
