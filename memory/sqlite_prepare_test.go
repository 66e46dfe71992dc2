package memory

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ncruces/go-sqlite3"
)

// The statements every turn runs are prepared once and stay prepared: run
// again with new arguments, SQLite does not parse and plan them anew. A
// bound LIMIT (LIMIT ?) made it do so on every run (sqlite.go, "No bound
// LIMIT").
func TestTurnStatementsArePreparedOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "recall.db")
	s, err := OpenSQLite(ctx, path) // migrates, registers the extensions
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := sqlite3.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for name, q := range map[string]string{
		"sqlRecent": sqlRecent, "sqlFactsMatching": sqlFactsMatching, "sqlFactsNewest": sqlFactsNewest,
		"sqlActiveIDs": sqlActiveIDs, "sqlWindowCut": sqlWindowCut, "sqlSearchConv": sqlSearchConv,
		"sqlLookup": sqlLookup, "sqlHandled": sqlHandled, "sqlTurnsSinceSummary": sqlTurnsSinceSummary,
		"sqlUsage": sqlUsage, "sqlConvID": sqlConvID, "sqlAroundWindow": sqlAroundWindow, "sqlAroundReach": sqlAroundReach,
	} {
		st, _, err := c.Prepare(q)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for run := 1; run <= 3; run++ {
			for i := 1; i <= st.BindCount(); i++ {
				if err := st.BindText(i, "1"); err != nil {
					t.Fatalf("%s: binding ?%d: %v", name, i, err)
				}
			}
			for st.Step() {
			}
			if err := st.Reset(); err != nil {
				t.Fatalf("%s, run %d: %v", name, run, err)
			}
		}
		if n := st.Status(sqlite3.STMTSTATUS_REPREPARE, false); n != 0 {
			t.Errorf("%s was prepared again %d times in 3 runs; want 0", name, n)
		}
		st.Close()
	}
}
