package memory

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"
)

// sqlTimeIDsScan is what sqlTimeIDs computes, as it computed it before: the
// time index filtered by conversation.
const sqlTimeIDsScan = `SELECT min(id), max(id) FROM messages WHERE +conv = ?1 AND created_at >= ?2 AND created_at < ?3`

// TestTimeIDsMatchScan: the ids bounding a conversation's messages of a
// time (a question naming "in May") are those of the plain scan, in a
// store of three conversations written interleaved, each partly archived,
// with messages imported later than they were written (their ids out of
// time order), for time ranges narrow and wide, in and around the
// conversations' times and none.
func TestTimeIDsMatchScan(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compares time ranges with a scan (4 s on a busy 2-core machine); go test without -short runs it")
	}
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	keys := []string{"1", "2", "3"}
	r := rand.New(rand.NewPCG(3, 5))
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := t0
	for i := range 1500 {
		k := cfKey("telegram", keys[r.IntN(len(keys))])
		if i > 300 && i < 500 {
			k = cfKey("telegram", "1") // a long run of one conversation
		}
		at = at.Add(time.Duration(r.IntN(3600)) * time.Second)
		when := at
		if r.IntN(10) == 0 {
			when = t0.Add(time.Duration(r.Int64N(int64(at.Sub(t0))))) // imported: written long before
		}
		cfAppend(t, s, cfUser(k, fmt.Sprint(i), fmt.Sprint("m", i), when))
	}
	for _, k := range keys {
		msgs := cfActive(t, s, cfKey("telegram", k))
		cfArchive(t, s, cfKey("telegram", k), cfIDs(msgs[:len(msgs)*3/4]), "older", at, 0)
	}
	span := at.Sub(t0)
	bounds := func(q string, conv, from, to int64) (lo, hi sql.NullInt64) {
		if err := s.r.QueryRowContext(ctx, q, conv, from, to).Scan(&lo, &hi); err != nil {
			t.Fatal(err)
		}
		return lo, hi
	}
	found, none := 0, 0
	for range 400 {
		from := t0.Add(time.Duration(r.Int64N(int64(span)+int64(span)/10)) - span/20)
		to := from.Add(time.Duration(r.Int64N(int64(span) / []int64{1000, 30, 3, 1}[r.IntN(4)])))
		for conv := int64(1); conv <= 4; conv++ { // 4: no such conversation
			lo, hi := bounds(sqlTimeIDs, conv, from.UnixMilli(), to.UnixMilli())
			wlo, whi := bounds(sqlTimeIDsScan, conv, from.UnixMilli(), to.UnixMilli())
			if lo != wlo || hi != whi {
				t.Fatalf("conversation %d, %s to %s: ids %v to %v, want %v to %v", conv, from, to, lo, hi, wlo, whi)
			}
			if wlo.Valid {
				found++
			} else {
				none++
			}
		}
	}
	if found < 300 || none < 400 {
		t.Fatalf("%d ranges with messages, %d without: the test checks little", found, none)
	}
}
