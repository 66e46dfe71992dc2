package memory

import (
	"math"
	"testing"
	"time"
)

// FuzzSearchQuery: any text is a valid query (package fts's FuzzQuery checks
// the terms and the MATCH expression): neither backend ever fails, and with
// one conversation in each store (so their statistics agree) both rank alike,
// SQLite reading FTS5 and SQLite with the conversation's index in memory
// (search_full.go) too.
func FuzzSearchQuery(f *testing.F) {
	for _, q := range cfHostileQueries() {
		if len(q) < 4096 {
			f.Add(q)
		}
	}
	s, j, sm := cfOpenSQLite(f), cfOpenJSON(f), cfOpenSQLite(f).(*SQLite)
	sm.full.from = 1
	k := cfKey("telegram", "1")
	var msgs []Message
	for i, text := range []string{"I am moving to Lisbon next month", "Lisbon is lovely", "We moved the piano yesterday",
		"NEAR(a b) AND OR NOT \"quoted\" col:umn ^start -minus *star", "Crème brûlée au café", "emoji 🎉 party",
		"c1 c2 conv text sender_name", "tie breaker", "tie breaker", "\x00nul bytes\xff and bad utf8"} {
		m := cfUser(k, string(rune('a'+i)), text, cfT0)
		m.SenderName = []string{"Alice", "Bob", "Zoë", ""}[i%4]
		msgs = append(msgs, m)
	}
	for _, b := range []Backend{s, j, sm} {
		cfAppend(f, b, msgs...)
		for i, m := range msgs[:5] {
			if _, _, err := b.AddFact(cfCtx, k.Owner(), Fact{Content: m.Text, Created: cfT0.Add(time.Duration(i) * time.Second)}); err != nil {
				f.Fatal(err)
			}
		}
	}
	if _, err := sm.Search(cfCtx, k, Query{Text: "lisbon"}); err != nil { // asks for the index
		f.Fatal(err)
	}
	if err := sm.WaitSearchIndexes(cfCtx); err != nil {
		f.Fatal(err)
	}
	sm.full.mu.Lock()
	indexed := len(sm.full.entries)
	sm.full.mu.Unlock()
	if indexed != 1 {
		f.Fatalf("%d conversations indexed in memory, want 1", indexed)
	}
	f.Fuzz(func(t *testing.T, q string) {
		for _, query := range []Query{{Text: q}, {Text: q, ArchivedOnly: true}, {Text: q, Limit: 2, TokenBudget: 8, Exclude: []int64{1}}} {
			hs, err := s.Search(cfCtx, k, query)
			if err != nil {
				t.Fatalf("SQLite Search(%q): %v", q, err)
			}
			hm, err := sm.Search(cfCtx, k, query)
			if err != nil {
				t.Fatalf("SQLite Search(%q) through the index in memory: %v", q, err)
			}
			if !sameHits(hm, hs) {
				t.Fatalf("Search(%q): through the index in memory %s, through FTS5 %s", q, hitList(hm), hitList(hs))
			}
			hj, err := j.Search(cfCtx, k, query)
			if err != nil {
				t.Fatalf("JSON Search(%q): %v", q, err)
			}
			if len(hs) != len(hj) {
				t.Fatalf("Search(%q): SQLite %d hits, JSON %d", q, len(hs), len(hj))
			}
			for i := range hs {
				if hs[i].Message.PlatformID != hj[i].Message.PlatformID || math.Abs(hs[i].Score-hj[i].Score) > 1e-9*math.Abs(hs[i].Score) {
					t.Fatalf("Search(%q) hit %d: SQLite %s %v, JSON %s %v", q, i, hs[i].Message.PlatformID, hs[i].Score, hj[i].Message.PlatformID, hj[i].Score)
				}
			}
		}
		fs, err := s.Facts(cfCtx, k.Owner(), q, 0)
		if err != nil {
			t.Fatalf("SQLite Facts(%q): %v", q, err)
		}
		fj, err := j.Facts(cfCtx, k.Owner(), q, 0)
		if err != nil {
			t.Fatalf("JSON Facts(%q): %v", q, err)
		}
		if len(fs) != len(fj) {
			t.Fatalf("Facts(%q): SQLite %d, JSON %d", q, len(fs), len(fj))
		}
		for i := range fs {
			if fs[i].Content != fj[i].Content {
				t.Fatalf("Facts(%q) #%d: SQLite %q, JSON %q", q, i, fs[i].Content, fj[i].Content)
			}
		}
	})
}
