package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitOutput waits until the process wrote want to stderr; the test fails
// after timeout or when it exits first.
func (d *daemon) waitOutput(want string, timeout time.Duration) {
	d.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		d.mu.Lock()
		found, ch := strings.Contains(d.stderr.String(), want), d.changed
		d.mu.Unlock()
		if found {
			return
		}
		select {
		case <-ch:
		case <-d.exited:
			if strings.Contains(d.output(), want) {
				return
			}
			d.t.Fatalf("exited before writing %q:\n%s", want, d.output())
		case <-deadline.C:
			d.t.Fatalf("did not write %q within %s:\n%s", want, timeout, d.output())
		}
	}
}

// bot import shows its progress, stops cleanly on SIGTERM between batches
// (what was imported stays), and a second run imports the rest.
func TestImportChatStopsOnSIGTERMAndResumes(t *testing.T) {
	const n = 6000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "05/03/2024, %02d:%02d - Anna: message number %d about the flat\n", i/60%24, i%60, i)
	}
	path := filepath.Join(t.TempDir(), "WhatsApp Chat with Anna.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, "")
	args := []string{"import", "--whatsapp-export", path, "--key", "telegram:7"}
	d := env.startDaemon(t, args...)
	d.waitOutput("importing: 33% (2000 of 6000 messages)", time.Minute)
	d.signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 1 {
		t.Fatalf("exit code %d:\n%s", code, d.output())
	}
	out := d.output()
	if !strings.Contains(out, "WhatsApp Chat with Anna.txt: 100%") {
		t.Errorf("no progress of the reading:\n%s", out)
	}
	m := regexp.MustCompile(`interrupted: (\d+) of 6000 messages imported`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no clear word on the interruption:\n%s", out)
	}
	first, _ := strconv.Atoi(m[1])
	if first == 0 || first == n || first%importBatch != 0 {
		t.Fatalf("%d messages imported before the stop", first)
	}
	r := env.mustRun(t, "", args...)
	var o struct{ Imported int }
	if err := json.Unmarshal([]byte(r.Stdout), &o); err != nil {
		t.Fatal(err)
	}
	if first+o.Imported != n {
		t.Fatalf("imported %d, then %d: %d in all, not %d", first, o.Imported, first+o.Imported, n)
	}
	if got := len(messagesOf(env.export(t, "--key", "telegram:7:"), "telegram:7:")); got != n {
		t.Fatalf("%d messages stored", got)
	}
}
