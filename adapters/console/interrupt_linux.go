package console

import "golang.org/x/sys/unix"

// keepInterruptKey makes Ctrl-C raise SIGINT again on the terminal fd that
// term.MakeRaw put in raw mode (which turns signals off). Ctrl-\ and Ctrl-Z
// stay plain keys: a stopped process would leave the shell's terminal raw.
func keepInterruptKey(fd int) error {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return err
	}
	t.Lflag |= unix.ISIG
	t.Cc[unix.VQUIT] = 0 // _POSIX_VDISABLE
	t.Cc[unix.VSUSP] = 0
	return unix.IoctlSetTermios(fd, unix.TCSETS, t)
}
