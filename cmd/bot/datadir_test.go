package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/recallbot/recall/adapters/whatsapp"
)

// Two processes writing one data directory corrupted each other's crash
// journal, and `bot import` into a live JSON-storage user lost data. While
// the bot runs, every other writer (a second bot, import, whatsapp
// login/logout) stops at once with a message naming the bot's PID and
// changes nothing; the subcommands that only read work beside it; once the
// bot stops, the writers work again.
func TestOneWriterPerDataDirectory(t *testing.T) {
	srv := newFakeLLM(t)
	env := newEnv(t, srv.URL)
	b := env.start(t)
	b.send("my parrot is called Pistachio")
	b.waitLine("echo: my parrot is called Pistachio")
	pid := "PID " + strconv.Itoa(b.cmd.Process.Pid)

	importFile := writeJSONFile(t, "other.json", otherConversation())
	for _, args := range [][]string{{"import", importFile}, {"whatsapp", "logout"}, {}} {
		r := env.run(t, "hello from a second bot\n", args...)
		if r.Code != 1 || !strings.Contains(r.Stderr, pid) || !strings.Contains(r.Stderr, "in use by another Recall process") {
			t.Errorf("bot %v beside a running bot: want exit 1 naming %s\n%s", args, pid, r)
		}
		if strings.Contains(r.Stdout, "echo:") {
			t.Errorf("a second bot answered:\n%s", r)
		}
	}
	if _, err := os.Stat(whatsapp.SessionPath(env.Data)); err == nil {
		t.Error("whatsapp logout created its session store beside the running bot")
	}

	// Readers work beside it.
	if got := messagesOf(env.export(t), consoleKey); len(got) != 2 {
		t.Errorf("bot export beside the bot: %d messages, want 2", len(got))
	}
	env.mustRun(t, "", "search", "--key", consoleKey, "parrot")
	env.mustRun(t, "", "context", "--key", consoleKey, "parrot")
	env.mustRun(t, "", "backup", filepath.Join(t.TempDir(), "copy.db"))

	b.send("still here?")
	b.waitLine("echo: still here?")
	b.stop()
	if r := env.mustRun(t, "", "import", importFile); !strings.Contains(r.Stdout, `"messages":2`) {
		t.Errorf("bot import after the bot stopped:\n%s", r)
	}
}

// `bot export` with a RECALL_DATA_DIR that holds no database created an
// empty one and exited 0, so a typo in the path looked like an empty
// archive. Every subcommand that only reads refuses such a directory with
// an error naming it, and creates nothing.
func TestReadersRefuseADirectoryWithoutData(t *testing.T) {
	for _, args := range [][]string{
		{"export"},
		{"export", "--user", consoleOwner},
		{"search", "--key", consoleKey, "parrot"},
		{"context", "--key", consoleKey, "parrot"},
		{"backup", "copy.db"},
	} {
		for _, exists := range []bool{false, true} {
			env := newEnv(t, "")
			if exists {
				if err := os.MkdirAll(env.Data, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			r := env.run(t, "", args...)
			if r.Code != 1 || !strings.Contains(r.Stderr, "no Recall data in "+env.Data) || !strings.Contains(r.Stderr, "RECALL_DATA_DIR") {
				t.Errorf("bot %v on a data dir without data (dir exists: %v): want exit 1 naming the dir\n%s", args, exists, r)
			}
			if _, err := os.Stat(filepath.Join(env.Data, "recall.db")); err == nil {
				t.Errorf("bot %v created a database", args)
			}
			if !exists {
				if _, err := os.Stat(env.Data); err == nil {
					t.Errorf("bot %v created the data dir", args)
				}
			}
		}
	}
}

// bot import into a new data dir creates it, and every directory on the
// way, 0700 whatever the umask.
func TestImportCreatesPrivateDirectories(t *testing.T) {
	env := newEnv(t, "")
	env.Umask = "000"
	root := t.TempDir()
	if err := os.Chmod(root, 0o700); err != nil {
		t.Fatal(err)
	}
	env.Data = filepath.Join(root, "a", "b", "data")
	env.mustRun(t, "", "import", writeJSONFile(t, "other.json", otherConversation()))
	seen := checkModes(t, "after import", filepath.Join(root, "a"))
	if !contains(seen, filepath.Join("b", "data", "recall.db")) {
		t.Errorf("import created %v", seen)
	}
}
