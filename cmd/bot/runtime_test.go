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
