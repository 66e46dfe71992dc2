package memory

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/recallbot/recall/memory/internal/fts"
	"github.com/recallbot/recall/pipeline"
)

// TestSearchTopMatchesReference: top's merge of the postings (a heap of
// the phrases' heads, the active messages looked up only from the oldest
// one on) ranks exactly as the merge it replaced (topReference, kept here
// verbatim): same messages, same order, bit-identical scores, for queries
// of 1 to 30 words, pruned and exact, archived only or not, in a time range,
// with exclusions.
func TestSearchTopMatchesReference(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compares searches with a reference ranking (8 s on a busy 2-core machine); go test without -short runs it")
	}
	f := newSearchFixture(t)
	var vocab []string
	seen := map[string]bool{}
	for i := range f.ids {
		for _, s := range f.text[i] {
			if !seen[s] && queryable(s) {
				seen[s] = true
				vocab = append(vocab, s)
			}
		}
	}
	slices.Sort(vocab)
	vocab = append(vocab, "ana", "rui", "kenji sato", `"travel through"`)
	compared := 0
	f.s.searchTrace = func(r *searchRun) {
		// The search's own read transaction, its phrases read: rank them
		// both ways.
		q := r.q
		got, err := r.top()
		if err != nil {
			t.Fatal(err)
		}
		r.q = q
		want, err := r.topReference()
		if err != nil {
			t.Fatal(err)
		}
		if !sameHits(got, want) {
			t.Errorf("%q %+v:\n top       %s\n reference %s", q.Text, q, hitList(got), hitList(want))
		}
		if len(want) > 0 {
			compared++
		}
	}
	defer func() { f.s.searchTrace = nil }()
	r := rand.New(rand.NewPCG(21, 21))
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 150 {
		var w []string
		for range 1 + r.IntN(30) {
			w = append(w, vocab[r.IntN(len(vocab))])
		}
		q := Query{Text: strings.Join(w, " "), Limit: []int{5, 20, 60}[i%3], ArchivedOnly: i%2 == 0}
		if i%5 == 0 {
			q.From, q.To = t0.Add(time.Duration(r.IntN(3000))*time.Second), t0.Add(time.Duration(3000+r.IntN(3000))*time.Second)
		}
		if i%7 == 0 {
			q.Exclude = []int64{f.ids[r.IntN(len(f.ids))], f.ids[len(f.ids)-1]}
		}
		for _, key := range []pipeline.Key{f.mid, f.small} {
			for _, tune := range []searchTuning{testTuning, exactSearchTuning} {
				f.search(t, key, tune, q)
			}
		}
	}
	if compared < 250 {
		t.Fatalf("only %d searches with hits compared: the test checks little", compared)
	}
}

// topReference is top before the heap merge (commit 99146ed).
func (r *searchRun) topReference() ([]Hit, error) {
	limit := r.q.Limit
	if limit <= 0 {
		limit = 20
	}
	want := limit + len(r.q.Exclude)
	// A time range: the messages' ids in it bound the candidates (their
	// times are checked when they are read).
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if r.q.timed() {
		from, to := int64(math.MinInt64), int64(math.MaxInt64)
		if !r.q.From.IsZero() {
			from = r.q.From.UnixMilli()
		}
		if !r.q.To.IsZero() {
			to = r.q.To.UnixMilli()
		}
		found := false
		if err := r.each(sqlTimeIDsScan, func(st *sqlite3.Stmt) bool {
			if st.ColumnType(0) != sqlite3.NULL {
				lo, hi, found = st.ColumnInt64(0), st.ColumnInt64(1), true
			}
			return true
		}, r.conv, from, to); err != nil {
			return nil, err
		}
		if !found {
			return nil, nil
		}
	}
	var active map[int64]bool
	activeKnown := !r.q.ArchivedOnly
	if r.q.ArchivedOnly {
		ids, err := r.activeIDs()
		if err != nil {
			return nil, err
		}
		if ids != nil {
			active, activeKnown = ids, true
		}
	}
	type scored struct {
		id    int64
		score float64
	}
	better := func(a, b scored) int {
		switch {
		case beats(a.score, a.id, b.score, b.id):
			return -1
		case beats(b.score, b.id, a.score, a.id):
			return 1
		}
		return 0
	}
	// Merge the postings, newest first, keeping the best want (all of them
	// when whether a message is active is only known once it is read).
	var best []scored
	keep := func(c scored) {
		switch {
		case !activeKnown:
			best = append(best, c) // sorted below
		case len(best) < want || better(c, best[want-1]) < 0:
			i, _ := slices.BinarySearchFunc(best, c, better)
			best = slices.Insert(best, i, c)
			if len(best) > want {
				best = best[:want]
			}
		}
	}
	for _, p := range r.ph {
		if p.postsAt >= 0 {
			p.list = r.posts[p.postsAt : p.postsAt+len(p.list)]
		}
	}
	n := len(r.ph)
	heads := make([]int, n)
	f := make([]float64, n)
	for {
		found := false
		var rowid int64
		for pi, p := range r.ph {
			if h := heads[pi]; h < len(p.list) && (!found || p.list[h].rowid > rowid) {
				rowid, found = p.list[h].rowid, true
			}
		}
		if !found {
			break
		}
		for pi, p := range r.ph {
			f[pi] = 0
			if h := heads[pi]; h < len(p.list) && p.list[h].rowid == rowid {
				f[pi] = p.list[h].f
				heads[pi]++
			}
		}
		r.candidates++
		id := ftsRowidID(rowid)
		if active[id] || id < lo || id > hi {
			continue
		}
		D := float64(ftsRowidLen(rowid))
		score := 0.0
		for _, pi := range r.slot {
			if pi >= 0 {
				score += fts.TermScore(r.ph[pi].idf, f[pi], D, r.avgdl)
			}
		}
		keep(scored{id, score})
	}
	if !activeKnown {
		slices.SortFunc(best, better)
	}
	hits := make([]Hit, 0, min(want, len(best)))
	for len(best) > 0 && len(hits) < want {
		// Read the next ones in one statement.
		batch := best[:min(len(best), want-len(hits))]
		best = best[len(batch):]
		ids := make([]int64, len(batch))
		for i, c := range batch {
			ids[i] = c.id
		}
		msgs, err := r.fetch(ids)
		if err != nil {
			return nil, err
		}
		for _, c := range batch {
			if m, ok := msgs[c.id]; ok && !(m.Active && !activeKnown) && r.q.inTime(m.Time) {
				hits = append(hits, Hit{Message: *m, Score: c.score})
			}
		}
	}
	return hits, nil
}
