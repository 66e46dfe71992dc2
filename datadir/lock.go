package datadir

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockFile is the lock's file name in the data directory.
const LockFile = "recall.lock"

// Lock is a data directory held by this process, until Release.
type Lock struct {
	f *os.File
}

// LockedError is what Acquire returns when another process holds the
// directory.
type LockedError struct {
	Dir string
	PID int // the holder, 0 when unknown (it has not written it yet)
}

func (e *LockedError) Error() string {
	who := "another Recall process"
	if e.PID > 0 {
		who += fmt.Sprintf(" (PID %d)", e.PID)
	}
	return fmt.Sprintf("the data directory %s is in use by %s: stop it first, or point data.dir (RECALL_DATA_DIR) elsewhere. "+
		"export, search, context and backup work while it runs", e.Dir, who)
}

// Acquire takes the exclusive lock on dir, creating dir (0700) and its lock
// file (0600) when missing. It never waits: when another process holds the
// lock it returns a *LockedError naming that process's PID. Two Acquires in
// one process conflict too (each opens the file anew).
func Acquire(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the lock file %s: %w", path, err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking the data directory %s: %w", dir, err)
	}
	if held {
		pid := readPID(f)
		f.Close()
		return nil, &LockedError{Dir: dir, PID: pid}
	}
	// The holder's PID, for the message another process gets.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release lets another process take the directory. It is safe to call more
// than once.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0) // no PID of a process that no longer holds it
	err := l.f.Close()  // closing the last descriptor releases the flock
	l.f = nil
	return err
}

// readPID reads the PID the holder wrote (0 when there is none yet).
func readPID(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
