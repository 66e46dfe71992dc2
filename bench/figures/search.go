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
	Hits  int
}

// SearchResult holds every query's time: ours (as the bot runs it, with the
// doclist cache that the conversation's earlier searches filled), ours with
// the cache off (every doclist read from the index), and the LIKE scan's.
type SearchResult struct {
	Ours, Cold, Like []SearchSample
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

// SearchArchive compares our archive search (SQLite.Search) with seed 002's
// LIKE scan (LikeSearch) on the archived messages of key in st: rounds ×
// every query, each run by ours, ours with SQLite.Search's doclist cache off
// (Cold) and the LIKE scan, rotating which goes first, after a warm-up of 10
// queries. Limit 20, token budget 1,500.
func SearchArchive(ctx context.Context, st *memory.Store, key pipeline.Key, queries []string, rounds int) (SearchResult, error) {
	sq := st.SQLite()
	db, err := OpenReader(sq.Path())
	if err != nil {
		return SearchResult{}, err
	}
	defer db.Close()
	ours := func(text string) ([]memory.Hit, error) {
		return sq.Search(ctx, key, memory.Query{Text: text, ArchivedOnly: true, Limit: 20, TokenBudget: 1500})
	}
	cold := func(text string) ([]memory.Hit, error) {
		defer sq.WithoutSearchCache()()
		return ours(text)
	}
	like := func(text string) ([]memory.Hit, error) {
		return LikeSearch(ctx, db, key, memory.Query{Text: text, ArchivedOnly: true, Limit: 20, TokenBudget: 1500})
	}
	for _, q := range queries[:min(10, len(queries))] { // page cache, prepared statements
		if _, err := ours(q); err != nil {
			return SearchResult{}, err
		}
		if _, err := like(q); err != nil {
			return SearchResult{}, err
		}
	}
	var res SearchResult
	run := func(f func(string) ([]memory.Hit, error), qi int, to *[]SearchSample, who string) error {
		t := time.Now()
		h, err := f(queries[qi])
		if err != nil {
			return fmt.Errorf("%s %.40q: %w", who, queries[qi], err)
		}
		*to = append(*to, SearchSample{qi, time.Since(t), len(h)})
		return nil
	}
	for i := 0; i < rounds; i++ {
		for qi := range queries {
			steps := []func() error{
				func() error { return run(ours, qi, &res.Ours, "ours") },
				func() error { return run(cold, qi, &res.Cold, "ours (cache off)") },
				func() error { return run(like, qi, &res.Like, "LIKE") },
			}
			k := (qi + i) % len(steps) // which goes first rotates
			for j := range steps {
				if err := steps[(k+j)%len(steps)](); err != nil {
					return res, err
				}
			}
		}
	}
	return res, nil
}
