//go:build !unix

package figures

import "time"

// processCPU is not measured on this platform: the cpu_ms metrics read 0.
func processCPU() time.Duration { return 0 }
