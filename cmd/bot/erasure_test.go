package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// filesHolding lists the files under dir that hold word (any case).
func filesHolding(t *testing.T, dir, word string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(bytes.ToLower(b), []byte(strings.ToLower(word))) {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// /purge all in the terminal chat leaves none of the user's words in the
// data directory: not in the database, not in the note, not in the file
// /export saved in data/exports.
func TestTerminalPurgeRemovesExports(t *testing.T) {
	const secret = "zqxexported5521"
	srv := newFakeLLM(t)
	env := newEnv(t, srv.URL)
	r := env.mustRun(t, lines("my code is "+secret, "/remember code "+secret, "/export"))
	assertInOrder(t, r.Stdout, "echo: my code is "+secret, "Saved to ")
	exports, err := filepath.Glob(filepath.Join(env.Data, "exports", "recall-export-console-local-*.json"))
	if err != nil || len(exports) != 1 {
		t.Fatalf("exports: %v %v\n%s", exports, err, r)
	}
	if found := filesHolding(t, env.Data, secret); len(found) == 0 {
		t.Fatal("control failed: the words are nowhere in the data directory before the purge")
	}
	r = env.mustRun(t, lines("/purge all", "yes"))
	assertInOrder(t, r.Stdout, "Delete ALL your data", "Deleted ")
	if found := filesHolding(t, env.Data, secret); len(found) > 0 {
		t.Errorf("after /purge all the words are still in %v", found)
	}
	if _, err := os.Stat(exports[0]); !os.IsNotExist(err) {
		t.Errorf("the export %s survived /purge all (%v)", exports[0], err)
	}
}
