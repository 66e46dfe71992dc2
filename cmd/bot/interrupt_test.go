//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/memory"
)

// openPTY opens a pseudo-terminal: the test types into master, the bot
// reads slave as its terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("naming the pty: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// screen is what the bot wrote to its terminal.
type screen struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

// waitFor waits until the screen shows want after offset from, and
// returns the offset after it.
func (s *screen) waitFor(t *testing.T, want string, from int) int {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		text := s.b.String()
		ch := s.changed
		s.mu.Unlock()
		if i := strings.Index(text[min(from, len(text)):], want); i >= 0 {
			return from + i + len(want)
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("the terminal does not show %q:\n%q", want, text)
		}
	}
}

// Ctrl-C in the terminal chat while the model answers stops the answer
// (the user reads that it was cancelled, the chat goes on, the message is
// kept and no reply is stored); Ctrl-C with no answer running ends the
// chat. The bot runs on a real pseudo-terminal in raw mode, where Ctrl-C
// is a key press, not a kill(2).
func TestCtrlCStopsTheAnswerThenExits(t *testing.T) {
	model := newBlockingLLM(t, true) // never answers: only a cancel ends the request
	env := newEnv(t, model.URL)
	master, slave := openPTY(t)
	prog, args := env.argv(nil)
	c := exec.Command(prog, args...)
	c.Env, c.Dir = env.environ(), env.Dir
	c.Stdin, c.Stdout = slave, slave
	var stderr bytes.Buffer
	c.Stderr = &stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed once waited for, with waitErr
	var waitErr error
	go func() { waitErr = c.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = c.Process.Kill()
			<-exited
		}
	})
	scr := &screen{changed: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			scr.mu.Lock()
			scr.b.Write(buf[:n])
			close(scr.changed)
			scr.changed = make(chan struct{})
			scr.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	type_ := func(s string) {
		t.Helper()
		if _, err := master.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}

	at := scr.waitFor(t, "> ", 0) // the line editor's prompt
	type_("what is the meaning of life\r")
	model.waitRequest(t, "what is the meaning of life")
	type_("\x03") // Ctrl-C: the answer stops
	at = scr.waitFor(t, "Cancelled", at)
	scr.waitFor(t, "> ", at) // the chat goes on
	select {
	case <-exited:
		t.Fatalf("the bot exited at the first Ctrl-C (%v):\n%s", waitErr, stderr.String())
	default:
	}
	type_("\x03") // Ctrl-C with no answer running: the chat ends
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("exit after Ctrl-C at the prompt: %v, want 0\n%s", waitErr, stderr.String())
		}
	case <-time.After(30 * time.Second):
		scr.mu.Lock()
		defer scr.mu.Unlock()
		t.Fatalf("the bot did not exit at the second Ctrl-C:\n%q", scr.b.String())
	}

	user := 0
	for _, m := range messagesOf(env.export(t), consoleKey) {
		switch {
		case m.Role == memory.RoleUser && m.Text == "what is the meaning of life":
			user++
		case m.Role == memory.RoleAssistant:
			t.Errorf("a reply was stored for a cancelled answer: %q", m.Text)
		}
	}
	if user != 1 {
		t.Errorf("the user's message is stored %d times, want 1 (kept)", user)
	}
	if !strings.Contains(chat.Interrupted, "Cancelled") {
		t.Fatalf("the test waits for %q, which the bot no longer says", "Cancelled")
	}
}
