package assemble

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
)

// TestBlockTokensBound: the memory block, counted line by line with the
// real tokenizer, is never under its exact count (the budget holds) and at
// most two tokens per line over it.
func TestBlockTokensBound(t *testing.T) {
	count := llm.NewCounter("gpt-4o-mini")
	a := &Assembler{count: count}
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"the", "Café", "moving", "João", "42", "1999", "x.", "end.", "path/", "/usr/bin", "(note)", "naïve",
		"日本語", "emoji🙂", "'s", "don't", "--", "...", "?", "!", "\t", "  ", "URL:", "https://example.com/a?b=c", "[x]", "#", "*bold*", "`code`"}
	text := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 && r.IntN(4) > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		return b.String()
	}
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	for round := range 300 {
		var notes []string
		var sums []memory.Summary
		var snips []Snippet
		for range r.IntN(4) {
			notes = append(notes, "- "+text(1+r.IntN(12)))
		}
		for i := range r.IntN(5) {
			sums = append(sums, memory.Summary{Level: 1 + r.IntN(3), From: t0, To: t0.Add(time.Duration(i) * time.Hour), Text: text(1 + r.IntN(40))})
		}
		for range r.IntN(6) {
			var s Snippet
			for i := range 1 + r.IntN(3) {
				m := SnippetMessage{Role: memory.RoleUser, Sender: []string{"Ana", "assistant", "João Silva"}[r.IntN(3)],
					Time: t0.Add(time.Duration(r.IntN(3)) * 20 * time.Hour).Add(time.Duration(i) * time.Minute), Text: text(1 + r.IntN(30))}
				if r.IntN(2) == 0 {
					m.tokens = count.Count(m.Text) // as stored with the message
				} // else not known: the line is counted
				m.Gap = i > 0 && r.IntN(3) == 0 // another exchange of the day
				s.Messages = append(s.Messages, m)
			}
			a.countSnippet(&s)
			snips = append(snips, s)
		}
		block := memoryBlock(notes, sums, snips)
		got := blockTokens(a, notes, sums, snips)
		// A turn counts it from the parts' counts, without rendering it:
		// the same number.
		p := parts{notes: notes, sums: sums, snips: snips}
		for _, n := range notes {
			p.noteTok = append(p.noteTok, count.Count(n))
		}
		for _, s := range sums {
			p.sumTok = append(p.sumTok, count.Count(summaryLine(s)))
		}
		if fromParts := a.partsBlockTokens(&p); fromParts != got {
			t.Fatalf("round %d: block counted %d from its parts, %d from its lines", round, fromParts, got)
		}
		if block == "" {
			if got != 0 {
				t.Fatalf("round %d: empty block counted %d", round, got)
			}
			continue
		}
		exact := count.Count(block) + perMessage
		lines := strings.Count(block, "\n") + 1
		if got < exact || got > exact+2*lines {
			t.Fatalf("round %d: block counted %d, exact %d (%d lines)\n%s", round, got, exact, lines, block)
		}
	}
}

// TestBlockTokensExactForWordCounters: with a counter that does not count
// line breaks (the estimate for other models is per character), the block's
// count is exact.
func TestBlockTokensExactForWordCounters(t *testing.T) {
	count := wordCounter{}
	a := &Assembler{count: count}
	notes := []string{"- likes tea", "- lives in Porto"}
	sums := []memory.Summary{{Level: 1, Text: "talked about the trip"}}
	snips := []Snippet{{Messages: []SnippetMessage{{Role: memory.RoleAssistant, Sender: "assistant", Text: "the train leaves at nine"},
		{Role: memory.RoleUser, Sender: "Ana", Text: "thanks", tokens: 1}}}}
	a.countSnippet(&snips[0])
	if got, want := blockTokens(a, notes, sums, snips), count.Count(memoryBlock(notes, sums, snips))+perMessage; got != want {
		t.Errorf("block counted %d, want %d", got, want)
	}
}

type wordCounter struct{}

func (wordCounter) Count(s string) int { return len(strings.Fields(s)) }

// BenchmarkFill: ranking hits and their context and taking them into the
// snippet budget, a day's messages merged under one header (40 hits in 200
// messages over 10 days, real tokenizer, 1,500 tokens): a turn's share of
// the work.
func BenchmarkFill(b *testing.B) {
	count := llm.NewCounter("gpt-4o-mini")
	a := &Assembler{count: count}
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	var msgs []memory.Message
	score := map[int64]float64{}
	seeds := map[int64]bool{}
	for i := range 200 {
		text := fmt.Sprintf("message %d: we talked about the garden and the new fence for a while", i)
		m := memory.Message{ID: int64(i + 1), Role: memory.RoleUser, SenderName: []string{"Anna", "Ben"}[i%2],
			Time: t0.AddDate(0, 0, i/20).Add(time.Duration(i%20) * time.Minute), Text: text, Tokens: count.Count(text)}
		if i%5 == 2 {
			score[m.ID] = float64(100 - i/5)
		}
		if i%5 >= 1 && i%5 <= 3 {
			seeds[m.ID] = true
		}
		msgs = append(msgs, m)
	}
	for b.Loop() {
		follows := exchangeLinks(msgs, seeds)
		a.fill(msgs, follows, contextScores(msgs, follows, score, seeds), score, nil, "", "garden fence", 1500)
	}
}

// TestInsertCountsAsWhole: a day's block grown message by message (fill's
// insert, which counts only the lines an insert changes) counts what the
// whole block counts, and a message that does not fit leaves the block as
// it was.
func TestInsertCountsAsWhole(t *testing.T) {
	count := llm.NewCounter("gpt-4o-mini")
	a := &Assembler{count: count}
	r := rand.New(rand.NewPCG(3, 4))
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	for round := range 200 {
		ids := r.Perm(12)
		var day Snippet
		follows := map[int64]bool{} // message id → the next id follows it
		for id := range 12 {
			follows[int64(id)] = r.IntN(3) > 0
		}
		follow := func(x, y SnippetMessage) bool { return y.ID == x.ID+1 && follows[x.ID] }
		for k, id := range ids {
			m := SnippetMessage{ID: int64(id), Role: memory.RoleUser, Sender: []string{"Ana", "Ben"}[r.IntN(2)],
				Time: t0.Add(time.Duration(id) * time.Hour), Text: strings.Repeat("word ", 1+r.IntN(9))}
			if r.IntN(2) == 0 {
				m.tokens = count.Count(m.Text)
			}
			if k == 0 {
				day.Messages = []SnippetMessage{m}
				a.countSnippet(&day)
				continue
			}
			room := r.IntN(30)
			was := FormatSnippet(day, 0)
			wasTokens := day.Tokens
			grown, ok := a.insert(&day, m, follow, room)
			whole := day
			whole.Messages = append([]SnippetMessage(nil), day.Messages...)
			a.countSnippet(&whole)
			switch {
			case whole.Tokens != day.Tokens:
				t.Fatalf("round %d: the block counts %d after inserts, %d counted whole\n%s", round, day.Tokens, whole.Tokens, FormatSnippet(day, 0))
			case !ok && (FormatSnippet(day, 0) != was || day.Tokens != wasTokens):
				t.Fatalf("round %d: a message that did not fit changed the block:\n%s\nwas\n%s", round, FormatSnippet(day, 0), was)
			case ok && (grown > room || day.Tokens != wasTokens+grown):
				t.Fatalf("round %d: grew by %d (room %d), tokens %d from %d", round, grown, room, day.Tokens, wasTokens)
			}
		}
	}
}
