package memory

// Helpers that show where on disk a string survives (for purge tests).

import (
	"os"
	"path/filepath"
	"testing"
)

func dumpSecret(t *testing.T, dir, secret string, s *Store) {
	b, _ := os.ReadFile(filepath.Join(dir, "recall.db"))
	for i := 0; ; {
		j := indexOf(b[i:], secret)
		if j < 0 {
			break
		}
		off := i + j
		var name string
		s.sqlite.DB().QueryRow(`select name from dbstat where pageno = ?`, off/4096+1).Scan(&name)
		t.Logf("found at page %d (%s): %q", off/4096+1, name, b[max(0, off-30):off+15])
		i = off + 1
	}
}

func indexOf(b []byte, s string) int {
	for i := 0; i+len(s) <= len(b); i++ {
		if string(b[i:i+len(s)]) == s {
			return i
		}
	}
	return -1
}
