package memory

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/memory/internal/fts"
	"github.com/recallbot/recall/pipeline"
)

// searchFixture is a store with a mid-size conversation (3,000 messages, the
// first fxArchived archived), a small one (600) and a third that shares their
// words, with Go's own view of the big conversation's terms.
const fxArchived = 2880

type searchFixture struct {
	s          *SQLite
	mid, small pipeline.Key
	// per message of mid, in id order: its id and stems by column
	ids          []int64
	text, sender [][]string
}

func newSearchFixture(t *testing.T) *searchFixture {
	t.Helper()
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f := &searchFixture{s: s, mid: cfKey("telegram", "3000"), small: cfKey("telegram", "600")}
	g := newBenchText(5)
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	people := []string{"Ana", "Rui", "Kenji Sato"}
	var msgs []Message
	add := func(key pipeline.Key, n int) {
		for i := 0; i < n; i++ {
			m := Message{Key: key, Role: RoleAssistant, PlatformID: strconv.Itoa(len(msgs)), Time: t0.Add(time.Duration(len(msgs)) * time.Second)}
			if i%2 == 0 {
				m.Role, m.SenderName, m.SenderID = RoleUser, people[i/2%len(people)], strconv.Itoa(i/2%len(people))
			}
			m.Text = g.message(m.Role, people)
			msgs = append(msgs, m)
		}
	}
	add(f.mid, 3000)
	add(f.small, 600)
	add(cfKey("telegram", "other"), 1500)
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	for off := 0; off < len(msgs); off += 500 {
		if _, err := s.Append(ctx, msgs[off:min(off+500, len(msgs))]); err != nil {
			t.Fatal(err)
		}
	}
	act, err := s.Active(ctx, f.mid)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < fxArchived; off += 40 {
		if _, err := s.Archive(ctx, f.mid, ids(act[off:off+40]), Summary{Text: "chunk"}, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range act {
		f.ids = append(f.ids, m.ID)
		f.text = append(f.text, fts.Tokens(m.Text))
		f.sender = append(f.sender, fts.Tokens(m.SenderName))
	}
	return f
}

// df is how many of mid's messages contain stem, in text or name, and in
// each.
func (f *searchFixture) df(stem string) (all, text, sender int) {
	for i := range f.ids {
		a, b := slices.Contains(f.text[i], stem), slices.Contains(f.sender[i], stem)
		if a || b {
			all++
		}
		if a {
			text++
		}
		if b {
			sender++
		}
	}
	return
}

func (f *searchFixture) search(t *testing.T, key pipeline.Key, tune searchTuning, q Query) []Hit {
	t.Helper()
	f.s.tune = &tune
	defer func() { f.s.tune = nil }()
	hits, err := f.s.Search(context.Background(), key, q)
	if err != nil {
		t.Fatalf("Search(%q): %v", q.Text, err)
	}
	return hits
}

func sameHits(a, b []Hit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Message.ID != b[i].Message.ID || a[i].Score != b[i].Score {
			return false
		}
	}
	return true
}

func hitList(h []Hit) string {
	var b strings.Builder
	for _, x := range h {
		fmt.Fprintf(&b, "%d:%.6f ", x.Message.ID, x.Score)
	}
	return b.String()
}

// testTuning scales the default thresholds down to the fixture.
var testTuning = searchTuning{exactUpTo: 1000, commonDF: 150, budget: 300, window: 200, denseFactor: 3}

// TestSearchPruningMatchesExact: below the pruning thresholds the pruned
// search returns exactly the full BM25 ranking (same messages, same order,
// same scores): in a conversation of at most exactUpTo messages whatever the
// query, and in a bigger one for queries of rare terms.
func TestSearchPruningMatchesExact(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compares pruned and exact searches (5 s on a busy 2-core machine); go test without -short runs it")
	}
	f := newSearchFixture(t)
	stems := map[string]bool{}
	for i := range f.ids {
		for _, s := range f.text[i] {
			stems[s] = true
		}
	}
	var rare, any []string
	for s := range stems {
		if !queryable(s) {
			continue
		}
		any = append(any, s)
		if n, _, _ := f.df(s); n >= 3 && n <= 50 {
			rare = append(rare, s)
		}
	}
	sort.Strings(rare)
	sort.Strings(any)
	if len(rare) < 40 {
		t.Fatalf("only %d rare stems", len(rare))
	}
	r := rand.New(rand.NewPCG(9, 9))
	queries := func(from []string, n int) []string {
		var out []string
		for range n {
			k := 1 + r.IntN(4)
			var w []string
			for range k {
				w = append(w, from[r.IntN(len(from))])
			}
			out = append(out, strings.Join(w, " "))
		}
		return out
	}
	variants := func(text string, exactTop []Hit) []Query {
		qs := []Query{{Text: text}, {Text: text, Limit: 7, TokenBudget: 200}, {Text: text, ArchivedOnly: true, Limit: 10}}
		if len(exactTop) > 2 {
			qs = append(qs, Query{Text: text, Limit: 5, Exclude: []int64{exactTop[0].Message.ID, exactTop[2].Message.ID}})
		}
		return qs
	}
	check := func(key pipeline.Key, texts []string) {
		for _, text := range texts {
			top := f.search(t, key, exactSearchTuning, Query{Text: text})
			for _, q := range variants(text, top) {
				want := f.search(t, key, exactSearchTuning, q)
				got := f.search(t, key, testTuning, q)
				if !sameHits(got, want) {
					t.Errorf("%s %+v:\n pruned %s\n exact  %s", key, q, hitList(got), hitList(want))
				}
			}
		}
	}
	// Rare terms in the mid-size conversation (above exactUpTo).
	check(f.mid, queries(rare, 60))
	// Anything in the small conversation: it is below exactUpTo.
	check(f.small, queries(any, 40))
	check(f.small, []string{"ana", "rui kenji", "sato ana time"})
}

// queryable: a stem that a query for it searches for as itself.
func queryable(s string) bool {
	terms := Terms(s)
	return len(terms) == 1 && terms[0] == s && slices.Equal(fts.Tokens(s), []string{s})
}

// TestSearchPruningSemantics: with common terms, the pruned search returns
// the BM25 ranking of the truncated index exactly as Search documents it,
// recomputed here from the conversation's tokens (the rules are spelled out
// on SQLite.Search).
func TestSearchPruningSemantics(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: many searches pruned and exact (11 s on a busy 2-core machine); go test without -short runs it")
	}
	f := newSearchFixture(t)
	tune := testTuning
	N := len(f.ids)
	total := 0
	for i := range f.ids {
		total += len(f.text[i]) + len(f.sender[i])
	}
	avgdl := float64(total) / float64(N)
	archived := map[int64]bool{}
	for _, id := range f.ids[:fxArchived] {
		archived[id] = true
	}
	count := func(toks []string, s string) (n int) {
		for _, t := range toks {
			if t == s {
				n++
			}
		}
		return n
	}
	// Stems by frequency.
	docs := map[string]int{}
	for i := range f.ids {
		seen := map[string]bool{}
		for _, s := range append(slices.Clone(f.text[i]), f.sender[i]...) {
			if !seen[s] {
				seen[s] = true
				docs[s]++
			}
		}
	}
	var common, mid, rare []string
	for s, n := range docs {
		switch {
		case !queryable(s):
		case n > 200:
			common = append(common, s)
		case n > 80 && n <= 150:
			mid = append(mid, s)
		case n >= 3 && n <= 60:
			rare = append(rare, s)
		}
	}
	sort.Strings(common)
	sort.Strings(mid)
	sort.Strings(rare)
	if len(common) < 5 || len(mid) < 8 || len(rare) < 20 {
		t.Fatalf("%d common, %d mid, %d rare stems", len(common), len(mid), len(rare))
	}
	r := rand.New(rand.NewPCG(4, 2))
	pruned := 0
	for qi := 0; qi < 100; qi++ {
		var words []string
		for range r.IntN(3) {
			words = append(words, common[r.IntN(len(common))])
		}
		for range r.IntN(4) {
			words = append(words, mid[r.IntN(len(mid))])
		}
		if qi%4 != 0 {
			for range 1 + r.IntN(2) {
				words = append(words, rare[r.IntN(len(rare))])
			}
		}
		if len(words) == 0 {
			continue
		}
		r.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
		text := strings.Join(words, " ")
		// The phrases, in query order, each once.
		var stems []string
		slot := map[string]int{}
		var slots []int
		for _, w := range Terms(text) {
			s := fts.Tokens(w)[0]
			if _, ok := slot[s]; !ok {
				slot[s] = len(stems)
				stems = append(stems, s)
			}
			slots = append(slots, slot[s])
		}
		// Classify, truncate, estimate.
		tf := make([][]float64, len(stems)) // per stem, per message
		idf := make([]float64, len(stems))
		used := 0
		anyCommon := false
		for si, s := range stems {
			tf[si] = make([]float64, N)
			textRows, rest, df := 0, 0, 0
			for i := range f.ids {
				nt, ns := count(f.text[i], s), count(f.sender[i], s)
				tf[si][i] = float64(nt) + 0.5*float64(ns)
				if nt > 0 {
					textRows++
				}
				if nt > 1 || ns > 0 {
					rest++ // an entry of the other doclist
				}
				if nt+ns > 0 {
					df++
				}
			}
			limit := max(0, min(tune.commonDF, tune.budget-used))
			// The window: the newest tune.window archived messages
			// and every message as new (here: the active ones).
			W := N - (fxArchived - tune.window)
			var textIdx []int // messages with the stem in the text, newest first
			for i := N - 1; i >= 0; i-- {
				if count(f.text[i], s) > 0 {
					textIdx = append(textIdx, i)
				}
			}
			textInWindow := 0
			for _, i := range textIdx {
				if i >= N-W {
					textInWindow++
				}
			}
			older := textInWindow < len(textIdx)
			dense := textInWindow <= limit && older &&
				float64(textInWindow)*float64(N) > float64(tune.denseFactor*tune.commonDF)*float64(W)
			truncated := textRows > limit
			window := limit == 0 || dense || truncated && textIdx[limit] >= N-W || rest > limit
			if !window && !truncated {
				used += textRows + rest
				idf[si] = fts.IDF(float64(N), float64(df))
				continue
			}
			anyCommon = true
			// The messages the common term counts in.
			from := N - W // the window
			if !window {
				from = textIdx[limit] // its newest limit+1 text messages
			}
			inWindow := 0
			for i := range f.ids {
				if i < from {
					tf[si][i] = 0
				} else if tf[si][i] > 0 && i >= N-W {
					inWindow++
				}
			}
			idf[si] = fts.IDF(float64(N), float64(inWindow)*float64(N)/float64(W))
		}
		if anyCommon {
			pruned++
		}
		type scored struct {
			i     int
			score float64
		}
		var ranked []scored
		for i := range f.ids {
			hit := false
			for si := range stems {
				hit = hit || tf[si][i] > 0
			}
			if !hit {
				continue
			}
			D := float64(len(f.text[i]) + len(f.sender[i]))
			score := 0.0
			for _, si := range slots {
				score += fts.TermScore(idf[si], tf[si][i], D, avgdl)
			}
			ranked = append(ranked, scored{i, score})
		}
		sort.Slice(ranked, func(a, b int) bool {
			return beats(ranked[a].score, f.ids[ranked[a].i], ranked[b].score, f.ids[ranked[b].i])
		})
		for _, q := range []Query{{Text: text}, {Text: text, ArchivedOnly: true, Limit: 10}, {Text: text, Limit: 30, TokenBudget: 500}} {
			got := f.search(t, f.mid, tune, q)
			limit := q.Limit
			if limit <= 0 {
				limit = 20
			}
			var want []Hit
			for _, x := range ranked {
				id := f.ids[x.i]
				if q.ArchivedOnly && !archived[id] {
					continue
				}
				if len(want) == limit {
					break
				}
				want = append(want, Hit{Message: Message{ID: id}, Score: x.score})
			}
			// BudgetHits needs the messages' tokens: take them from the results.
			if q.TokenBudget == 0 {
				if !sameHits(got, want) {
					t.Errorf("%+v:\n pruned %s\n want   %s", q, hitList(got), hitList(want))
				}
				continue
			}
			all := f.search(t, f.mid, exactSearchTuning, Query{Text: text, Limit: math.MaxInt32})
			tokens := map[int64]int{}
			for _, h := range all {
				tokens[h.Message.ID] = h.Message.Tokens
			}
			for i := range want {
				want[i].Message.Tokens = tokens[want[i].Message.ID]
			}
			if want = BudgetHits(want, q); !sameHits(got, want) {
				t.Errorf("%+v:\n pruned %s\n want   %s", q, hitList(got), hitList(want))
			}
		}
	}
	if pruned < 50 {
		t.Errorf("only %d queries had a common term", pruned)
	}
}

// TestSearchRanksLikeJSONManyConversations: both backends rank a
// conversation with its own statistics, so they agree even when a store
// holds many conversations (TestJSONRanksLikeSQLite has one).
func TestSearchRanksLikeJSONManyConversations(t *testing.T) {
	s, j := cfOpenSQLite(t), cfOpenJSON(t)
	g := newBenchText(77)
	people := []string{"Maria", "Tomás", "Zoë"}
	var msgs []Message
	for c := range 5 {
		k := cfKey("telegram", strconv.Itoa(10+c))
		for i := range 40 + 30*c {
			m := cfUser(k, fmt.Sprint(i), g.message(RoleUser, people), cfT0.Add(time.Duration(i)*time.Second))
			m.SenderName = people[(i+c)%len(people)]
			msgs = append(msgs, m)
		}
	}
	cfAppend(t, s, msgs...)
	cfAppend(t, j, msgs...)
	qg := newBenchText(78)
	for c := range 5 {
		k := cfKey("telegram", strconv.Itoa(10+c))
		for range 30 {
			text := qg.query(people)
			for _, q := range []Query{{Text: text, Limit: 50}, {Text: text, Limit: 4, TokenBudget: 30}} {
				hs, hj := cfSearch(t, s, k, q), cfSearch(t, j, k, q)
				if len(hs) != len(hj) {
					t.Fatalf("%s %+v: SQLite %d hits, JSON %d", k, q, len(hs), len(hj))
				}
				for i := range hs {
					if hs[i].Message.PlatformID != hj[i].Message.PlatformID || hs[i].Score != hj[i].Score {
						t.Fatalf("%s %+v hit %d: SQLite %s %v, JSON %s %v", k, q, i, hs[i].Message.PlatformID, hs[i].Score, hj[i].Message.PlatformID, hj[i].Score)
					}
				}
			}
		}
	}
}

// TestSearchIndexTerms: the terms recall_fts derives, and that the index
// holds them (and nothing else) for a message.
func TestSearchIndexTerms(t *testing.T) {
	d := ftsIndexDoc(7, "Running runs, RUN! Café", "Run Café")
	if want := "c7xrun c7xrun c7xrun c7xcafe"; d.text != want {
		t.Errorf("text %q, want %q", d.text, want)
	}
	if want := "c7rrun c7rcafe"; d.sender != want {
		t.Errorf("sender %q, want %q", d.sender, want)
	}
	if want := "c7rrun c7rrun"; d.extra != want {
		t.Errorf("extra %q, want %q", d.extra, want)
	}
	if d.length != 6 {
		t.Errorf("length %d", d.length)
	}
	for _, id := range []int64{1, 12345, ftsMaxID, ftsMinID, -1} {
		for _, n := range []int{0, 5, ftsMaxLen} {
			r, err := ftsRowid(id, n)
			if err != nil || ftsRowidID(r) != id || ftsRowidLen(r) != n {
				t.Errorf("rowid(%d, %d) = %d %v", id, n, r, err)
			}
		}
	}
	if r, _ := ftsRowid(3, ftsMaxLen+10); ftsRowidLen(r) != ftsMaxLen || ftsRowidID(r) != 3 {
		t.Errorf("long message: %d", r)
	}
	if _, err := ftsRowid(ftsMaxID+1, 0); err == nil {
		t.Error("id out of range accepted")
	}

	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := cfKey("telegram", "1")
	if _, err := s.Append(ctx, []Message{{Key: k, Role: RoleUser, SenderName: "Run Café", Text: "Running runs, RUN! Café", Time: cfT0}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, `CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, messages_fts, 'instance')`); err != nil {
		t.Fatal(err)
	}
	rows, err := s.w.QueryContext(ctx, `SELECT term, col, count(*) FROM temp.terms GROUP BY term, col ORDER BY term, col`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var term, col string
		var n int
		if err := rows.Scan(&term, &col, &n); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s/%s:%d", term, col, n))
	}
	want := "c1rcafe/sender:1 c1rrun/extra:2 c1rrun/sender:1 c1xcafe/text:1 c1xrun/text:3"
	if strings.Join(got, " ") != want {
		t.Errorf("index terms %q, want %q", strings.Join(got, " "), want)
	}
	rows.Close()
	var docs, toks int64
	if err := s.r.QueryRowContext(ctx, `SELECT search_docs, search_tokens FROM conversations`).Scan(&docs, &toks); err != nil || docs != 1 || toks != 6 {
		t.Errorf("conversation statistics %d %d %v", docs, toks, err)
	}
}

// TestSearchWithinReadsTheIndexOnce: SearchWithin returns what Search
// returns for the timed query and for the same query over all time (same
// messages, same scores, same order), pruned or exact, and reads the
// index's doclists once for both: as many lookups as the timed search alone.
func TestSearchWithinReadsTheIndexOnce(t *testing.T) {
	f := newSearchFixture(t)
	ctx := context.Background()
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	var lookups int
	f.s.searchTrace = func(r *searchRun) { lookups += r.traceLookups }
	defer func() { f.s.searchTrace = nil }()
	for _, tune := range []searchTuning{exactSearchTuning, testTuning} {
		f.s.tune = &tune
		for _, text := range []string{"Ana flat rent", "the weather was", "kenji marathon training"} {
			for _, span := range [][2]time.Duration{{0, 30 * time.Minute}, {time.Hour, 90 * time.Minute}, {0, 0}} {
				q := Query{Text: text, Limit: 15, Exclude: f.ids[len(f.ids)-3:], From: t0.Add(span[0]), To: t0.Add(span[1])}
				lookups = 0
				want, err := f.s.Search(ctx, f.mid, q)
				if err != nil {
					t.Fatal(err)
				}
				one := lookups
				all := q
				all.From, all.To = time.Time{}, time.Time{}
				wantAll, err := f.s.Search(ctx, f.mid, all)
				if err != nil {
					t.Fatal(err)
				}
				lookups = 0
				got, gotAll, err := f.s.SearchWithin(ctx, f.mid, q)
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("%q %v (exact %v)", text, span, tune == exactSearchTuning)
				if !sameHits(got, want) {
					t.Errorf("%s: within\n%s\nwant\n%s", name, hitList(got), hitList(want))
				}
				if !sameHits(gotAll, wantAll) || len(wantAll) == 0 {
					t.Errorf("%s: all\n%s\nwant\n%s", name, hitList(gotAll), hitList(wantAll))
				}
				if lookups > one+1 { // + the time range's ids, read once more
					t.Errorf("%s: SearchWithin made %d lookups; the timed search alone %d", name, lookups, one)
				}
			}
		}
	}
}
