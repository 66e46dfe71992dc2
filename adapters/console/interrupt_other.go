//go:build !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package console

// keepInterruptKey does nothing here: Ctrl-C reaches the line editor as a
// key, which ends the chat when no turn runs.
func keepInterruptKey(int) error { return nil }
