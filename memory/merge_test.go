package memory

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/recallbot/recall/bench/chattext"
	"github.com/recallbot/recall/pipeline"
)

// segments counts the search index's segments.
func segments(t *testing.T, s *SQLite) int {
	t.Helper()
	var n int
	if err := s.r.QueryRowContext(t.Context(), `SELECT count(DISTINCT segid) FROM messages_fts_idx`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// mergeStore is a store written one turn per commit, as a bot writes it
// (and not merged meanwhile): its index has many segments. Then the merger
// waits for idle and busy.
func mergeStore(t *testing.T, idle, busy time.Duration) *SQLite {
	t.Helper()
	s, err := OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.mrg.idle.Store(int64(time.Hour))
	s.mrg.busy.Store(int64(time.Hour))
	for i := range 90 {
		appendTurns(t, s, i, 1)
	}
	if n := segments(t, s); n <= 4 {
		t.Fatalf("%d segments after 90 commits: the test needs more", n)
	}
	s.mrg.idle.Store(int64(idle))
	s.mrg.busy.Store(int64(busy))
	return s
}

// waitMerged waits until the merger has merged the index down to at most
// most segments: the segments are there and the merger has counted its
// steps (it counts a step just after the step commits, so a reader may see
// the merged index a moment before the count).
func waitMerged(t *testing.T, s *SQLite, most int) {
	t.Helper()
	merged := func() bool { return segments(t, s) <= most && s.mrg.steps.Load() > 0 }
	for deadline := time.Now().Add(20 * time.Second); !merged(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d segments after 20 s, want at most %d, merged by the merger (%d merge steps)", segments(t, s), most, s.mrg.steps.Load())
		}
	}
}

func searchIDs(t *testing.T, s *SQLite, text string) []int64 {
	t.Helper()
	hits, err := s.Search(t.Context(), pipeline.Key{Channel: "telegram", Chat: "1"}, Query{Text: text, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, h := range hits {
		ids = append(ids, h.Message.ID)
	}
	return ids
}

// TestIndexMergerWhenIdle: once the store is idle the index is merged down
// to a few segments, and searches find exactly what they found before.
func TestIndexMergerWhenIdle(t *testing.T) {
	s := mergeStore(t, 300*time.Millisecond, time.Hour)
	before := segments(t, s)
	queries := []string{"checkpoint words", "log 17", "travel 42 through", "88"}
	var want [][]int64
	for _, q := range queries {
		want = append(want, searchIDs(t, s, q))
	}
	if len(want[1]) == 0 {
		t.Fatal("the search finds nothing: the test checks nothing")
	}
	waitMerged(t, s, 3)
	t.Logf("%d segments merged into %d in %d steps", before, segments(t, s), s.mrg.steps.Load())
	for i, q := range queries {
		if got := searchIDs(t, s, q); !slices.Equal(got, want[i]) {
			t.Errorf("search %q after merging: %v, want %v", q, got, want[i])
		}
	}
	// Written and merged again: still consistent.
	appendTurns(t, s, 1000, 1)
	if got := searchIDs(t, s, "1000"); len(got) != 1 {
		t.Errorf("a message written after the merge: found %v", got)
	}
}

// TestIndexMergerWaitsForIdle: while commits keep coming nothing is merged
// before the busy bound; past it, steps run anyway.
func TestIndexMergerWaitsForIdle(t *testing.T) {
	s := mergeStore(t, time.Hour, time.Hour)
	n := segments(t, s)
	time.Sleep(300 * time.Millisecond)
	if steps := s.mrg.steps.Load(); steps != 0 || segments(t, s) != n {
		t.Fatalf("%d merge steps, %d segments (from %d) before the store was idle", steps, segments(t, s), n)
	}

	s2 := mergeStore(t, time.Hour, 50*time.Millisecond)
	for i := 0; s2.mrg.steps.Load() == 0; i++ {
		if i == 1000 {
			t.Fatal("no merge step in 1,000 commits past the busy bound")
		}
		appendTurns(t, s2, 100+i, 1) // never idle for an hour
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMergeIndex: merging on demand leaves nothing for the merger.
func TestMergeIndex(t *testing.T) {
	s := mergeStore(t, time.Hour, time.Hour)
	steps, err := s.MergeIndex(t.Context())
	if err != nil || steps == 0 {
		t.Fatalf("MergeIndex: %d steps, %v", steps, err)
	}
	if n := segments(t, s); n > 3 {
		t.Errorf("%d segments after MergeIndex", n)
	}
	if steps, err := s.MergeIndex(t.Context()); err != nil || steps != 0 {
		t.Errorf("MergeIndex again: %d steps, %v; want nothing left", steps, err)
	}
}

// BenchmarkSearchMergedIndex compares searches of one conversation of
// 20,000 messages written a turn per commit, as the bot writes them, in its
// index as the commits left it and after MergeIndex (what the merger does
// when the store is idle): the same 300 queries, interleaved.
//
//	go test -run='^$' -bench=SearchMergedIndex -benchtime=1x ./memory/
func BenchmarkSearchMergedIndex(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	key := pipeline.Key{Channel: "telegram", Chat: "7"}
	people := []string{"João", "Sofia", "Rui", "Helena", "Kenji"}
	path := filepath.Join(dir, "recall.db")
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	s.mrg.idle.Store(int64(time.Hour))
	s.mrg.busy.Store(int64(time.Hour))
	g := chattext.NewWords(5)
	start := time.Now().Add(-365 * 24 * time.Hour)
	const turns = 50_000
	for i := range turns {
		at := start.Add(time.Duration(i) * time.Minute)
		msgs := []Message{
			{Key: key, Role: RoleUser, SenderID: "7", SenderName: "Ana", PlatformID: strconv.Itoa(i), Text: g.Text(g.Between(3, 30), people), Time: at, Tokens: 20},
			{Key: key, Role: RoleAssistant, ReplyTo: strconv.Itoa(i), Text: g.Text(g.Between(12, 80), people), Time: at, Tokens: 60},
		}
		if _, err := s.Append(ctx, msgs); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Checkpoint(ctx); err != nil {
		b.Fatal(err)
	}
	s.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	mpath := filepath.Join(dir, "merged.db")
	if err := os.WriteFile(mpath, data, 0o600); err != nil {
		b.Fatal(err)
	}
	open := func(p string) *SQLite {
		s, err := OpenSQLite(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		s.mrg.idle.Store(int64(time.Hour)) // as written: no merging
		s.mrg.busy.Store(int64(time.Hour))
		b.Cleanup(func() { s.Close() })
		return s
	}
	plain, merged := open(path), open(mpath)
	t0 := time.Now()
	steps, err := merged.MergeIndex(ctx)
	if err != nil {
		b.Fatal(err)
	}
	took := time.Since(t0)
	segs := func(s *SQLite) (n int) {
		if err := s.r.QueryRowContext(ctx, `SELECT count(DISTINCT segid) FROM messages_fts_idx`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	queries := chattext.NewWords(9)
	var asWritten, asMerged []time.Duration
	b.ResetTimer()
	for range b.N {
		for i := range 300 {
			q := Query{Text: queries.Text(queries.Between(3, 30), people), Limit: 20, TokenBudget: 1500}
			pair := []*SQLite{plain, merged}
			if i%2 == 1 {
				pair[0], pair[1] = merged, plain
			}
			var got [2][]Hit
			for j, s := range pair {
				t := time.Now()
				hits, err := s.Search(ctx, key, q)
				d := time.Since(t)
				if err != nil {
					b.Fatal(err)
				}
				got[j] = hits
				if s == plain {
					asWritten = append(asWritten, d)
				} else {
					asMerged = append(asMerged, d)
				}
			}
			if len(got[0]) != len(got[1]) {
				b.Fatalf("query %q: %d hits as written, %d merged", q.Text, len(got[0]), len(got[1]))
			}
		}
	}
	b.StopTimer()
	pct := func(ds []time.Duration, p float64) float64 {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(segs(plain)), "segments_as_written")
	b.ReportMetric(float64(segs(merged)), "segments_merged")
	b.ReportMetric(pct(asWritten, 0.5), "p50_ms_as_written")
	b.ReportMetric(pct(asMerged, 0.5), "p50_ms_merged")
	b.ReportMetric(pct(asWritten, 0.99), "p99_ms_as_written")
	b.ReportMetric(pct(asMerged, 0.99), "p99_ms_merged")
	b.ReportMetric(pct(asWritten, 0.5)/pct(asMerged, 0.5), "p50_ratio")
	b.Logf("%d turns a commit each: %d segments; MergeIndex: %d steps in %s, %d segments", turns, segs(plain), steps, took.Round(time.Millisecond), segs(merged))
}

// TestIndexSegmentsWhileBusy: a store that commits a turn after another,
// never idle long enough for the merger, keeps its index in few segments
// (FTS5's crisismerge, mergeCrisis): every term a search looks up is sought
// in each of them. With FTS5's default (16) the one-commit segments piled up
// to 15 before they were merged.
func TestIndexSegmentsWhileBusy(t *testing.T) {
	s, err := OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.mrg.idle.Store(int64(time.Hour)) // never idle: only the commits merge
	s.mrg.busy.Store(int64(time.Hour))
	most, sum := 0, 0
	const turns = 120
	for i := range turns {
		appendTurns(t, s, i, 1)
		n := segments(t, s)
		most, sum = max(most, n), sum+n
	}
	t.Logf("after each of %d commits: at most %d segments, %.1f on average", turns, most, float64(sum)/turns)
	if avg := float64(sum) / turns; most > 10 || avg > 6 {
		t.Errorf("up to %d segments while busy, %.1f on average; want at most 10, 6 on average (FTS5's default crisismerge: 18, 9.2)", most, avg)
	}
	// Reopened, the setting is kept and not written again.
	if err := configureIndexMerging(t.Context(), s.w); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := s.r.QueryRowContext(t.Context(), `SELECT v FROM messages_fts_config WHERE k = 'crisismerge'`).Scan(&v); err != nil || v != mergeCrisis {
		t.Errorf("crisismerge %d, %v; want %d", v, err, mergeCrisis)
	}
}
