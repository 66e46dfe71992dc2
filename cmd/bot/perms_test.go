package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// checkModes fails the test for every file under root that is not 0600 and
// every directory that is not 0700 (root included); it returns the paths
// it checked, relative to root.
func checkModes(t *testing.T, when, root string) []string {
	t.Helper()
	var seen []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors := os.IsNotExist(err); errors {
				return nil // a WAL or temp file removed while we walk
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil // gone since the listing
		}
		rel, _ := filepath.Rel(root, path)
		seen = append(seen, rel)
		want := fs.FileMode(0o600)
		if info.IsDir() {
			want = 0o700
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s: %s is %#o, want %#o", when, path, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: walking %s: %v", when, root, err)
	}
	return seen
}

// waitLine reads the bot's output until a line holds want.
func (b *liveBot) waitLine(want string) {
	b.t.Helper()
	for {
		l, ok := b.next(30 * time.Second)
		if !ok {
			b.t.Fatalf("the bot did not print %q; it printed:\n%s", want, strings.Join(b.seen, "\n"))
		}
		if strings.Contains(l, want) {
			return
		}
	}
}

// stop ends the terminal chat (end of input) and waits for it to exit.
func (b *liveBot) stop() {
	b.t.Helper()
	_ = b.stdin.Close()
	for range b.lines {
	}
	<-b.done
	if err := b.cmd.Wait(); err != nil {
		b.t.Fatalf("the bot failed: %v\n%s", err, b.cmd.Stderr)
	}
}

// TestFileModesUnderPermissiveUmask: under umask 000, every file the bot
// creates — the database and its WAL and shared-memory files, the JSON
// store and its temporary files, the log, backups, the WhatsApp session —
// is 0600 and every directory 0700, while it runs and after, on first start
// and on restart.
func TestFileModesUnderPermissiveUmask(t *testing.T) {
	srv := newFakeLLM(t)
	env := newEnv(t, srv.URL, "RECALL_MEMORY_KEEP_RECENT_TURNS=1")
	env.Umask = "000"

	for run := 1; run <= 2; run++ {
		b := env.start(t)
		b.send("hello, run " + string(rune('0'+run)))
		b.waitLine("echo: hello")
		b.send("/remember city Lisbon")
		b.waitLine("Noted")
		storage := []string{"", "json", "sqlite"}[run]
		b.send("/summary " + storage + " 3") // moves the data between backends
		b.waitLine("Long-term memory is configured")
		for i := range 3 {
			b.send("message " + string(rune('a'+i)))
			b.waitLine("echo: message")
		}
		// Three messages: the threshold starts a summary in the background.
		b.send("/summary_status")
		b.waitLine("Highest summary level")
		seen := checkModes(t, "while running", env.Data)
		if run == 1 && !contains(seen, "recall.db-wal") {
			t.Errorf("no WAL file while running (checked %v): the test would miss its mode", seen)
		}
		b.stop()
		seen = checkModes(t, "after run", env.Data)
		for _, want := range []string{".", "recall.db", "recall.log", "json"} {
			if !contains(seen, want) {
				t.Errorf("%s was not created (saw %v)", want, seen)
			}
		}
	}

	backups := t.TempDir()
	if err := os.Chmod(backups, 0o700); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(backups, "backup.db")
	// The JSON store holds data again: run 1 moved it there, run 2 back;
	// keep some in JSON for the backup.
	env.mustRun(t, "/summary json 3\nsomething for the JSON file\n")
	env.mustRun(t, "", "backup", dst)
	seen := checkModes(t, "backup", backups)
	if !contains(seen, "backup.db") || !contains(seen, filepath.Join("backup.db.json.d", "console-local.json")) && len(seen) < 4 {
		t.Errorf("the backup did not create the files to check: %v", seen)
	}

	env.mustRun(t, "", "whatsapp", "logout") // opens (creates) the session store
	seen = checkModes(t, "whatsapp session", env.Data)
	found := false
	for _, s := range seen {
		found = found || strings.HasPrefix(s, "whatsapp")
	}
	if !found {
		t.Errorf("no WhatsApp session store was created: %v", seen)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestUmaskRestricted: started under umask 000, the running bot's umask is
// 077, so files created by libraries (the SQLite WAL and shared-memory
// files, journals, the WhatsApp session's) are private from their first
// byte, not only once chmod-ed.
func TestUmaskRestricted(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc to read a process's umask")
	}
	srv := newFakeLLM(t)
	env := newEnv(t, srv.URL)
	env.Umask = "000"
	b := env.start(t)
	b.send("hello")
	b.waitLine("echo: hello")
	// The bot runs under sh (exec: same pid).
	status, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(b.cmd.Process.Pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	umask := ""
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "Umask:"); ok {
			umask = strings.TrimSpace(v)
		}
	}
	if umask == "" {
		t.Skip("this kernel does not report the umask")
	}
	if umask != "0077" {
		t.Errorf("the running bot's umask is %s, want 0077", umask)
	}
	b.stop()
}
