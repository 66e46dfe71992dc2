package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// released are the migrations databases out there have applied, with the
// SHA-256 of each file. A released migration never changes: a database
// records only its number, so a changed file would leave existing databases
// and new ones with different schemas. A schema change is a new numbered
// file; once it ships, add its checksum here.
var released = map[string]string{
	"0001_init.sql":   "63af63d9256e14ac154942cdc5ec5825cc2e252075b46b68fdb522ee47806445",
	"0002_access.sql": "80278bbedb551fa8478d40368cb96e73501414de494922fa19812204513db35f",
}

func TestReleasedMigrationsNeverChange(t *testing.T) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	lastReleased, seen := 0, map[int]string{}
	for name, sum := range released {
		n, _ := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		lastReleased = max(lastReleased, n)
		body, err := migrationFiles.ReadFile("migrations/" + name)
		if err != nil {
			t.Errorf("released migration %s is gone: %v", name, err)
			continue
		}
		h := sha256.Sum256(body)
		if got := hex.EncodeToString(h[:]); got != sum {
			t.Errorf("released migration %s changed (sha256 %s, released as %s): put the change in a new numbered migration", name, got, sum)
		}
	}
	for i, full := range names {
		name := path.Base(full)
		n, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil || n != i+1 {
			t.Errorf("migration %s: want number %04d (numbers run 1, 2, 3… without gaps)", name, i+1)
		}
		if other, dup := seen[n]; dup {
			t.Errorf("migrations %s and %s share number %d", other, name, n)
		}
		seen[n] = name
		if _, ok := released[name]; !ok && n <= lastReleased {
			t.Errorf("migration %s is numbered among the released ones (up to %d) but is not one of them", name, lastReleased)
		}
	}
	if len(names) == 0 {
		t.Fatal("no embedded migrations")
	}
}
