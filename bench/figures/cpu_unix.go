//go:build unix

package figures

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time (user + system) this process has used, all
// goroutines included.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
