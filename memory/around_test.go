package memory

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestAroundReachMatchesSteps: SQLite's AroundReach (its reads of the ids
// within reach, then within aroundWindow×reach, and the step-by-step query
// for the hits those cannot answer) returns what walking one Around a step
// returns, in a conversation interleaved with others by bursts of every
// length and written alone for a while, archived and active, with hits at
// its ends, in the middle of other conversations' bursts and next to each
// other. Each kind of read answers some of the calls.
func TestAroundReachMatchesSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compares AroundReach with Around step by step (4 s on a busy 2-core machine); go test without -short runs it")
	}
	s, err := OpenSQLite(cfCtx, filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k, other := cfKey("telegram", "-100"), cfKey("telegram", "-200")
	rnd := rand.New(rand.NewPCG(1, 2))
	at := cfT0
	for i := range 400 {
		key := k
		if (rnd.IntN(3) == 0 && (i < 250 || i > 330)) || (i > 150 && i < 200) { // a long run of the other's in the middle, none from 250 to 330
			key = other
		}
		at = at.Add(time.Minute)
		cfAppend(t, s, cfUser(key, fmt.Sprint(i), fmt.Sprint(key.Chat, "/", i), at))
	}
	msgs := cfActive(t, s, k)
	cfArchive(t, s, k, cfIDs(msgs[:len(msgs)*2/3]), "older", at, 0)
	oth := cfActive(t, s, other)
	var reads, answered [3]int // statements run, calls answered by the reads of each kind
	s.aroundTrace = func(n [3]int) {
		last := 0
		for i := range n {
			reads[i] += n[i]
			if n[i] > 0 {
				last = i
			}
		}
		answered[last]++
	}
	for run := range 300 {
		var ids []int64
		for range 1 + rnd.IntN(30) {
			ids = append(ids, msgs[rnd.IntN(len(msgs))].ID)
		}
		switch run % 5 {
		case 4: // where the conversation was written alone
			ids = ids[:0]
			for _, m := range msgs {
				if m.PlatformID >= "252" && m.PlatformID <= "328" && len(m.PlatformID) == 3 && rnd.IntN(8) == 0 {
					ids = append(ids, m.ID)
				}
			}
		case 1:
			ids = append(ids, msgs[0].ID, msgs[len(msgs)-1].ID) // the first and the last
		case 2:
			ids = append(ids, oth[rnd.IntN(len(oth))].ID, 999999) // not in the conversation
		}
		reach := 1 + run%3
		got, err := s.AroundReach(cfCtx, k, ids, reach)
		if err != nil {
			t.Fatal(err)
		}
		want, err := aroundSteps(cfCtx, s, k, ids, reach)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cfIDs(got), cfIDs(want)) {
			t.Fatalf("AroundReach(%v, %d) = %q, want %q", ids, reach, cfTexts(got), cfTexts(want))
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("AroundReach(%v, %d)[%d] = %+v, want %+v", ids, reach, i, got[i], want[i])
			}
		}
	}
	for i, what := range []string{"the ids within reach", "the ids within aroundWindow×reach", "the step-by-step query"} {
		if answered[i] < 20 {
			t.Errorf("%s answered %d calls, want at least 20 (statements: %v, calls answered: %v)", what, answered[i], reads, answered)
		}
	}
	t.Logf("statements run: %v; calls answered after each kind: %v", reads, answered)
}
