//go:build !linux

package procmem

// ReleaseExecutable does nothing outside Linux.
func ReleaseExecutable() (int64, error) { return 0, ErrUnsupported }
