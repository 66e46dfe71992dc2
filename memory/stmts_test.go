package memory

import (
	"database/sql"
	"path/filepath"
	"strconv"
	"testing"
)

// TestStmtCache: a query prepared once answers every later call with new
// arguments; past stmtCacheMax distinct texts the queries still run, not
// kept; a transaction runs prepared and unprepared queries alike.
func TestStmtCache(t *testing.T) {
	s, err := OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	kept := len(s.rc.m)
	for i := range stmtCacheMax + 10 {
		var got int
		if err := s.rd.QueryRowContext(ctx, `SELECT ? + `+strconv.Itoa(i), 1).Scan(&got); err != nil || got != i+1 {
			t.Fatalf("query %d: %d, %v", i, got, err)
		}
		var again int
		if err := s.rd.QueryRowContext(ctx, `SELECT ? + `+strconv.Itoa(i), 2).Scan(&again); err != nil || again != i+2 {
			t.Fatalf("query %d again: %d, %v", i, again, err)
		}
	}
	if len(s.rc.m) != stmtCacheMax {
		t.Errorf("%d statements kept (%d before), want the cap %d", len(s.rc.m), kept, stmtCacheMax)
	}
	if _, err := s.rd.QueryContext(ctx, `SELECT nonsense FROM nowhere`); err == nil {
		t.Error("a bad query reported no error")
	}
	if err := s.rd.QueryRowContext(ctx, `SELECT nonsense FROM nowhere`).Scan(new(int)); err == nil {
		t.Error("a bad query row reported no error")
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		q := cachedTx{tx, s.wc}
		if _, err := q.ExecContext(ctx, sqlEnsureConv, "telegram:1", "telegram:1", 0); err != nil {
			return err
		}
		var id int64
		if err := q.QueryRowContext(ctx, sqlConvID, "telegram:1").Scan(&id); err != nil || id == 0 {
			t.Errorf("prepared query in a transaction: %d, %v", id, err)
		}
		var n int
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM conversations`).Scan(&n); err != nil || n != 1 {
			t.Errorf("unprepared query in a transaction: %d, %v", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
