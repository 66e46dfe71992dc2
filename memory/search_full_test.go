package memory

import (
	"context"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// TestFullIndexBuiltAtOpen: the conversations big enough get their index
// in memory when the store opens, before anyone searches them, and the
// first search of one reads no doclist from the index and finds what the
// index finds; a smaller conversation gets none.
func TestFullIndexBuiltAtOpen(t *testing.T) {
	ctx := context.Background()
	f := newSearchFixture(t)
	s := f.s
	s.full.from = 1000
	indexAsAtOpen(t, s)
	indexed := map[string]int{}
	s.full.mu.Lock()
	for _, e := range s.full.entries {
		indexed[convKeyOf(t, s, e.conv)] = len(e.x.rows)
	}
	s.full.mu.Unlock()
	want := map[string]int{f.mid.String(): 3000, cfKey("telegram", "other").String(): 1500}
	if len(indexed) != len(want) || indexed[f.mid.String()] != 3000 || indexed[cfKey("telegram", "other").String()] != 1500 {
		t.Fatalf("indexed in memory at open: %v; want %v (not the 600-message conversation)", indexed, want)
	}
	var lookups int
	s.searchTrace = func(r *searchRun) { lookups = r.traceLookups }
	q := Query{Text: "what did Ana say about the trip to the mountain and the train", Limit: 20}
	searchAsIndex(t, s, f.mid, q) // through the index in memory, then FTS5
	fromIndex := lookups
	if _, err := s.Search(ctx, f.mid, q); err != nil {
		t.Fatal(err)
	}
	through := lookups
	s.full.mu.Lock()
	served := s.full.served
	s.full.mu.Unlock()
	if served != 2 {
		t.Fatalf("%d searches through the index in memory, want 2", served)
	}
	// The conversation, its active ids and the hits: no statement per word.
	if through > 3 || fromIndex < 10 {
		t.Fatalf("a search ran %d statements through the index in memory, %d without it", through, fromIndex)
	}
}

// TestFullIndexTooBig: a conversation whose index would take more than the
// budget is not indexed in memory (nor tried again), and is searched as
// before.
func TestFullIndexTooBig(t *testing.T) {
	ctx := context.Background()
	f := newSearchFixture(t)
	s := f.s
	s.full.from, s.full.budget = 1000, 32<<10
	q := Query{Text: "the train to the mountain", Limit: 10}
	for range 2 {
		if _, err := s.Search(ctx, f.mid, q); err != nil {
			t.Fatal(err)
		}
		if err := s.WaitSearchIndexes(ctx); err != nil {
			t.Fatal(err)
		}
	}
	s.full.mu.Lock()
	entries, built, tooBig, queued := len(s.full.entries), s.full.built, len(s.full.tooBig), len(s.full.queued)
	s.full.mu.Unlock()
	if entries != 0 || built != 0 || tooBig != 1 || queued != 0 {
		t.Fatalf("%d indexes in memory, %d built, %d found too big, %d queued; want none, none, 1, none", entries, built, tooBig, queued)
	}
	searchAsIndex(t, s, f.mid, q)
}

// searchAsIndex fails t unless q finds in s what it finds reading every
// doclist from FTS5, and something.
func searchAsIndex(t *testing.T, s *SQLite, key pipeline.Key, q Query) {
	t.Helper()
	ctx := context.Background()
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
	if len(want) == 0 || !sameHits(got, want) {
		t.Fatalf("search %s\nreading FTS5 %s", hitList(got), hitList(want))
	}
}

// TestFullIndexCloseWhileBuilding: closing the store stops a build in
// progress and returns.
func TestFullIndexCloseWhileBuilding(t *testing.T) {
	ctx := context.Background()
	f := newSearchFixture(t)
	s := f.s
	s.full.from = 1000
	if err := s.indexBigConversations(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitSearchIndexes(ctx); err != nil {
		t.Fatal(err)
	}
}

func convKeyOf(t *testing.T, s *SQLite, conv int64) string {
	t.Helper()
	var key string
	if err := s.DB().QueryRow(`SELECT key FROM conversations WHERE id = ?`, conv).Scan(&key); err != nil {
		t.Fatal(err)
	}
	return key
}

// TestFullIndexRebuiltAtMostEveryTenBuilds: a conversation whose messages
// are deleted turn after turn is not rebuilt after every deletion: its
// index is retired at once (its searches read the index, and find what it
// holds now), and built again only once ten builds' time has passed.
func TestFullIndexRebuiltAtMostEveryTenBuilds(t *testing.T) {
	ctx := context.Background()
	f := newSearchFixture(t)
	s := f.s
	s.full.from = 1000
	indexAsAtOpen(t, s)
	s.full.mu.Lock()
	built0 := s.full.built
	s.full.notBefore = map[int64]time.Time{} // as if the builds were long ago
	s.full.mu.Unlock()
	q := Query{Text: "the train to the mountain with Ana", Limit: 10}
	for i := range 3 {
		hits, err := s.Search(ctx, f.mid, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 {
			t.Fatal("no hits")
		}
		if _, err := s.DB().ExecContext(ctx, `DELETE FROM messages WHERE id = ?`, hits[0].Message.ID); err != nil {
			t.Fatal(err)
		}
		got, err := s.Search(ctx, f.mid, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range got {
			if h.Message.ID == hits[0].Message.ID {
				t.Fatalf("deletion %d: the deleted message %d is still found", i, h.Message.ID)
			}
		}
		if err := s.WaitSearchIndexes(ctx); err != nil {
			t.Fatal(err)
		}
	}
	s.full.mu.Lock()
	rebuilt, indexed := s.full.built-built0, s.full.entries[convIDOf(t, s, f.mid)] != nil
	s.full.mu.Unlock()
	if rebuilt != 1 || indexed {
		t.Fatalf("after 3 deletions one right after the other: %d rebuilds, indexed in memory now: %v; want 1 rebuild (the first), retired since", rebuilt, indexed)
	}
}

func convIDOf(t *testing.T, s *SQLite, key pipeline.Key) int64 {
	t.Helper()
	var id int64
	if err := s.DB().QueryRow(`SELECT id FROM conversations WHERE key = ?`, key.String()).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestFullIndexesOptions: Options.SearchMemory sets the budget of the
// indexes in memory, a negative value turns them off (the store searches
// FTS5), and a store opened only to read (Existing) builds none.
func TestFullIndexesOptions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, c := range []struct {
		opts   Options
		budget int // 0: none
	}{
		{Options{Dir: dir}, fullBudget},
		{Options{Dir: dir, SearchMemory: 3 << 20}, 3 << 20},
		{Options{Dir: dir, SearchMemory: -1}, 0},
		{Options{Dir: dir, Existing: true}, 0},
	} {
		st, err := Open(ctx, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		budget := 0
		if f := st.SQLite().full; f != nil {
			budget = f.budget
		}
		if _, err := st.Search(ctx, cfKey("telegram", "1"), Query{Text: "anything"}); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if budget != c.budget {
			t.Errorf("%+v: indexes in memory within %d bytes, want %d", c.opts, budget, c.budget)
		}
	}
}

// TestFullIndexAtOpenWithinBudget: at open, the conversations are indexed
// in memory the most recently written first, as many as the budget likely
// holds; the others wait for a search.
func TestFullIndexAtOpenWithinBudget(t *testing.T) {
	ctx := context.Background()
	f := newSearchFixture(t)
	s := f.s
	type conv struct {
		key              string
		docs, toks, last int64
	}
	var convs []conv
	rows, err := s.DB().QueryContext(ctx, `SELECT c.key, c.search_docs, c.search_tokens, (SELECT max(id) FROM messages WHERE conv = c.id)
		FROM conversations c WHERE c.search_docs >= 1000 ORDER BY 4 DESC`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c conv
		if err := rows.Scan(&c.key, &c.docs, &c.toks, &c.last); err != nil {
			t.Fatal(err)
		}
		convs = append(convs, c)
	}
	if rows.Close(); len(convs) != 2 {
		t.Fatalf("%d conversations of 1,000 messages or more in the fixture, want 2", len(convs))
	}
	e0, e1 := fullEstimate(convs[0].docs, convs[0].toks), fullEstimate(convs[1].docs, convs[1].toks)
	s.full.from, s.full.budget = 1000, int(max(e0, e1)+min(e0, e1)/2)
	indexAsAtOpen(t, s)
	var indexed []string
	s.full.mu.Lock()
	for _, e := range s.full.entries {
		indexed = append(indexed, convKeyOf(t, s, e.conv))
	}
	s.full.mu.Unlock()
	if len(indexed) != 1 || indexed[0] != convs[0].key {
		t.Fatalf("indexed at open: %v; want only %s, the most recently written", indexed, convs[0].key)
	}
}

// indexAsAtOpen queues what open queues, and waits for it.
func indexAsAtOpen(t *testing.T, s *SQLite) {
	t.Helper()
	ctx := context.Background()
	if err := s.indexBigConversations(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitSearchIndexes(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestFullIndexSweptAfterPurge: a conversation purged while no one
// searches it loses its index in memory and its postings cache entry at
// the next sweep (its stems and message ids leave the process), and a
// conversation only appended to keeps its own.
func TestFullIndexSweptAfterPurge(t *testing.T) {
	ctx := context.Background()
	f := newSearchFixture(t)
	s := f.s
	s.full.from = 1000
	indexAsAtOpen(t, s)
	other := cfKey("telegram", "other")
	// A search of it through the postings cache too.
	s.postings.from = 1
	restore := s.WithoutFullIndexes()
	if _, err := s.Search(ctx, other, Query{Text: "the train to the mountain"}); err != nil {
		t.Fatal(err)
	}
	restore()
	otherID := convIDOf(t, s, other)
	cached := func() bool {
		s.postings.mu.Lock()
		defer s.postings.mu.Unlock()
		return s.postings.entries[otherID] != nil
	}
	if !cached() {
		t.Fatal("the postings cache holds nothing of the conversation searched")
	}
	if _, err := s.Append(ctx, []Message{{Key: f.mid, Role: RoleUser, SenderName: "Ana", Text: "one more about the train", Time: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Purge(ctx, PurgeScope{Owner: other.Owner(), Key: other}); err != nil {
		t.Fatal(err)
	}
	s.full.sweep(ctx, s.postings) // what the builder does every sweepEvery
	var indexed []string
	s.full.mu.Lock()
	for _, e := range s.full.entries {
		indexed = append(indexed, convKeyOf(t, s, e.conv))
	}
	s.full.mu.Unlock()
	if len(indexed) != 1 || indexed[0] != f.mid.String() {
		t.Fatalf("indexed in memory after purging %s: %v; want only %s", other, indexed, f.mid)
	}
	if cached() {
		t.Fatalf("the postings cache still holds %s's doclists after its purge", other)
	}
	searchAsIndex(t, s, f.mid, Query{Text: "one more about the train", Limit: 5})
}

// TestFullIndexKeepsWhatIsInUse: when the budget holds one of two
// conversations searched turn after turn, the one indexed keeps its index
// and the other is searched through FTS5 (same answers), instead of each
// evicting the other's index at every turn; once the first has gone
// unsearched long enough (keep), the other takes its place.
func TestFullIndexKeepsWhatIsInUse(t *testing.T) {
	ctx := context.Background()
	f := newSearchFixture(t)
	s := f.s
	other := cfKey("telegram", "other")
	s.full.from, s.full.rest, s.full.budget = 1000, 0, 0
	for _, key := range []pipeline.Key{f.mid, other} {
		x, err := s.buildConvIndex(ctx, convIDOf(t, s, key), 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		s.full.budget = max(s.full.budget, x.bytes)
	}
	s.full.budget += 1 << 10 // one fits, not both
	q := Query{Text: "the train to the mountain with Ana", Limit: 10}
	for range 4 {
		for _, key := range []pipeline.Key{f.mid, other} {
			searchAsIndex(t, s, key, q)
			if err := s.WaitSearchIndexes(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.full.mu.Lock()
	built, retired, _, midIndexed := s.full.built, s.full.retired, len(s.full.entries), s.full.entries[convIDOf(t, s, f.mid)] != nil
	for _, e := range s.full.entries {
		e.lastUse = time.Time{} // as if unsearched for long
	}
	s.full.notBefore = map[int64]time.Time{}
	s.full.mu.Unlock()
	if built != 1 || retired != 0 || !midIndexed {
		t.Fatalf("4 rounds of both conversations: %d indexes built, %d retired, the first indexed: %v; want 1, 0, true", built, retired, midIndexed)
	}
	searchAsIndex(t, s, other, q)
	if err := s.WaitSearchIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	s.full.mu.Lock()
	otherIndexed, midIndexed := s.full.entries[convIDOf(t, s, other)] != nil, s.full.entries[convIDOf(t, s, f.mid)] != nil
	s.full.mu.Unlock()
	if !otherIndexed || midIndexed {
		t.Fatalf("once the first went unsearched: the second indexed %v, the first %v; want true, false", otherIndexed, midIndexed)
	}
	searchAsIndex(t, s, other, q)
}

// TestFullIndexHeldAtStart: the builds queued at open wait for the hold
// (fullHold after open: the bot's start-up goes first), then run.
func TestFullIndexHeldAtStart(t *testing.T) {
	f := newSearchFixture(t)
	s := f.s
	hold := time.Now().Add(300 * time.Millisecond)
	s.full.mu.Lock()
	s.full.from, s.full.holdUntil = 1000, hold
	s.full.mu.Unlock()
	indexAsAtOpen(t, s)
	s.full.mu.Lock()
	built := s.full.built
	s.full.mu.Unlock()
	if now := time.Now(); now.Before(hold) || built != 2 {
		t.Fatalf("the builds were done %v after the hold's end, %d built; want after it, 2", now.Sub(hold), built)
	}
}
