package figures

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// TestLikeSearch: seed 002's search ranks by how many keywords a message
// contains, then the most recent; it sees archived messages only when asked
// and applies the token budget.
func TestLikeSearch(t *testing.T) {
	ctx := context.Background()
	s, err := memory.OpenSQLite(ctx, filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := pipeline.Key{Channel: "telegram", Chat: "1"}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	texts := []string{"an apple pie", "apple and banana split", "just the weather", "one more apple", "banana apple, active"}
	var msgs []memory.Message
	for i, txt := range texts {
		msgs = append(msgs, memory.Message{Key: key, Role: memory.RoleUser, SenderID: "1", PlatformID: string(rune('a' + i)), Text: txt, Time: t0.Add(time.Duration(i) * time.Minute)})
	}
	if _, err := s.Append(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	act, err := s.Active(ctx, key)
	if err != nil || len(act) != len(texts) {
		t.Fatalf("Active: %d messages, %v", len(act), err)
	}
	var archive []int64
	for _, m := range act[:4] {
		archive = append(archive, m.ID)
	}
	if _, err := s.Archive(ctx, key, archive, memory.Summary{Text: "fruit"}, 0); err != nil {
		t.Fatal(err)
	}
	db, err := OpenReader(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	texts0 := func(q memory.Query) []string {
		t.Helper()
		hits, err := LikeSearch(ctx, db, key, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hits {
			out = append(out, h.Message.Text)
		}
		return out
	}
	eq := func(got, want []string) bool {
		if len(got) != len(want) {
			return false
		}
		for i := range got {
			if got[i] != want[i] {
				return false
			}
		}
		return true
	}
	if got, want := texts0(memory.Query{Text: "apple banana", ArchivedOnly: true}), []string{"apple and banana split", "one more apple", "an apple pie"}; !eq(got, want) {
		t.Errorf("archived: %q, want %q", got, want)
	}
	if got, want := texts0(memory.Query{Text: "apple banana"}), []string{"banana apple, active", "apple and banana split", "one more apple", "an apple pie"}; !eq(got, want) {
		t.Errorf("all: %q, want %q", got, want)
	}
	// Tokens are chars/4: "apple and banana split" is 6, over a budget of 5,
	// "one more apple" 4 fits, then "an apple pie" (3) would exceed it.
	if got, want := texts0(memory.Query{Text: "apple banana", ArchivedOnly: true, TokenBudget: 5}), []string{"one more apple"}; !eq(got, want) {
		t.Errorf("budget 5: %q, want %q", got, want)
	}
	if got, want := texts0(memory.Query{Text: "apple banana", ArchivedOnly: true, Limit: 2}), []string{"apple and banana split", "one more apple"}; !eq(got, want) {
		t.Errorf("limit 2: %q, want %q", got, want)
	}
	if got := texts0(memory.Query{Text: "the and"}); len(got) != 0 {
		t.Errorf("stopwords only: %q, want nothing", got)
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int]string{1_000_000: "1M", 2_300_000: "2.3M", 100_000: "100k", 10_000: "10k", 200: "200", 1234: "1234"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
	if got := Archive1M.String(); got != "100k archived in 1M" {
		t.Errorf("Archive1M = %q", got)
	}
}

// TestRealBot builds cmd/bot and runs the figures of the real binary at
// tiny sizes: the fake Bot API must carry every message and reply, and
// /proc and /healthz must be read. Not with -short: building the bot takes
// a few seconds (a minute with a cold build cache).
func TestRealBot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/bot")
	}
	if runtime.GOOS != "linux" {
		t.Skip("resident memory is read from /proc")
	}
	ctx := context.Background()
	bin, err := BuildBot(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res, err := ResidentMemory(ctx, bin, ResidentOptions{Convs: 3, Turns: 2, Delay: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Turns != 6 || res.Idle.RSS <= 0 || res.Loaded.RSS <= 0 || res.Loaded.Peak < res.Loaded.RSS {
		t.Errorf("ResidentMemory = %+v: want 6 turns, resident sizes read, peak ≥ current", res)
	}
	if res.Idle.Pss <= 0 || res.Loaded.Pss <= 0 || res.Loaded.Anon <= 0 || res.Loaded.Pss > res.Loaded.RSS ||
		res.PeakAnon < res.Loaded.Anon || res.PeakPss < res.Loaded.Pss {
		t.Errorf("ResidentMemory = %+v: want anonymous memory and PSS read, PSS ≤ VmRSS, peaks ≥ after the load", res)
	}
	est, err := ResidentMemory(ctx, bin, ResidentOptions{Convs: 2, Turns: 2, Model: "llama3"})
	if err != nil {
		t.Fatal(err)
	}
	if est.Turns != 4 || est.Loaded.Peak <= 0 {
		t.Errorf("ResidentMemory with llama3 = %+v", est)
	}
	first, err := FirstReply(ctx, bin, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.First) != 1 || len(first.Last) != 1 || first.First[0] <= 0 || first.Last[0] <= 0 {
		t.Errorf("FirstReply = %+v: want one first and one last reply time", first)
	}
	data := t.TempDir()
	took, mem, err := Startup(ctx, bin, data, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(took) != 1 || took[0] <= 0 || len(mem) != 1 || mem[0].RSS <= 0 {
		t.Errorf("Startup = %v, %v", took, mem)
	}
	if _, err := os.Stat(filepath.Join(data, "recall.db")); err != nil {
		t.Errorf("the bot did not use the data folder: %v", err)
	}
}

// TestStockSearch: the stock baseline is FTS5's own bm25() over the whole
// store, filtered to the conversation. With one conversation in the store its
// statistics are the conversation's, so it ranks and scores as ours does;
// with another one beside it, it still returns only the conversation's
// messages.
func TestStockSearch(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := memory.OpenSQLite(ctx, filepath.Join(dir, "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key, other := pipeline.Key{Channel: "telegram", Chat: "1"}, pipeline.Key{Channel: "telegram", Chat: "2"}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	texts := []string{"an apple pie", "apple and banana split", "just the weather", "apples, apples and more apples",
		"banana bread", "Moving to Lisbon", "we moved the apple tree", "tie", "tie"}
	var msgs []memory.Message
	for i, txt := range texts {
		msgs = append(msgs, memory.Message{Key: key, Role: memory.RoleUser, SenderID: "1", SenderName: []string{"Ana", "Apple Jack"}[i%2],
			PlatformID: string(rune('a' + i)), Text: txt, Time: t0.Add(time.Duration(i) * time.Minute)})
	}
	if _, err := s.Append(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	search := func(stock string) [][]memory.Hit {
		t.Helper()
		if err := BuildStockIndex(ctx, s.Path(), stock); err != nil {
			t.Fatal(err)
		}
		db, err := OpenStockReader(s.Path(), stock)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var out [][]memory.Hit
		for _, q := range []string{"apple banana", "moving", "tie", "weather apples"} {
			for _, b := range []func() ([]memory.Hit, error){
				func() ([]memory.Hit, error) { return StockSearch(ctx, db, key, memory.Query{Text: q}) },
				func() ([]memory.Hit, error) { return s.Search(ctx, key, memory.Query{Text: q}) },
			} {
				h, err := b()
				if err != nil {
					t.Fatalf("%q: %v", q, err)
				}
				out = append(out, h)
			}
		}
		return out
	}
	res := search(filepath.Join(dir, "stock1.db"))
	for i := 0; i < len(res); i += 2 {
		stock, ours := res[i], res[i+1]
		if len(stock) == 0 || len(stock) != len(ours) {
			t.Fatalf("query %d: stock %d hits, ours %d", i/2, len(stock), len(ours))
		}
		for j := range stock {
			if stock[j].Message.ID != ours[j].Message.ID || math.Abs(stock[j].Score-ours[j].Score) > 1e-9*ours[j].Score {
				t.Errorf("query %d hit %d: stock %q %v, ours %q %v", i/2, j, stock[j].Message.Text, stock[j].Score, ours[j].Message.Text, ours[j].Score)
			}
		}
	}
	var more []memory.Message
	for i, txt := range texts {
		more = append(more, memory.Message{Key: other, Role: memory.RoleUser, SenderID: "2", PlatformID: string(rune('a' + i)), Text: txt + " apple", Time: t0})
	}
	if _, err := s.Append(ctx, more); err != nil {
		t.Fatal(err)
	}
	res = search(filepath.Join(dir, "stock2.db"))
	for i := 0; i < len(res); i += 2 {
		if len(res[i]) != len(res[i+1]) {
			t.Errorf("query %d with another conversation: stock %d hits, ours %d", i/2, len(res[i]), len(res[i+1]))
		}
		for _, h := range res[i] {
			if h.Message.Key != key || h.Message.SenderID != "1" {
				t.Errorf("query %d: a hit from another conversation: %+v", i/2, h.Message)
			}
		}
	}
}
