package figures

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/recallbot/recall/bench/chattext"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// SearchQueries are n queries: 1–4 Zipf-drawn content words (one in ten with
// a name of the big conversation), with the hostile ones spread through.
func SearchQueries(n int) []string {
	hostile := chattext.HostileQueries()
	g := chattext.NewMessages(2024)
	var qs []string
	for len(qs) < n-len(hostile) {
		qs = append(qs, g.Query(BigPeople))
	}
	for i, h := range hostile {
		at := (i + 1) * len(qs) / (len(hostile) + 1)
		qs = slices.Insert(qs, at, h)
	}
	return qs
}

// SearchSample is one query's run.
type SearchSample struct {
	Query int // index in the queries
	Took  time.Duration
	CPU   time.Duration // the process's CPU time meanwhile (nothing else runs): load inflates Took, hardly this
	Hits  int
}

// CPUTimes are the samples' CPU times.
func CPUTimes(s []SearchSample) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, x := range s {
		out[i] = x.CPU
	}
	return out
}

// SearchResult holds every query's time: ours (as the bot runs it), ours
// with pruning off (Exact: every doclist read whole, whatever the
// conversation's size), stock
// FTS5 bm25() with the conversation filter (StockSearch), and the LIKE
// scan's. Overlap is the mean share of ours' hits that stock FTS5 returns
// too (same query, first round).
type SearchResult struct {
	Ours, Exact, Stock, Like []SearchSample
	FromIndex                []SearchSample // ours, its doclists read from FTS5 (no index in memory)
	Overlap                  float64
}

// Durations are the samples' times.
func Durations(s []SearchSample) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, x := range s {
		out[i] = x.Took
	}
	return out
}

// MeanHits is the mean number of hits per query.
func MeanHits(s []SearchSample) float64 {
	if len(s) == 0 {
		return 0
	}
	n := 0
	for _, x := range s {
		n += x.Hits
	}
	return float64(n) / float64(len(s))
}

// SearchArchive compares our archive search (SQLite.Search) with stock FTS5
// (StockSearch on the index at stockPath, from StockIndex) and seed 002's
// LIKE scan (LikeSearch) on the archived messages of key in st: rounds ×
// every query, each run by ours, ours without pruning (Exact), ours reading
// the doclists from FTS5 instead of the index in memory (FromIndex), stock
// FTS5 and the LIKE scan,
// rotating which goes first, after a warm-up of 10 queries. Limit 20, token
// budget 1,500.
func SearchArchive(ctx context.Context, st *memory.Store, stockPath string, key pipeline.Key, queries []string, rounds int) (SearchResult, error) {
	sq := st.SQLite()
	db, err := OpenReader(sq.Path())
	if err != nil {
		return SearchResult{}, err
	}
	defer db.Close()
	sdb, err := OpenStockReader(sq.Path(), stockPath)
	if err != nil {
		return SearchResult{}, err
	}
	defer sdb.Close()
	query := func(text string) memory.Query {
		return memory.Query{Text: text, ArchivedOnly: true, Limit: 20, TokenBudget: 1500}
	}
	ours := func(text string) ([]memory.Hit, error) { return sq.Search(ctx, key, query(text)) }
	exact := func(text string) ([]memory.Hit, error) {
		defer sq.WithoutSearchPruning()()
		return ours(text)
	}
	fromIndex := func(text string) ([]memory.Hit, error) {
		defer sq.WithoutFullIndexes()()
		return ours(text)
	}
	stock := func(text string) ([]memory.Hit, error) { return StockSearch(ctx, sdb, key, query(text)) }
	like := func(text string) ([]memory.Hit, error) { return LikeSearch(ctx, db, key, query(text)) }
	// The big conversations' indexes in memory, built from the store's
	// open in the background (memory/search_full.go).
	if err := sq.WaitSearchIndexes(ctx); err != nil {
		return SearchResult{}, err
	}
	for _, q := range queries[:min(10, len(queries))] { // page cache, prepared statements
		for _, f := range []func(string) ([]memory.Hit, error){ours, fromIndex, stock, like} {
			if _, err := f(q); err != nil {
				return SearchResult{}, err
			}
		}
	}
	var res SearchResult
	oursIDs, stockIDs := make([][]int64, len(queries)), make([][]int64, len(queries))
	run := func(f func(string) ([]memory.Hit, error), qi int, to *[]SearchSample, who string, ids [][]int64) error {
		t, cpu := time.Now(), ProcessCPU()
		h, err := f(queries[qi])
		if err != nil {
			return fmt.Errorf("%s %.40q: %w", who, queries[qi], err)
		}
		*to = append(*to, SearchSample{qi, time.Since(t), ProcessCPU() - cpu, len(h)})
		if ids != nil && ids[qi] == nil {
			ids[qi] = []int64{}
			for _, x := range h {
				ids[qi] = append(ids[qi], x.Message.ID)
			}
		}
		return nil
	}
	for i := 0; i < rounds; i++ {
		for qi := range queries {
			steps := []func() error{
				func() error { return run(ours, qi, &res.Ours, "ours", oursIDs) },
				func() error { return run(exact, qi, &res.Exact, "ours (pruning off)", nil) },
				func() error { return run(fromIndex, qi, &res.FromIndex, "ours (no index in memory)", nil) },
				func() error { return run(stock, qi, &res.Stock, "stock FTS5", stockIDs) },
				func() error { return run(like, qi, &res.Like, "LIKE", nil) },
			}
			k := (qi + i) % len(steps) // which goes first rotates
			for j := range steps {
				if err := steps[(k+j)%len(steps)](); err != nil {
					return res, err
				}
			}
		}
	}
	res.Overlap = overlap(oursIDs, stockIDs)
	return res, nil
}

// overlap is the mean share of a's ids per query that b has too, over the
// queries where a found something.
func overlap(a, b [][]int64) float64 {
	sum, n := 0.0, 0
	for i := range a {
		if len(a[i]) == 0 {
			continue
		}
		common := 0
		for _, id := range a[i] {
			if slices.Contains(b[i], id) {
				common++
			}
		}
		sum += float64(common) / float64(len(a[i]))
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
