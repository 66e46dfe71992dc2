//go:build unix

package main

import "syscall"

// restrictUmask makes every file and directory the process creates private
// to its user, whoever creates it: our own code opens files 0600 and
// directories 0700, but libraries do not (the SQLite VFS creates the WAL
// and shared-memory files, and journals, with 0666 minus the umask; they
// are chmod-ed only after opening, and an fd opened in between keeps
// reading). It returns the umask the process was started with.
func restrictUmask() int { return syscall.Umask(0o077) }
