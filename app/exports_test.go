package app

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/recallbot/recall/commands"
)

// PurgeExports removes one owner's /export files (with the "-N" the
// terminal adds), nobody else's and nothing else; PurgeExportsOlder those
// of any owner made before a time.
func TestPurgeExports(t *testing.T) {
	dir := t.TempDir()
	old := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	recent := old.Add(30 * 24 * time.Hour)
	names := []string{
		commands.ExportFileName("telegram:12", old),
		"recall-export-telegram-12-20260101-090000-1.json",
		commands.ExportFileName("telegram:12", recent),
		commands.ExportFileName("telegram:123", old),
		commands.ExportFileName("telegram:7", recent),
		"notes.json",
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	left := func() []string {
		t.Helper()
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}
	if n, err := PurgeExportsOlder(dir, old.Add(time.Hour)); err != nil || n != 3 {
		t.Fatalf("PurgeExportsOlder = %d, %v; want 3 (left %v)", n, err, left())
	}
	want := []string{"notes.json", names[4], names[2]}
	slices.Sort(want)
	if got := left(); !slices.Equal(got, want) {
		t.Fatalf("after PurgeExportsOlder: %v, want %v", got, want)
	}
	if n, err := PurgeExports(dir, "telegram:12"); err != nil || n != 1 {
		t.Fatalf("PurgeExports = %d, %v; want 1", n, err)
	}
	want = []string{"notes.json", names[4]}
	slices.Sort(want)
	if got := left(); !slices.Equal(got, want) {
		t.Fatalf("after PurgeExports: %v, want %v", got, want)
	}
	if n, err := PurgeExports(filepath.Join(dir, "missing"), "telegram:12"); err != nil || n != 0 {
		t.Fatalf("a missing dir: %d, %v", n, err)
	}
}
