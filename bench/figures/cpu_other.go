//go:build !unix

package figures

import "time"

// ProcessCPU is not measured on this platform: the cpu_ms metrics read 0.
func ProcessCPU() time.Duration { return 0 }
