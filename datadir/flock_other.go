//go:build !unix

package datadir

import "os"

// tryLock does not lock where flock(2) does not exist: the directory is
// not protected from a second writer there.
func tryLock(f *os.File) (held bool, err error) { return false, nil }
