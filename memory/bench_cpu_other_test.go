//go:build !unix

package memory_test

import "time"

// processCPU is not measured on this platform: search_cpu_ms reads 0.
func processCPU() time.Duration { return 0 }
