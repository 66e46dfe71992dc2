package datadir

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// holderEnv makes the test binary a process that holds a lock (see
// TestMain) until its stdin closes or it is killed.
const holderEnv = "DATADIR_TEST_HOLD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holderEnv); dir != "" {
		l, err := Acquire(dir)
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("locked\n")
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = l.Release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startHolder starts another process that takes the lock on dir, and waits
// until it holds it.
func startHolder(t *testing.T, dir string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), holderEnv+"="+dir)
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("the other process did not take the lock: %q", line)
	}
	return c, stdin
}

// A second writer on a data directory fails at once, naming the PID of the
// process that holds it; once that process exits — cleanly or killed — the
// directory is free again.
func TestSecondProcessIsRefusedWithTheHoldersPID(t *testing.T) {
	for _, exit := range []string{"clean", "kill -9"} {
		t.Run(exit, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			holder, stdin := startHolder(t, dir)

			l, err := Acquire(dir)
			var le *LockedError
			if !errors.As(err, &le) {
				l.Release()
				t.Fatalf("a second writer got %v, want a LockedError", err)
			}
			if le.PID != holder.Process.Pid {
				t.Errorf("the error names PID %d, the holder is %d", le.PID, holder.Process.Pid)
			}
			for _, want := range []string{dir, "PID " + strconv.Itoa(holder.Process.Pid), "stop it first"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the message %q lacks %q", err, want)
				}
			}

			if exit == "clean" {
				stdin.Close()
			} else {
				_ = holder.Process.Kill()
			}
			_ = holder.Wait()
			l, err = Acquire(dir)
			if err != nil {
				t.Fatalf("after the holder exited (%s): %v", exit, err)
			}
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// flock belongs to an open file description: a second Acquire in the same
// process conflicts too, and Release frees the directory.
func TestSameProcessConflictsUntilRelease(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	l1, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	var le *LockedError
	if _, err := Acquire(dir); !errors.As(err, &le) || le.PID != os.Getpid() {
		t.Fatalf("second Acquire: %v, want a LockedError naming PID %d", err, os.Getpid())
	}
	if err := l1.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l1.Release(); err != nil {
		t.Fatalf("a second Release: %v", err)
	}
	l2, err := Acquire(dir)
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	defer l2.Release()
	for _, p := range []string{filepath.Join(dir, ".."), dir} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, want a 0700 directory", p, fi.Mode())
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, LockFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the lock file: %v %v, want 0600", fi, err)
	}
}
