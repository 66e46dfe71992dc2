package memory

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSearchCacheMatchesIndex: searches served from the doclist cache
// return exactly what searches reading the index only return — the same
// messages, order and scores — while the conversation grows, messages are
// archived, discarded, purged, or deleted behind the cache's back, with the
// pruning thresholds scaled down so that every path of SQLite.Search runs.
func TestSearchCacheMatchesIndex(t *testing.T) {
	f := newSearchFixture(t)
	s := f.s
	tune := testTuning
	s.tune = &tune
	ctx := context.Background()
	cache := s.search
	if cache == nil {
		t.Fatal("the search cache is off by default")
	}
	r := rand.New(rand.NewPCG(7, 7))

	// Words to ask and to say: the conversation's own, names included.
	rows, err := s.DB().QueryContext(ctx, `SELECT text FROM messages WHERE id % 7 = 0 LIMIT 300`)
	if err != nil {
		t.Fatal(err)
	}
	var vocab []string
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			t.Fatal(err)
		}
		vocab = append(vocab, strings.Fields(text)...)
	}
	rows.Close()
	vocab = append(vocab, "Ana", "Rui", "Kenji", "Sato", "Ana", "Ana")
	words := func(lo, hi int) string {
		n := lo + r.IntN(hi-lo+1)
		out := make([]string, n)
		for i := range out {
			out[i] = vocab[r.IntN(len(vocab))]
		}
		return strings.Join(out, " ")
	}

	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	next := 0
	say := func(n int) {
		t.Helper()
		var msgs []Message
		for range n {
			next++
			m := Message{Key: f.mid, Role: RoleAssistant, Text: words(2, 30), PlatformID: "new" + strconv.Itoa(next), Time: t0.Add(time.Duration(next) * time.Minute)}
			if next%2 == 1 {
				m.Role, m.SenderName, m.SenderID = RoleUser, []string{"Ana", "Rui", "Kenji Sato"}[r.IntN(3)], "1"
			}
			msgs = append(msgs, m)
		}
		if _, err := s.Append(ctx, msgs); err != nil {
			t.Fatal(err)
		}
	}
	// same runs q from the cache and from the index only, and fails unless
	// both find the same messages in the same order with the same scores.
	same := func(what string, q Query) []Hit {
		t.Helper()
		s.search = cache
		cached, err := s.Search(ctx, f.mid, q)
		if err != nil {
			t.Fatal(err)
		}
		s.search = nil
		fresh, err := s.Search(ctx, f.mid, q)
		s.search = cache
		if err != nil {
			t.Fatal(err)
		}
		if hitList(cached) != hitList(fresh) {
			t.Fatalf("%s, %q (archived only %v):\ncached %s\nindex  %s", what, q.Text, q.ArchivedOnly, hitList(cached), hitList(fresh))
		}
		for i := range cached {
			if cached[i].Score != fresh[i].Score {
				t.Fatalf("%s, %q: hit %d scored %v from the cache, %v from the index", what, q.Text, i, cached[i].Score, fresh[i].Score)
			}
		}
		return cached
	}
	compare := func(round int) {
		t.Helper()
		for range 4 {
			same("round "+strconv.Itoa(round), Query{Text: words(1, 12), Limit: 10, ArchivedOnly: r.IntN(2) == 0})
		}
	}
	for round := range 60 {
		switch op := r.IntN(10); {
		case op < 5:
			say(1 + r.IntN(3))
		case op == 5:
			act, err := s.Active(ctx, f.mid)
			if err != nil {
				t.Fatal(err)
			}
			if len(act) > 10 {
				if _, err := s.Archive(ctx, f.mid, ids(act[:6]), Summary{Text: "chunk"}, 0); err != nil {
					t.Fatal(err)
				}
			}
		case op == 6:
			// The newest user message, refused: the next message gets its
			// id, and the conversation has as many messages as before.
			if next%2 == 1 {
				say(1)
			}
			say(1)
			compare(round) // the cache has seen it
			if _, err := s.discard(ctx, f.mid, "new"+strconv.Itoa(next)); err != nil {
				t.Fatal(err)
			}
			say(1)
		case op == 7:
			// Deleted behind the cache's back (another process).
			if _, err := s.DB().ExecContext(ctx, `DELETE FROM messages WHERE id = (SELECT max(id) FROM messages WHERE conv = (SELECT id FROM conversations WHERE key = ?))`, f.mid.String()); err != nil {
				t.Fatal(err)
			}
		case op == 8:
			if _, err := s.Purge(ctx, PurgeScope{Owner: f.mid.Owner(), Key: f.mid, OlderThan: time.Date(2025, 3, 1, 0, 0, round*3, 0, time.UTC)}); err != nil {
				t.Fatal(err)
			}
		}
		compare(round)
	}
	// A refused message's id is reused by the next one: a search must not
	// find the new message by the refused one's words.
	if next%2 == 1 {
		say(1)
	}
	next++
	refused := Message{Key: f.mid, Role: RoleUser, SenderName: "Ana", Text: "zebrafish aquarium", PlatformID: "new" + strconv.Itoa(next), Time: t0.Add(time.Duration(next) * time.Minute)}
	if _, err := s.Append(ctx, []Message{refused}); err != nil {
		t.Fatal(err)
	}
	if len(same("before the refusal", Query{Text: "zebrafish", Limit: 10})) != 1 {
		t.Fatal("the refused message is not found before it is discarded")
	}
	if gone, err := s.discard(ctx, f.mid, refused.PlatformID); err != nil || !gone {
		t.Fatalf("discarding: %v %v", gone, err)
	}
	// As long as the refused one, so that the conversation's counts are
	// those the cache expects.
	next++
	if _, err := s.Append(ctx, []Message{{Key: f.mid, Role: RoleUser, SenderName: "Ana", Text: "other words", PlatformID: "new" + strconv.Itoa(next), Time: t0.Add(time.Duration(next) * time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if h := same("after the refusal", Query{Text: "zebrafish", Limit: 10}); len(h) != 0 {
		t.Errorf("found %s after the discard", hitList(h))
	}
	if got := cache.served.Load(); got == 0 {
		t.Error("no doclist was served from the cache")
	}
}
