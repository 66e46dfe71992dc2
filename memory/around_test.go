package memory

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestAroundReachMatchesSteps: SQLite's AroundReach (its window read, and
// the step-by-step query for the hits a window cannot answer) returns what
// walking one Around a step returns, in a conversation interleaved with
// others by bursts of every length, archived and active, with hits at its
// ends, in the middle of other conversations' bursts and next to each other.
func TestAroundReachMatchesSteps(t *testing.T) {
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
		if rnd.IntN(3) == 0 || (i > 150 && i < 200) { // a long run of the other's in the middle
			key = other
		}
		at = at.Add(time.Minute)
		cfAppend(t, s, cfUser(key, fmt.Sprint(i), fmt.Sprint(key.Chat, "/", i), at))
	}
	msgs := cfActive(t, s, k)
	cfArchive(t, s, k, cfIDs(msgs[:len(msgs)*2/3]), "older", at, 0)
	oth := cfActive(t, s, other)
	for run := range 200 {
		var ids []int64
		for range 1 + rnd.IntN(30) {
			ids = append(ids, msgs[rnd.IntN(len(msgs))].ID)
		}
		switch run % 4 {
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
}
