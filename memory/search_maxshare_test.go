package memory

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// searchStore opens an SQLite store for a search test, with the key of
// its conversation and a time to write its messages from.
func searchStore(t *testing.T) (context.Context, *SQLite, pipeline.Key, time.Time) {
	t.Helper()
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return ctx, s, cfKey("telegram", "1"), time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
}

// TestSearchMaxShare: a search that leaves out common words (the archive
// snippets' feedback search) ranks "pizza night" by "night" alone when
// "pizza" is in more than the share asked for; without it, "pizza" counts.
func TestSearchMaxShare(t *testing.T) {
	_, s, _, _ := searchStore(t)
	checkMaxShare(t, s)
}

// checkMaxShare is TestSearchMaxShare on b.
func checkMaxShare(t *testing.T, b Backend) {
	t.Helper()
	ctx, key := context.Background(), cfKey("telegram", "1")
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var msgs []Message
	for i, text := range []string{"good night", "pizza", "pizza again", "pizza tonight", "bread", "bread and cheese",
		"we moved to Lisbon", "Lisbon is sunny", "rain", "more rain"} {
		msgs = append(msgs, Message{Key: key, Role: RoleUser, SenderName: "Ana", Text: text, Time: t0.Add(time.Duration(i) * time.Minute)})
	}
	if _, err := b.Append(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	texts := func(q Query) []string {
		t.Helper()
		hits, err := b.Search(ctx, key, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hits {
			out = append(out, h.Message.Text)
		}
		return out
	}
	// "pizza" is in 3 of 10 messages: more than a fifth, not more than a
	// third.
	if got := texts(Query{Text: "pizza night", MaxShare: 0.2}); len(got) != 1 || got[0] != "good night" {
		t.Errorf("MaxShare 0.2: hits %q, want only \"good night\"", got)
	}
	if got := texts(Query{Text: "pizza night", MaxShare: 0.34}); len(got) != 4 {
		t.Errorf("MaxShare 0.34: hits %q, want the 3 with pizza and \"good night\"", got)
	}
	if got := texts(Query{Text: "pizza night"}); len(got) != 4 {
		t.Errorf("no MaxShare: hits %q, want the 3 with pizza and \"good night\"", got)
	}
}

// TestSearchTextOnly: a search of the text only (feedback's) does not find
// a word in the sender's name, and a message repeating the word ranks as
// one saying it once; the usual search finds the name and counts repeats.
func TestSearchTextOnly(t *testing.T) {
	ctx, s, key, t0 := searchStore(t)
	var msgs []Message
	for i, m := range []struct{ sender, text string }{
		{"Ana", "rose garden today"}, // the word once
		{"Ben", "rose rose rose all day"},
		{"Rose", "lunch at noon"}, // the word in the name only
		{"Ana", "nothing here"},
		{"Ben", "still nothing"},
	} {
		msgs = append(msgs, Message{Key: key, Role: RoleUser, SenderName: m.sender, Text: m.text, Time: t0.Add(time.Duration(i) * time.Minute)})
	}
	if _, err := s.Append(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	search := func(q Query) map[string]float64 {
		t.Helper()
		hits, err := s.Search(ctx, key, q)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, h := range hits {
			out[h.Message.Text] = h.Score
		}
		return out
	}
	all := search(Query{Text: "rose"})
	if _, ok := all["lunch at noon"]; !ok || len(all) != 3 {
		t.Fatalf("usual search: %v, want the two texts and Rose's message", all)
	}
	if all["rose rose rose all day"] <= all["rose garden today"] {
		t.Errorf("usual search: the repeats rank %v, once %v; want the repeats above", all["rose rose rose all day"], all["rose garden today"])
	}
	text := search(Query{Text: "rose", TextOnly: true})
	if _, ok := text["lunch at noon"]; ok || len(text) != 2 {
		t.Fatalf("text only: %v, want the two texts with the word", text)
	}
	// Once each: the longer message ranks lower (BM25's length).
	if text["rose rose rose all day"] >= text["rose garden today"] {
		t.Errorf("text only: the repeats rank %v, once %v; want them counted once", text["rose rose rose all day"], text["rose garden today"])
	}
}
