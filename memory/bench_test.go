package memory_test

// Benchmarks of the store, on the code the bench program (go run ./bench)
// runs: package figures measures, builds and caches the fixtures, and holds
// seed 002's LIKE search. Every comparison is measured side by side in one
// run and reported with b.ReportMetric; nothing here asserts on time.
//
//	go test -run='^$' -bench=Ingest -benchtime=3x ./memory/
//	go test -run='^$' -bench=SearchArchive -benchtime=1x ./memory/   # builds the 1M fixture once
//	go test -run='^$' -bench=RecentWindow -benchtime=2s ./memory/
//	go test -run='^$' -bench=RetrievalQuality -benchtime=1x ./memory/
//	go test -run='^$' -bench=SearchMergedIndex -benchtime=1x ./memory/  # merge.go; ~30 s
//
// BenchmarkSearchArchive and BenchmarkRecentWindow need the 1M-message
// fixture (figures.Archive1M, cached in $TMPDIR/recall-bench-1m-v2); they
// skip unless the -bench pattern contains "Archive" or "Recent", so
// -bench=. never starts the build.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/bench/chattext"
	"github.com/recallbot/recall/bench/figures"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// requireSelected skips a benchmark that needs the 1M fixture unless the
// -bench pattern names it, so -bench=. does not start a minutes-long build.
func requireSelected(b *testing.B, word string) {
	b.Helper()
	f := flag.Lookup("test.bench")
	if f == nil || !strings.Contains(f.Value.String(), word) {
		b.Skipf("needs the 1M-message fixture: select it explicitly, e.g. -bench=%s", word)
	}
}

// BenchmarkIngest compares the write-behind writer with raw batched INSERTs
// of the same 20,000 messages (50 conversations) into fresh databases, every
// way in every iteration, rotating which goes first: see figures.Ingest.
func BenchmarkIngest(b *testing.B) {
	const convs, perSide = 50, 20_000
	msgs := figures.IngestRows(convs, perSide)
	res, err := figures.Ingest(context.Background(), b.TempDir(), msgs, b.N)
	if err != nil {
		b.Fatal(err)
	}
	w, r, rb := res.Rate(res.Writer, b.N), res.Rate(res.Raw, b.N), res.Rate(res.Batch, b.N)
	b.ReportMetric(w, "writer_msgs/s")
	b.ReportMetric(r, "raw_msgs/s")
	b.ReportMetric(rb, "raw_batch_msgs/s")
	b.ReportMetric(w/r, "ratio")
	b.ReportMetric(w/rb, "ratio_vs_batch")
	b.Logf("ingest of %d msgs × %d: writer %.0f msgs/s; raw row-by-row INSERT %.0f msgs/s (ratio %.2f); raw one-statement batches %.0f msgs/s (ratio %.2f); target ≥ 0.8",
		perSide, b.N, w, r, w/r, rb, w/rb)
}

// openFixture opens the cached 1M-message store.
func openFixture(b *testing.B) *memory.Store {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	dir, err := figures.ArchiveFixture(context.Background(), figures.Archive1M, os.Stderr)
	if err != nil {
		b.Fatal(err)
	}
	st, err := memory.Open(context.Background(), memory.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close(context.Background()) })
	return st
}

// BenchmarkSearchArchive compares our archive search (SQLite.Search) with
// stock FTS5 and seed 002's LIKE scan on the 100,000 archived messages of the big
// conversation of the 1M fixture: 500 queries, each run by both, alternating
// which goes first (figures.SearchArchive). Limit 20, token budget 1,500.
func BenchmarkSearchArchive(b *testing.B) {
	requireSelected(b, "Archive")
	st := openFixture(b)
	ctx := context.Background()
	queries := figures.SearchQueries(500)
	if plan, err := memory.SearchPlans(ctx, st.SQLite(), figures.BigKey, queries[0]); err != nil {
		b.Fatal(err)
	} else {
		b.Logf("query plans of SQLite.Search (per term): %s", plan)
	}
	stock, err := figures.StockIndex(ctx, filepath.Dir(st.SQLite().Path()), figures.Archive1M.Name+"-stockfts", os.Stderr)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	res, err := figures.SearchArchive(ctx, st, stock, figures.BigKey, queries, b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	od, ld := figures.Durations(res.Ours), figures.Durations(res.Like)
	ms, pct := figures.MS, figures.Pct
	o50, o99, l50, l99 := pct(od, 0.5), pct(od, 0.99), pct(ld, 0.5), pct(ld, 0.99)
	b.ReportMetric(ms(o50), "ours_p50_ms")
	b.ReportMetric(ms(o99), "ours_p99_ms")
	b.ReportMetric(ms(l50), "like_p50_ms")
	b.ReportMetric(ms(l99), "like_p99_ms")
	b.ReportMetric(float64(l99)/float64(o99), "p99_speedup")
	xd := figures.Durations(res.Exact)
	x50, x99 := pct(xd, 0.5), pct(xd, 0.99)
	b.ReportMetric(ms(x50), "exact_p50_ms")
	b.ReportMetric(ms(x99), "exact_p99_ms")
	b.Logf("with pruning off: p50 %.2f ms p99 %.2f ms max %.1f ms (%.1f hits/query)", ms(x50), ms(x99), ms(slices.Max(xd)), figures.MeanHits(res.Exact))
	sd := figures.Durations(res.Stock)
	s50, s99 := pct(sd, 0.5), pct(sd, 0.99)
	b.ReportMetric(ms(s50), "stock_p50_ms")
	b.ReportMetric(ms(s99), "stock_p99_ms")
	b.Logf("stock FTS5 bm25() + conversation join: p50 %.2f ms p99 %.2f ms max %.1f ms (%.1f hits/query; %.0f%% of ours' hits)", ms(s50), ms(s99), ms(slices.Max(sd)), figures.MeanHits(res.Stock), 100*res.Overlap)
	b.Logf("archive search, %d queries × %d on %d archived msgs (1M store): ours p50 %.2f ms p99 %.2f ms max %.1f ms (%.1f hits/query); LIKE p50 %.1f ms p99 %.1f ms (%.1f hits/query); p99 speedup %.0f×",
		len(queries), b.N, figures.Archive1M.BigArchived, ms(o50), ms(o99), ms(slices.Max(od)), figures.MeanHits(res.Ours), ms(l50), ms(l99), figures.MeanHits(res.Like), float64(l99)/float64(o99))
	slow := slices.Clone(res.Ours)
	slices.SortFunc(slow, func(a, b figures.SearchSample) int { return int(b.Took - a.Took) })
	for _, s := range slow[:min(5, len(slow))] {
		q := queries[s.Query]
		if len(q) > 60 {
			q = q[:60] + fmt.Sprintf("… (%d bytes)", len(queries[s.Query]))
		}
		b.Logf("  slow (ours): %.1f ms, %d terms, %d hits: %q", ms(s.Took), len(memory.Terms(queries[s.Query])), s.Hits, q)
	}
}

// BenchmarkRecentWindow measures Store.Recent(key, 8, 3000) — the context
// window of every turn — on the big conversation and on a small one.
func BenchmarkRecentWindow(b *testing.B) {
	requireSelected(b, "Recent")
	st := openFixture(b)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		key  pipeline.Key
	}{{"big", figures.BigKey}, {"small", figures.SmallKey}} {
		b.Run(c.name, func(b *testing.B) {
			for range 20 { // warm up
				if _, err := st.Recent(ctx, c.key, 8, 3000); err != nil {
					b.Fatal(err)
				}
			}
			d := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t := time.Now()
				msgs, err := st.Recent(ctx, c.key, 8, 3000)
				d = append(d, time.Since(t))
				if err != nil || len(msgs) == 0 {
					b.Fatalf("Recent: %d messages, %v", len(msgs), err)
				}
			}
			b.StopTimer()
			us, pct := figures.US, figures.Pct
			b.ReportMetric(us(pct(d, 0.5)), "p50_us")
			b.ReportMetric(us(pct(d, 0.99)), "p99_us")
			b.Logf("Recent(%s, 8, 3000) over %d calls: p50 %.0f µs, p99 %.0f µs", c.key, len(d), us(pct(d, 0.5)), us(pct(d, 0.99)))
		})
	}
}

// BenchmarkRetrievalQuality measures recall on a 3,200-turn conversation
// between Maria and Tomás with 50 planted facts, all archived: for each fact,
// a paraphrased question; a hit is the planted turn among the snippets that
// fit a 1,500-token budget. Ours (SQLite.Search) vs the LIKE scan.
func BenchmarkRetrievalQuality(b *testing.B) {
	ctx := context.Background()
	b.StopTimer()
	s, err := memory.OpenSQLite(ctx, filepath.Join(b.TempDir(), "recall.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	like, err := figures.OpenReader(s.Path())
	if err != nil {
		b.Fatal(err)
	}
	defer like.Close()
	msgs, planted := qualityConversation(3200)
	if _, err := s.Append(ctx, msgs); err != nil {
		b.Fatal(err)
	}
	act, err := s.Active(ctx, qualityKey)
	if err != nil {
		b.Fatal(err)
	}
	if len(act) != len(msgs) {
		b.Fatalf("stored %d of %d messages", len(act), len(msgs))
	}
	for off := 0; off < len(act); off += figures.ChunkSize {
		chunk := act[off:min(off+figures.ChunkSize, len(act))]
		if _, err := s.Archive(ctx, qualityKey, ids(chunk), memory.Summary{Text: "They chatted."}, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.StartTimer()
	var oursFound, likeFound int
	var oursMissed, likeMissed []int
	for i := 0; i < b.N; i++ {
		oursFound, likeFound, oursMissed, likeMissed = 0, 0, nil, nil
		for f, fact := range benchFacts {
			q := memory.Query{Text: fact.Question, ArchivedOnly: true, TokenBudget: 1500, Limit: 50}
			want := act[planted[f]].ID
			oh, err := s.Search(ctx, qualityKey, q)
			if err != nil {
				b.Fatal(err)
			}
			lh, err := figures.LikeSearch(ctx, like, qualityKey, q)
			if err != nil {
				b.Fatal(err)
			}
			if hasID(oh, want) {
				oursFound++
			} else {
				oursMissed = append(oursMissed, f+1)
			}
			if hasID(lh, want) {
				likeFound++
			} else {
				likeMissed = append(likeMissed, f+1)
			}
		}
	}
	n := float64(len(benchFacts))
	b.ReportMetric(float64(oursFound)/n, "ours_recall")
	b.ReportMetric(float64(likeFound)/n, "like_recall")
	b.Logf("retrieval quality, %d questions over %d archived turns (budget 1,500 tokens): ours %d/%d (%.2f), LIKE %d/%d (%.2f); ours missed facts %v; LIKE missed %v",
		len(benchFacts), len(msgs), oursFound, len(benchFacts), float64(oursFound)/n, likeFound, len(benchFacts), float64(likeFound)/n, oursMissed, likeMissed)
}

func hasID(hits []memory.Hit, id int64) bool {
	for _, h := range hits {
		if h.Message.ID == id {
			return true
		}
	}
	return false
}

func ids(msgs []memory.Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// BenchmarkSearchTurnArchive is the archive search of a turn in the big
// conversation of the turn fixture (figures.TurnFixture: 100,000 archived
// messages, built once into $TMPDIR/recall-bench-turn-v2), as a turn runs
// it: the user's message and the reply are written first (each commit
// drops the readers' page caches), a summary archives 20 messages every 10
// turns, and the search excludes the prompt's newest messages. Messages of
// 4 and of 30 words (the shortest and longest of the turn figure). Per search:
// statements run on the index (stmts), the rows they returned, pages read
// from the database file (page_reads), the index's segments (each term is
// sought in every one), the time (ns/op includes the append;
// search_ms not) and the CPU time of the process (search_cpu_ms: less moved
// by a busy machine). Then the messages two steps around the hits are read,
// as the snippets do (AroundReach: around_ms, around_cpu_ms). With
// cache=memory, the conversation's index in memory is read (the default);
// with cache=true, the postings cache instead (WithoutFullIndexes); with
// cache=false, every doclist is read from the index (WithoutPostingsCache),
// as before the postings cache; with cache=full, the postings cache holds its whole
// budget before the first search measured (a bot that has answered a few
// hundred turns of the conversation: each search then drops what it adds),
// cache_MiB is what it holds at the end.
//
//	go test -run='^$' -bench=SearchTurnArchive -benchtime=200x ./memory/
func BenchmarkSearchTurnArchive(b *testing.B) {
	ctx := context.Background()
	s := openTurnFixture(b, "recall")
	key := pipeline.Key{Channel: "telegram", Chat: "424242"} // the fixture's conversation
	people := []string{"João", "Sofia", "Rui", "Helena", "Kenji"}
	for _, c := range []struct {
		words int
		cache string
	}{{4, "memory"}, {30, "memory"}, {4, "true"}, {30, "true"}, {4, "false"}, {30, "false"}, {30, "full"}} {
		words := c.words
		b.Run(fmt.Sprintf("words=%d/cache=%s", words, c.cache), func(b *testing.B) {
			switch c.cache {
			case "memory":
			case "false":
				defer s.WithoutPostingsCache()()
			case "true":
				defer s.WithoutFullIndexes()()
			case "full":
				defer s.WithoutFullIndexes()()
				fill := chattext.NewWords(7)
				for i := 0; i < 5000 && !memory.PostingsFull(s); i++ {
					if _, err := s.Search(ctx, key, memory.Query{Text: fill.Text(fill.Between(3, 30), people), Limit: 30}); err != nil {
						b.Fatal(err)
					}
				}
				if !memory.PostingsFull(s) {
					b.Fatal("the postings cache is not full after 5,000 searches")
				}
			}
			g := chattext.NewWords(uint64(21 + words))
			work, stop := memory.SearchWork(s)
			defer stop()
			var took, cpu, aroundTook, aroundCPU time.Duration
			n, segs := 0, 0
			for b.Loop() {
				// A turn: the user's message and the reply are written, a
				// summary archives 20 messages every 10 turns, and the
				// message is searched for, the prompt's messages excluded.
				n++
				text := g.Text(words, people)
				msgs := []memory.Message{
					{Key: key, Role: memory.RoleUser, SenderID: "424242", SenderName: "Ana", PlatformID: fmt.Sprintf("bench-%d-%d", words, n), Text: text, Time: time.Now(), Tokens: 20},
					{Key: key, Role: memory.RoleAssistant, ReplyTo: fmt.Sprintf("bench-%d-%d", words, n), Text: g.Text(g.Between(12, 80), people), Time: time.Now(), Tokens: 60},
				}
				for _, m := range msgs {
					if _, err := s.Append(ctx, []memory.Message{m}); err != nil {
						b.Fatal(err)
					}
				}
				act, err := s.Active(ctx, key)
				if err != nil {
					b.Fatal(err)
				}
				if n%10 == 0 && len(act) >= 28 {
					if _, err := s.Archive(ctx, key, messageIDs(act[:20]), memory.Summary{Text: "They talked."}, 0); err != nil {
						b.Fatal(err)
					}
					act = act[20:]
				}
				var n int
				if err := s.DB().QueryRowContext(ctx, `SELECT count(DISTINCT segid) FROM messages_fts_idx`).Scan(&n); err != nil {
					b.Fatal(err)
				}
				segs += n
				q := memory.Query{Text: text, Limit: 30, Exclude: messageIDs(act[max(0, len(act)-8):])}
				t, c := time.Now(), figures.ProcessCPU()
				hits, err := s.Search(ctx, key, q)
				if err != nil {
					b.Fatal(err)
				}
				took, cpu = took+time.Since(t), cpu+figures.ProcessCPU()-c
				ids := make([]int64, len(hits))
				for i, h := range hits {
					ids[i] = h.Message.ID
				}
				t, c = time.Now(), figures.ProcessCPU()
				if _, err := s.AroundReach(ctx, key, ids, 2); err != nil {
					b.Fatal(err)
				}
				aroundTook, aroundCPU = aroundTook+time.Since(t), aroundCPU+figures.ProcessCPU()-c
			}
			searches, stmts, rows, pages := work()
			b.ReportMetric(float64(stmts)/float64(searches), "stmts/search")
			b.ReportMetric(float64(rows)/float64(searches), "rows/search")
			b.ReportMetric(float64(pages)/float64(searches), "page_reads/search")
			b.ReportMetric(float64(segs)/float64(n), "index_segments")
			b.ReportMetric(figures.MS(took)/float64(n), "search_ms")
			b.ReportMetric(figures.MS(cpu)/float64(n), "search_cpu_ms")
			b.ReportMetric(figures.MS(aroundTook)/float64(n), "around_ms")
			b.ReportMetric(figures.MS(aroundCPU)/float64(n), "around_cpu_ms")
			if c.cache == "full" {
				b.ReportMetric(float64(memory.PostingsBytes(s))/(1<<20), "cache_MiB")
			}
		})
	}
}

// BenchmarkSearchTimeRange is what a search of a time ("in May", "in
// 2025") in the turn fixture's conversation (100,000 messages over two
// years) asks first: the ids that bound its messages of that time, through
// the conversation's own index (index) and through the time index
// filtered by conversation, as before (scan); time_ms per call.
//
//	go test -run='^$' -bench=SearchTimeRange -benchtime=20x ./memory/
func BenchmarkSearchTimeRange(b *testing.B) {
	ctx := context.Background()
	s := openTurnFixture(b, "time")
	key := pipeline.Key{Channel: "telegram", Chat: "424242"}
	for _, r := range []struct {
		name     string
		from, to time.Time
	}{
		{"week", time.Date(2025, 5, 5, 0, 0, 0, 0, time.UTC), time.Date(2025, 5, 12, 0, 0, 0, 0, time.UTC)},
		{"month", time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)},
		{"year", time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		wlo, whi, err := memory.TimeIDs(ctx, s, key, r.from, r.to, true)
		if err != nil || wlo == 0 {
			b.Fatalf("the scan: ids %d to %d, %v", wlo, whi, err)
		}
		for _, scan := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/scan=%v", r.name, scan), func(b *testing.B) {
				var took time.Duration
				n := 0
				for b.Loop() {
					t := time.Now()
					lo, hi, err := memory.TimeIDs(ctx, s, key, r.from, r.to, scan)
					took += time.Since(t)
					n++
					if err != nil {
						b.Fatal(err)
					}
					if lo != wlo || hi != whi {
						b.Fatalf("ids %d to %d, the scan's %d to %d", lo, hi, wlo, whi)
					}
				}
				b.ReportMetric(figures.MS(took)/float64(n), "time_ms")
			})
		}
	}
}

func messageIDs(msgs []memory.Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// openTurnFixture opens a copy of the bench's turn fixture (100k archived
// messages in one conversation, telegram/424242) named name, closed and
// removed when b ends.
func openTurnFixture(b *testing.B, name string) *memory.SQLite {
	b.Helper()
	ctx := context.Background()
	src, err := figures.TurnFixture(ctx, 100_000, os.Stderr)
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), name+".db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	s, err := memory.OpenSQLite(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	// Its index in memory, built from open in the background, is there
	// before anything is measured (each benchmark says whether it uses it).
	if err := s.WaitSearchIndexes(ctx); err != nil {
		b.Fatal(err)
	}
	return s
}
