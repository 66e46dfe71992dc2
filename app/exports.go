package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/recallbot/recall/commands"
)

// ExportsDir, under data.dir, is where the terminal chat saves the files
// /export makes (the other channels send them and keep nothing).
const ExportsDir = "exports"

// PurgeExports removes from dir the /export files of owner
// (commands.IsExportOf) and returns how many went. Any purge of an owner's
// data — a conversation, messages older than some days, everything —
// removes them all: each file holds every conversation of the owner, the
// purged text with the rest. A missing dir holds none.
func PurgeExports(dir, owner string) (int, error) {
	return removeExports(dir, func(name string) bool { return commands.IsExportOf(name, owner) })
}

// PurgeExportsOlder removes from dir the /export files of every owner made
// before t (memory.retention_days: such a file holds only what the
// retention purges) and returns how many went. A missing dir holds none.
func PurgeExportsOlder(dir string, t time.Time) (int, error) {
	return removeExports(dir, func(name string) bool {
		at, ok := commands.ExportTime(name)
		return ok && at.Before(t)
	})
}

// removeExports removes the export files in dir whose names match and
// returns how many went. A missing dir holds none.
func removeExports(dir string, match func(name string) bool) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("listing the exports in %s: %w", dir, err)
	}
	n := 0
	var errs []error
	for _, e := range entries {
		if e.IsDir() || !match(e.Name()) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing the export %s: %w", e.Name(), err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
