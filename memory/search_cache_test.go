package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// TestSearchCacheMatchesIndex: with the postings cache, every search
// returns exactly what it returns reading the index (same messages, same
// order, bit-identical scores), while conversations change between searches
// in every way a store changes them: messages appended (one by one and in
// batches), archived, purged (by age, one by one, by sender), edited,
// exported and imported back with their old ids, moved to another chat; in
// several conversations, pruned and exact, archived only or not. The cache
// keeps short doclists here (30 entries) so that its truncated ones are
// read past their end too, in a small budget (8 KiB) so that it drops some.
func TestSearchCacheMatchesIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compares thousands of searches with FTS5 (55 s on a busy 2-core machine); go test without -short runs it")
	}
	searchesMatchIndex(t, false)
}

// TestSearchFullIndexMatchesIndex is TestSearchCacheMatchesIndex with the
// conversations' whole doclists in memory (search_full.go), built in the
// background and rebuilt after every change but an append, within a budget
// that holds two of the three conversations' indexes at most (one is
// dropped for another now and then).
func TestSearchFullIndexMatchesIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compares thousands of searches with FTS5 (20 s on a busy 2-core machine); go test without -short runs it")
	}
	searchesMatchIndex(t, true)
}

func searchesMatchIndex(t *testing.T, full bool) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	s := st.sqlite
	s.postings.from, s.postings.rowsCap, s.postings.budget = 1, 30, 8<<10
	if full {
		s.full.from, s.full.budget, s.full.rest, s.full.keep = 1, 40<<10, 0, 0
	}
	r := rand.New(rand.NewPCG(7, 21))
	vocab := strings.Fields("apple boat cloud dance river stone light music garden window travel coffee " +
		"mountain letter market winter summer yellow bridge forest candle engine island jacket kitten " +
		"ladder mirror needle orange pencil quiet rocket silver tunnel violin whistle")
	people := []string{"Ana", "Rui Costa", "Kenji", "Helena"}
	text := func(n int) string {
		w := make([]string, n)
		for i := range w {
			// Zipf-like: a few words in most messages.
			w[i] = vocab[min(r.IntN(len(vocab)), r.IntN(len(vocab)), r.IntN(len(vocab)))]
			if r.IntN(12) == 0 {
				w[i] = strings.ToLower(people[r.IntN(len(people))])
			}
		}
		return strings.Join(w, " ")
	}
	keys := []pipeline.Key{cfKey("telegram", "1"), cfKey("telegram", "2"), cfKey("telegram", "3")}
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	seq := 0
	msg := func(key pipeline.Key) Message {
		seq++
		m := Message{Key: key, Role: RoleAssistant, Text: text(1 + r.IntN(14)), Time: t0.Add(time.Duration(seq) * time.Second), PlatformID: fmt.Sprint("p", seq)}
		if r.IntN(2) == 0 {
			p := r.IntN(len(people))
			m.Role, m.SenderName, m.SenderID = RoleUser, people[p], fmt.Sprint("u", p)
		}
		return m
	}
	appendN := func(key pipeline.Key, n int) {
		var msgs []Message
		for range n {
			msgs = append(msgs, msg(key))
		}
		if _, err := s.Append(ctx, msgs); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		appendN(k, 400)
	}
	compared, withHits := 0, 0
	search := func(key pipeline.Key) {
		q := Query{Text: text(1 + r.IntN(12)), Limit: []int{5, 20, 40}[r.IntN(3)], ArchivedOnly: r.IntN(2) == 0}
		if r.IntN(6) == 0 {
			q.Text += ` "` + vocab[r.IntN(5)] + " " + vocab[r.IntN(5)] + `"`
		}
		if full {
			// The index a search asked for is built before the next.
			if err := s.WaitSearchIndexes(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for _, tune := range []searchTuning{testTuning, defaultSearchTuning, exactSearchTuning} {
			s.tune = &tune
			got, err := s.Search(ctx, key, q)
			if err != nil {
				t.Fatal(err)
			}
			restore := s.WithoutPostingsCache()
			want, err := s.Search(ctx, key, q)
			restore()
			if err != nil {
				t.Fatal(err)
			}
			if !sameHits(got, want) {
				t.Fatalf("step %d, %s, %q (tuning %+v):\n cached %s\n index  %s", compared, key, q.Text, tune, hitList(got), hitList(want))
			}
			checkPostingsSizes(t, s.postings)
			checkFullSizes(t, s.full)
			compared++
			if len(want) > 0 {
				withHits++
			}
		}
		s.tune = nil
	}
	db := s.DB()
	someID := func(key pipeline.Key) int64 {
		var id int64
		if err := db.QueryRowContext(ctx, `SELECT id FROM messages WHERE conv = (SELECT id FROM conversations WHERE key = ?) ORDER BY random() LIMIT 1`, key.String()).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	moved := 0
	steps := 260
	if full {
		steps = 160 // each change rebuilds an index: slow under -race
	}
	for step := range steps {
		key := keys[r.IntN(len(keys))]
		switch op := r.IntN(20); {
		case op < 9:
			appendN(key, 1+r.IntN(3))
		case op == 9:
			appendN(key, 40+r.IntN(60))
		case op == 10:
			act, err := s.Active(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if len(act) > 20 {
				if _, err := s.Archive(ctx, key, messageIDsOf(act[:20]), Summary{Text: "They talked."}, 0); err != nil {
					t.Fatal(err)
				}
			}
		case op == 11:
			// Unarchive: what an archive's undo would do.
			if _, err := db.ExecContext(ctx, `UPDATE messages SET is_active = 1 WHERE id = ?`, someID(key)); err != nil {
				t.Fatal(err)
			}
		case op == 12:
			if _, err := db.ExecContext(ctx, `UPDATE messages SET text = ? WHERE id = ?`, text(1+r.IntN(10)), someID(key)); err != nil {
				t.Fatal(err)
			}
		case op == 13:
			var pid string
			if err := db.QueryRowContext(ctx, `SELECT platform_id, sender_id FROM messages WHERE id = ?`, someID(key)).Scan(&pid, new(string)); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, `DELETE FROM messages WHERE platform_id = ? AND conv = (SELECT id FROM conversations WHERE key = ?)`, pid, key.String()); err != nil {
				t.Fatal(err)
			}
		case op == 14:
			if _, err := st.PurgeSender(ctx, SenderScope{Channel: key.Channel, SenderID: fmt.Sprint("u", r.IntN(len(people)))}); err != nil {
				t.Fatal(err)
			}
		case op == 15:
			// Exported, its oldest messages purged, then imported back
			// with their ids: messages added below the newest id.
			d, err := s.Export(ctx, key.Owner(), &key)
			if err != nil {
				t.Fatal(err)
			}
			cut := t0.Add(time.Duration(seq/3) * time.Second)
			if _, err := s.Purge(ctx, PurgeScope{Owner: key.Owner(), Key: key, OlderThan: cut}); err != nil {
				t.Fatal(err)
			}
			search(key)
			if err := s.importCopy(ctx, d, true); err != nil {
				t.Fatal(err)
			}
		case op == 16:
			moved++
			to := cfKey("telegram", fmt.Sprint("moved", moved))
			if _, err := st.MoveChat(ctx, key, to); err != nil {
				t.Fatal(err)
			}
			for i := range keys {
				if keys[i] == key {
					keys[i] = to
				}
			}
			key = to
		case op == 17:
			// A message of another conversation moves in (its id is
			// below the newest).
			other := keys[(slicesIndex(keys, key)+1)%len(keys)]
			if _, err := db.ExecContext(ctx, `UPDATE messages SET conv = (SELECT id FROM conversations WHERE key = ?) WHERE id = ?`, key.String(), someID(other)); err != nil {
				t.Fatal(err)
			}
		}
		search(key)
		if step%3 == 0 {
			search(keys[r.IntN(len(keys))])
		}
	}
	if full {
		f := s.full
		f.mu.Lock()
		defer f.mu.Unlock()
		if withHits < 300 || f.served < 350 || f.built < 30 || f.retired < 20 {
			t.Fatalf("%d searches with hits, %d used an index in memory, %d indexes built, %d retired: the test checks little", withHits, f.served, f.built, f.retired)
		}
		t.Logf("%d searches compared (%d with hits), %d through an index in memory, %d indexes built, %d retired", compared, withHits, f.served, f.built, f.retired)
		return
	}
	if withHits < 500 || s.postings.served.Load() < 2000 || s.postings.added.Load() < 50 || s.postings.dropped.Load() < 100 {
		t.Fatalf("%d searches with hits, %d doclists served from the cache, %d times messages added to it, %d doclists dropped: the test checks little",
			withHits, s.postings.served.Load(), s.postings.added.Load(), s.postings.dropped.Load())
	}
	t.Logf("%d searches compared (%d with hits), %d doclists served from the cache, brought up to date %d times, %d doclists dropped",
		compared, withHits, s.postings.served.Load(), s.postings.added.Load(), s.postings.dropped.Load())
}

// checkPostingsSizes fails t when an entry's kept size is not its
// doclists' size, or the cache holds more than its budget.
func checkPostingsSizes(t *testing.T, pc *postingsCache) {
	t.Helper()
	pc.mu.Lock()
	defer pc.mu.Unlock()
	total := 0
	for conv, e := range pc.entries {
		n, listed := 0, 0
		for k, p := range e.text {
			n += p.size(k)
		}
		for k, p := range e.other {
			n += p.size(k)
		}
		for l := e.lru.next; l != &e.lru; l = l.next {
			listed++
		}
		if listed != len(e.text)+len(e.other) {
			t.Fatalf("conversation %d: %d doclists cached, %d in the lru list", conv, len(e.text)+len(e.other), listed)
		}
		if e.held != n || e.bytes != n {
			t.Fatalf("conversation %d: cached doclists take %d bytes, the entry says %d (released at %d)", conv, n, e.held, e.bytes)
		}
		total += n
	}
	if total != pc.bytes || total > pc.budget {
		t.Fatalf("cached doclists take %d bytes, the cache says %d, budget %d", total, pc.bytes, pc.budget)
	}
}

// checkFullSizes fails t when an index in memory does not take what it
// counts, or all of them more than their budget.
func checkFullSizes(t *testing.T, f *fullIndexes) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	total := 0
	for conv, e := range f.entries {
		if n := e.x.measure(); e.x.bytes != n || e.bytes != n {
			t.Fatalf("conversation %d: its index takes %d bytes, counted %d (released at %d)", conv, n, e.x.bytes, e.bytes)
		}
		total += e.bytes
	}
	if total != f.bytes || total > f.budget {
		t.Fatalf("indexes in memory take %d bytes, counted %d, budget %d", total, f.bytes, f.budget)
	}
}

func slicesIndex(keys []pipeline.Key, k pipeline.Key) int {
	for i := range keys {
		if keys[i] == k {
			return i
		}
	}
	return -1
}

func messageIDsOf(msgs []Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// TestSearchCacheOlderSnapshot: a search whose read transaction is older
// than the cached doclists (fewer messages, the same search_gen: a reader
// that began before the last append) reads the index, not the cache, which
// holds messages its snapshot does not.
func TestSearchCacheOlderSnapshot(t *testing.T) {
	ctx := context.Background()
	f := newSearchFixture(t)
	f.s.postings.from = 1
	if _, err := f.s.Search(ctx, f.mid, Query{Text: "travel"}); err != nil {
		t.Fatal(err)
	}
	var conv, docs, gen int64
	if err := f.s.DB().QueryRowContext(ctx, `SELECT id, search_docs, search_gen FROM conversations WHERE key = ?`, f.mid.String()).Scan(&conv, &docs, &gen); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		docs, gen int64
		cached    bool
	}{{docs, gen, true}, {docs - 1, gen, false}} {
		e, err := f.s.postings.acquire(&searchRun{conv: conv, nDocs: c.docs}, c.gen)
		if err != nil {
			t.Fatal(err)
		}
		if (e != nil) != c.cached {
			t.Errorf("a snapshot of %d messages (the cache's: %d): cache used = %v", c.docs, docs, e != nil)
		}
		if e != nil {
			f.s.postings.release(e)
		}
	}
}
