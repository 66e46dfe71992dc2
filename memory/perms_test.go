package memory

import (
	"os"
	"path/filepath"
	"testing"
)

// An existing data directory others may enter (a Docker volume made by
// mkdir under umask 022) is made 0700 by Open: it holds every user's data.
func TestOpenMakesDataDirPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	openStore(t, dir)
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o700 {
		t.Errorf("data directory is %#o after Open, want 0700", got)
	}
}
