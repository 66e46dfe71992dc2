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
	"0001_init.sql":          "63af63d9256e14ac154942cdc5ec5825cc2e252075b46b68fdb522ee47806445",
	"0002_access.sql":        "80278bbedb551fa8478d40368cb96e73501414de494922fa19812204513db35f",
	"0003_handled.sql":       "0509adfe7c42b72ee260b966d2b1fa2c6999c2f3b9e80bd5faa2b48c149b9e3f",
	"0004_facts_off.sql":     "8c35078db86d9b4c0ca94996de7e8b522f6472c066149922fc2c66728fa734bd",
	"0005_embeddings.sql":    "d3045631cec27a433343e527ffb0030dfb3b978d485dafc19a21bb2b07232285",
	"0006_search_gen.sql":    "fd294ef68aa81983d312a900f0a8c68db202e9bac2c2210e2c47870b0bc64160",
	"0007_questions.sql":     "7707785c8b5c61baf8c157b0bcfa6b1fcfe033f1cf7aa8f1bdad92d4585c9673",
	"0008_long_terms.sql":    "f10949dc423cfb35a4402a60af627fa4f491117846796e03f8c41a637cef0f48",
	"0009_memory_author.sql": "80d354fb1814856cff127d6905a43ad9a840a7ef25b867e3f871f312026e7880",
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
