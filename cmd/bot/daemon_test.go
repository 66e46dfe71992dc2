package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// daemon is a bot process running in the background (Telegram mode),
// logging JSON to stderr.
type daemon struct {
	t   *testing.T
	cmd *exec.Cmd

	mu      sync.Mutex
	logs    []map[string]any // stderr lines that are JSON log records
	stderr  strings.Builder  // all of stderr
	changed chan struct{}    // closed and replaced on every new line
	exited  chan struct{}    // closed once the process was waited for
	code    int              // exit code, once exited
}

// telegramEnv is an environment for the bot in Telegram mode against tg,
// answering user 42, with JSON logs.
func telegramEnv(t *testing.T, tg fakeTelegram, llmURL string, extra ...string) botEnv {
	env := newEnv(t, llmURL, append([]string{
		"RECALL_TELEGRAM_TOKEN=" + fakeTGToken,
		"RECALL_TELEGRAM_API_URL=" + tg.URL,
		"RECALL_ACCESS_ALLOWED_USERS=telegram:42",
		"RECALL_LOG_FORMAT=json",
	}, extra...)...)
	return env
}

// startDaemon starts the bot with args in e.
func (e botEnv) startDaemon(t *testing.T, args ...string) *daemon {
	t.Helper()
	c := exec.Command(botBin, args...)
	c.Env = e.environ()
	c.Dir = e.Dir
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("starting the bot: %v", err)
	}
	d := &daemon{t: t, cmd: c, changed: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			var rec map[string]any
			d.mu.Lock()
			if json.Unmarshal([]byte(line), &rec) == nil {
				d.logs = append(d.logs, rec)
			}
			d.stderr.WriteString(line + "\n")
			close(d.changed)
			d.changed = make(chan struct{})
			d.mu.Unlock()
		}
		err := c.Wait()
		d.mu.Lock()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			d.code = ee.ExitCode() // -1 when killed by a signal
		default:
			d.code = -1
		}
		d.mu.Unlock()
		close(d.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-d.exited:
		default:
			_ = c.Process.Kill()
			<-d.exited
		}
	})
	return d
}

// output is everything the bot wrote to stderr so far.
func (d *daemon) output() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stderr.String()
}

// waitLog waits for a log record whose msg starts with msg and returns it;
// the test fails after timeout or when the bot exits first.
func (d *daemon) waitLog(msg string, timeout time.Duration) map[string]any {
	d.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		d.mu.Lock()
		for _, rec := range d.logs {
			if m, _ := rec["msg"].(string); strings.HasPrefix(m, msg) {
				d.mu.Unlock()
				return rec
			}
		}
		ch := d.changed
		d.mu.Unlock()
		select {
		case <-ch:
		case <-d.exited:
			// Lines may still be buffered: the reader ends before exited.
			d.mu.Lock()
			for _, rec := range d.logs {
				if m, _ := rec["msg"].(string); strings.HasPrefix(m, msg) {
					d.mu.Unlock()
					return rec
				}
			}
			d.mu.Unlock()
			d.t.Fatalf("the bot exited before logging %q:\n%s", msg, d.output())
		case <-deadline.C:
			d.t.Fatalf("the bot did not log %q within %s:\n%s", msg, timeout, d.output())
		}
	}
}

// signal sends sig to the bot.
func (d *daemon) signal(sig syscall.Signal) {
	d.t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil {
		d.t.Fatalf("sending %v: %v", sig, err)
	}
}

// wait waits for the bot to exit and returns its exit code; the test fails
// after timeout.
func (d *daemon) wait(timeout time.Duration) int {
	d.t.Helper()
	select {
	case <-d.exited:
	case <-time.After(timeout):
		d.t.Fatalf("the bot did not exit within %s:\n%s", timeout, d.output())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.code
}

// httpAddr waits until the bot serves /healthz and /metrics and returns the
// address.
func (d *daemon) httpAddr() string {
	d.t.Helper()
	rec := d.waitLog("serving /healthz and /metrics", 30*time.Second)
	addr, _ := rec["addr"].(string)
	if addr == "" {
		d.t.Fatalf("no address in %v", rec)
	}
	return addr
}
