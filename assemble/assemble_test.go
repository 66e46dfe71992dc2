package assemble_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// words counts one token per whitespace-separated word, so every number in
// these tests can be worked out by hand.
type words struct{}

func (words) Count(s string) int { return len(strings.Fields(s)) }

// fakeSource is an in-memory Source that behaves like memory.Store: Recent
// applies its limits from the newest end, Search honours Exclude,
// ArchivedOnly, Limit and TokenBudget. It records what it was asked.
type fakeSource struct {
	sums    []memory.Summary
	recent  []memory.Message
	hits    []memory.Hit
	archive []memory.Message // the archive Around reads (with the hits' messages)
	mems    []memory.UserMemory
	facts   []memory.Fact

	mu          sync.Mutex // Build calls Search alongside the others
	calls       map[string]int
	query       memory.Query
	recentLimit int
	recentTok   int
	factsText   string
}

func (f *fakeSource) called(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[name]++
}

func (f *fakeSource) Summaries(_ context.Context, _ pipeline.Key, activeOnly bool) ([]memory.Summary, error) {
	f.called("summaries")
	var out []memory.Summary
	for _, s := range f.sums {
		if s.Active || !activeOnly {
			out = append(out, s)
		}
	}
	return out, nil
}

func (f *fakeSource) Recent(_ context.Context, _ pipeline.Key, limit, tokenBudget int) ([]memory.Message, error) {
	f.called("recent")
	f.recentLimit, f.recentTok = limit, tokenBudget
	used, start := 0, len(f.recent)
	for i := len(f.recent) - 1; i >= 0; i-- {
		if limit > 0 && len(f.recent)-i > limit {
			break
		}
		if tokenBudget > 0 && used+f.recent[i].Tokens > tokenBudget {
			break
		}
		used += f.recent[i].Tokens
		start = i
	}
	return slices.Clone(f.recent[start:]), nil
}

func (f *fakeSource) Search(_ context.Context, _ pipeline.Key, q memory.Query) ([]memory.Hit, error) {
	f.called("search")
	f.query = q
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	var out []memory.Hit
	used := 0
	for _, h := range f.hits {
		if slices.Contains(q.Exclude, h.Message.ID) || (q.ArchivedOnly && h.Message.Active) {
			continue
		}
		if q.TokenBudget > 0 && used+h.Message.Tokens > q.TokenBudget {
			continue
		}
		used += h.Message.Tokens
		out = append(out, h)
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

func (f *fakeSource) Around(_ context.Context, _ pipeline.Key, ids []int64) ([]memory.Message, error) {
	f.called("around")
	all := slices.Clone(f.archive)
	for _, h := range f.hits {
		if !slices.ContainsFunc(all, func(m memory.Message) bool { return m.ID == h.Message.ID }) {
			all = append(all, h.Message)
		}
	}
	slices.SortFunc(all, func(a, b memory.Message) int { return int(a.ID - b.ID) })
	var out []memory.Message
	for i, m := range all {
		for _, id := range ids {
			if id == m.ID || (i > 0 && all[i-1].ID == id) || (i+1 < len(all) && all[i+1].ID == id) {
				out = append(out, m)
				break
			}
		}
	}
	return out, nil
}

func (f *fakeSource) Memories(context.Context, string) ([]memory.UserMemory, error) {
	f.called("memories")
	return slices.Clone(f.mems), nil
}

func (f *fakeSource) Facts(_ context.Context, _ string, text string, limit int) ([]memory.Fact, error) {
	f.called("facts")
	f.factsText = text
	return slices.Clone(f.facts[:min(limit, len(f.facts))]), nil
}

var key = pipeline.Key{Channel: "telegram", Chat: "555"}

const (
	systemPrompt = "You are Recall, a helpful assistant." // 6 tokens
	currentText  = "what about my concert tickets"        // 5 tokens
)

func day(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }

// ten returns a 10-word text.
func ten(tag string) string {
	return tag + " w2 w3 w4 w5 w6 w7 w8 w9 w10"
}

// fixture: costs with the words counter
//
//	memories   "- name: Ann" 3 (+1 in the part budget), "- city: Berlin" 3 (+1)
//	summaries  S2 (level 2) 9, S1 (level 1, older) 8, S3 (level 1, newer) 7 — as lines
//	snippets   H1 7, H2 6 — as blocks of one message; H0 is message 203, already a recent turn
//	recent     201–204: 10 tokens + 4 framing each; 205 is the current message
//	headers    memories 7, summaries 6, snippets 9; the memory block has 4 framing
func fixture() *fakeSource {
	msg := func(id int64, role memory.Role, pid, text string, tokens int) memory.Message {
		m := memory.Message{ID: id, Key: key, Role: role, PlatformID: pid, Text: text, Tokens: tokens, Active: true, Time: day(10).Add(time.Duration(id) * time.Minute)}
		if role == memory.RoleUser {
			m.SenderID, m.SenderName = "7", "Ann"
		}
		return m
	}
	return &fakeSource{
		mems: []memory.UserMemory{{Key: "name", Content: "Ann"}, {Key: "city", Content: "Berlin"}},
		facts: []memory.Fact{
			{ID: 1, Content: "Ann likes trains"}, // 4 tokens
		},
		sums: []memory.Summary{
			{ID: 1, Level: 1, Active: true, Text: "alpha one two", From: day(1), To: day(2)},
			{ID: 2, Level: 2, Active: true, Text: "beta one two three", From: time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC)},
			{ID: 3, Level: 1, Active: true, Text: "gamma one", From: day(3), To: day(4)},
			{ID: 4, Level: 1, Active: false, Text: "folded away", From: day(1), To: day(1)},
		},
		hits: []memory.Hit{
			{Message: msg(203, memory.RoleUser, "p3", ten("r203"), 10), Score: 9},
			{Message: memory.Message{ID: 101, Role: memory.RoleUser, Text: "tickets for the concert", Tokens: 4, Time: time.Date(2025, 12, 15, 10, 30, 0, 0, time.UTC)}, Score: 2.5},
			{Message: memory.Message{ID: 102, Role: memory.RoleAssistant, Text: "concert at eight", Tokens: 3, Time: time.Date(2025, 12, 20, 18, 5, 0, 0, time.UTC)}, Score: 1.25},
		},
		recent: []memory.Message{
			msg(201, memory.RoleUser, "p1", ten("r201"), 10),
			msg(202, memory.RoleAssistant, "p1-r", ten("r202"), 10),
			msg(203, memory.RoleUser, "p3", ten("r203"), 10),
			msg(204, memory.RoleAssistant, "p3-r", ten("r204"), 10),
			msg(205, memory.RoleUser, "p5", currentText, 5),
		},
	}
}

func request() assemble.Request {
	return assemble.Request{Key: key, Text: currentText, MessageID: "p5", SystemPrompt: systemPrompt, Memory: true, Now: day(11)}
}

// generous gives every part room for everything in the fixture.
var generous = assemble.Budget{Total: 1000, System: 100, Memories: 100, Summaries: 100, Snippets: 100, Recent: 100}

// want is one part's expected tokens, items and trimmed items.
type want struct{ tokens, items, trimmed int }

func checkParts(t *testing.T, bd assemble.Breakdown, parts map[string]want) {
	t.Helper()
	names := []string{assemble.PartSystem, assemble.PartMemories, assemble.PartSummaries, assemble.PartSnippets, assemble.PartRecent, assemble.PartCurrent}
	if len(bd.Parts) != len(names) {
		t.Fatalf("%d parts, want %d", len(bd.Parts), len(names))
	}
	for i, name := range names {
		if bd.Parts[i].Name != name {
			t.Errorf("part %d is %q, want %q", i, bd.Parts[i].Name, name)
		}
		w, ok := parts[name]
		if !ok {
			continue
		}
		p := bd.Part(name)
		if got := (want{p.Tokens, p.Items, p.Trimmed}); got != w {
			t.Errorf("%s: tokens/items/trimmed = %v, want %v", name, got, w)
		}
	}
}

// sameJSON compares what two values show as JSON (their exported fields).
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

func contents(msgs []llm.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Role + "|" + m.Content
	}
	return out
}

func TestPromptOrder(t *testing.T) {
	src := fixture()
	p, err := assemble.New(src, words{}, generous).Build(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	block := strings.Join([]string{
		"## What you know about the user",
		"- name: Ann",
		"- city: Berlin",
		"",
		"## Summaries of the earlier conversation",
		"[2025-12-01 – 2025-12-31, level 2] beta one two three",
		"[2026-01-01 – 2026-01-02, level 1] alpha one two",
		"[2026-01-03 – 2026-01-04, level 1] gamma one",
		"",
		"## Excerpts from the archive that may be relevant",
		"[Mon 2025-12-15] user: tickets for the concert",
		"[Sat 2025-12-20] assistant: concert at eight",
	}, "\n")
	wantMsgs := []string{
		"system|" + systemPrompt,
		"system|" + block,
		"user|Ann: " + ten("r201"),
		"assistant|" + ten("r202"),
		"user|Ann: " + ten("r203"),
		"assistant|" + ten("r204"),
		"user|" + currentText,
	}
	if got := contents(p.Messages); !reflect.DeepEqual(got, wantMsgs) {
		t.Errorf("prompt:\n%s\nwant:\n%s", strings.Join(got, "\n---\n"), strings.Join(wantMsgs, "\n---\n"))
	}
	bd := p.Breakdown
	checkParts(t, bd, map[string]want{
		assemble.PartSystem:    {6, 1, 0},
		assemble.PartMemories:  {6, 2, 0},
		assemble.PartSummaries: {24, 3, 0},
		assemble.PartSnippets:  {13, 2, 0},
		assemble.PartRecent:    {56, 4, 0},
		assemble.PartCurrent:   {5, 1, 0},
	})
	// 6+4 system, 5+4 current, 65+4 memory block, 56 recent.
	if bd.Total != 144 || bd.Budget != 1000 || bd.Truncated || len(bd.Notes) != 0 {
		t.Errorf("total %d of %d, truncated %v, notes %v; want 144 of 1000", bd.Total, bd.Budget, bd.Truncated, bd.Notes)
	}
	// Retrieval: the current text, the snippet budget, skipping the recent
	// turns (active messages outside the recent window stay findable).
	q := src.query
	if q.Text != currentText || !reflect.DeepEqual(q.Exclude, []int64{201, 202, 203, 204, 205}) || q.ArchivedOnly {
		t.Errorf("search query = %+v", q)
	}
	// The store is asked for no more recent turns than the budget could use.
	if src.recentTok != 0 && src.recentTok < 100+5+4 {
		t.Errorf("Recent asked with a token budget of %d, below the part's budget plus the current message", src.recentTok)
	}
	// Scores: each hit's plus half the best hit's times its day's share
	// (one hit a day: 2.5 + 1.25, 1.25 + 0.625).
	wantSnips := []assemble.Snippet{
		{Messages: []assemble.SnippetMessage{{ID: 101, Role: memory.RoleUser, Sender: "user", Time: time.Date(2025, 12, 15, 10, 30, 0, 0, time.UTC), Text: "tickets for the concert", Hit: true}}, Tokens: 7, Score: 3.75},
		{Messages: []assemble.SnippetMessage{{ID: 102, Role: memory.RoleAssistant, Sender: "assistant", Time: time.Date(2025, 12, 20, 18, 5, 0, 0, time.UTC), Text: "concert at eight", Hit: true}}, Tokens: 6, Score: 1.875},
	}
	if !sameJSON(bd.Snippets, wantSnips) {
		t.Errorf("snippets = %+v, want %+v", bd.Snippets, wantSnips)
	}
	if src.calls["facts"] != 0 {
		t.Error("facts were loaded with Facts off")
	}
}

func TestCurrentMessageNotDuplicated(t *testing.T) {
	for _, tc := range []struct {
		name      string
		messageID string
		mutate    func(*fakeSource)
		recent    []int64 // ids of the recent turns in the prompt
		exclude   []int64 // ids kept out of the search: recent turns and the stored current message
	}{
		{"matched by platform id", "p5", nil, []int64{201, 202, 203, 204}, []int64{201, 202, 203, 204, 205}},
		{"matched by text without an id", "", nil, []int64{201, 202, 203, 204}, []int64{201, 202, 203, 204, 205}},
		{"not stored yet", "p6", func(f *fakeSource) { f.recent = f.recent[:4] }, []int64{201, 202, 203, 204}, []int64{201, 202, 203, 204}},
		{"an older message with the same text stays", "p5", func(f *fakeSource) {
			f.recent[2].Text = currentText
		}, []int64{201, 202, 203, 204}, []int64{201, 202, 203, 204, 205}},
		{"an assistant message with the id is no duplicate", "p5", func(f *fakeSource) {
			f.recent = append(f.recent[:4:4], memory.Message{ID: 206, Role: memory.RoleAssistant, PlatformID: "p5", Text: "typing…", Tokens: 1})
		}, []int64{201, 202, 203, 204, 206}, []int64{201, 202, 203, 204, 206}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := fixture()
			if tc.mutate != nil {
				tc.mutate(src)
			}
			req := request()
			req.MessageID = tc.messageID
			p, err := assemble.New(src, words{}, generous).Build(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			last := p.Messages[len(p.Messages)-1]
			if last.Role != llm.RoleUser || last.Content != currentText {
				t.Errorf("the last message is %+v, want the current one", last)
			}
			n := 0
			for _, m := range p.Messages {
				if strings.HasSuffix(m.Content, currentText) {
					n++
				}
			}
			wantN := 1
			if tc.name == "an older message with the same text stays" {
				wantN = 2
			}
			if n != wantN {
				t.Errorf("the current text appears %d times in the prompt, want %d", n, wantN)
			}
			if got := src.query.Exclude; !reflect.DeepEqual(got, tc.exclude) {
				t.Errorf("excluded from search = %v, want %v", got, tc.exclude)
			}
			if got := p.Breakdown.Part(assemble.PartRecent).Items; got != len(tc.recent) {
				t.Errorf("%d recent items, want %d", got, len(tc.recent))
			}
		})
	}
}

func TestPartBudgets(t *testing.T) {
	src := fixture()
	b := assemble.Budget{Total: 1000, System: 3, Memories: 4, Summaries: 17, Snippets: 7, Recent: 28}
	p, err := assemble.New(src, words{}, b).Build(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	bd := p.Breakdown
	checkParts(t, bd, map[string]want{
		assemble.PartSystem:    {3, 1, 0},  // cut to its first 3 words
		assemble.PartMemories:  {3, 1, 1},  // the first line costs 3+1 = 4
		assemble.PartSummaries: {17, 2, 1}, // S2 9 + S1 8; S3 does not fit
		assemble.PartSnippets:  {7, 1, 0},  // H1 7; H2 did not fit the part's budget
		assemble.PartRecent:    {28, 2, 1}, // 203, 204; 202 fetched and dropped (201 never fetched)
		assemble.PartCurrent:   {5, 1, 0},
	})
	for _, part := range bd.Parts {
		if part.Budget > 0 && part.Tokens > part.Budget {
			t.Errorf("%s: %d tokens over its budget %d", part.Name, part.Tokens, part.Budget)
		}
	}
	// 3+4 system, 5+4 current, (7+3 + 6+17 + 9+7)+4 block, 28 recent.
	if bd.Total != 97 {
		t.Errorf("total = %d, want 97", bd.Total)
	}
	if sys := p.Messages[0].Content; !strings.HasPrefix(systemPrompt, sys) || (words{}).Count(sys) != 3 {
		t.Errorf("system prompt = %q, want its first 3 words", sys)
	}
	if !reflect.DeepEqual(src.query.Exclude, []int64{203, 204, 205}) {
		t.Errorf("search query = %+v", src.query)
	}
	if got := contents(p.Messages[2:]); !reflect.DeepEqual(got, []string{"user|Ann: " + ten("r203"), "assistant|" + ten("r204"), "user|" + currentText}) {
		t.Errorf("recent and current = %q", got)
	}

	f := bd.Format()
	for _, s := range []string{
		"Context for the next reply: 97 of 1000 tokens",
		"• system prompt: 3 tokens (budget 3)\n",
		"• memories and facts: 3 tokens (budget 4), 1 item, 1 trimmed\n  – name: Ann\n",
		"• summaries: 17 tokens (budget 17), 2 items, 1 trimmed\n  – [2025-12-01 – 2025-12-31, level 2] beta one two three\n  – [2026-01-01 – 2026-01-02, level 1] alpha one two\n",
		"• archive snippets: 7 tokens (budget 7), 1 item\n",
		"• recent turns: 28 tokens (budget 28), 2 items, 1 trimmed",
		"• current message: 5 tokens",
		"Pulled from the archive:",
		"  – 7 tokens:\n    [Mon 2025-12-15] user: tickets for the concert",
	} {
		if !strings.Contains(f, s) {
			t.Errorf("Format() lacks %q:\n%s", s, f)
		}
	}
}

func TestTrimOrder(t *testing.T) {
	// Every part fits its own budget; the total then decides. Untrimmed the
	// prompt costs 144.
	for _, tc := range []struct {
		total int
		parts map[string]want
		sums  []int64 // summaries left, in prompt order
		sum   int
	}{
		{1000, map[string]want{
			assemble.PartSnippets: {13, 2, 0}, assemble.PartRecent: {56, 4, 0}, assemble.PartSummaries: {24, 3, 0}, assemble.PartMemories: {6, 2, 0},
		}, []int64{2, 1, 3}, 144},
		{144, map[string]want{
			assemble.PartSnippets: {13, 2, 0}, assemble.PartRecent: {56, 4, 0}, assemble.PartSummaries: {24, 3, 0}, assemble.PartMemories: {6, 2, 0},
		}, []int64{2, 1, 3}, 144},
		// Snippets first, the lowest ranked first.
		{138, map[string]want{
			assemble.PartSnippets: {7, 1, 1}, assemble.PartRecent: {56, 4, 0}, assemble.PartSummaries: {24, 3, 0}, assemble.PartMemories: {6, 2, 0},
		}, []int64{2, 1, 3}, 138},
		{137, map[string]want{
			assemble.PartSnippets: {0, 0, 2}, assemble.PartRecent: {56, 4, 0}, assemble.PartSummaries: {24, 3, 0}, assemble.PartMemories: {6, 2, 0},
		}, []int64{2, 1, 3}, 122},
		// Then the oldest recent turns.
		{121, map[string]want{
			assemble.PartSnippets: {0, 0, 2}, assemble.PartRecent: {42, 3, 1}, assemble.PartSummaries: {24, 3, 0}, assemble.PartMemories: {6, 2, 0},
		}, []int64{2, 1, 3}, 108},
		{80, map[string]want{
			assemble.PartSnippets: {0, 0, 2}, assemble.PartRecent: {14, 1, 3}, assemble.PartSummaries: {24, 3, 0}, assemble.PartMemories: {6, 2, 0},
		}, []int64{2, 1, 3}, 80},
		{79, map[string]want{
			assemble.PartSnippets: {0, 0, 2}, assemble.PartRecent: {0, 0, 4}, assemble.PartSummaries: {24, 3, 0}, assemble.PartMemories: {6, 2, 0},
		}, []int64{2, 1, 3}, 66},
		// Then the lowest level's oldest summaries.
		{60, map[string]want{
			assemble.PartSnippets: {0, 0, 2}, assemble.PartRecent: {0, 0, 4}, assemble.PartSummaries: {16, 2, 1}, assemble.PartMemories: {6, 2, 0},
		}, []int64{2, 3}, 58},
		{51, map[string]want{
			assemble.PartSnippets: {0, 0, 2}, assemble.PartRecent: {0, 0, 4}, assemble.PartSummaries: {9, 1, 2}, assemble.PartMemories: {6, 2, 0},
		}, []int64{2}, 51},
		{40, map[string]want{
			assemble.PartSnippets: {0, 0, 2}, assemble.PartRecent: {0, 0, 4}, assemble.PartSummaries: {0, 0, 3}, assemble.PartMemories: {6, 2, 0},
		}, nil, 36},
		// Memories last.
		{33, map[string]want{
			assemble.PartSnippets: {0, 0, 2}, assemble.PartRecent: {0, 0, 4}, assemble.PartSummaries: {0, 0, 3}, assemble.PartMemories: {3, 1, 1},
		}, nil, 33},
		{21, map[string]want{
			assemble.PartSnippets: {0, 0, 2}, assemble.PartRecent: {0, 0, 4}, assemble.PartSummaries: {0, 0, 3}, assemble.PartMemories: {0, 0, 2},
		}, nil, 19},
	} {
		t.Run(fmt.Sprint(tc.total), func(t *testing.T) {
			b := generous
			b.Total = tc.total
			p, err := assemble.New(fixture(), words{}, b).Build(context.Background(), request())
			if err != nil {
				t.Fatal(err)
			}
			bd := p.Breakdown
			tc.parts[assemble.PartSystem] = want{6, 1, 0}
			tc.parts[assemble.PartCurrent] = want{5, 1, 0}
			checkParts(t, bd, tc.parts)
			if bd.Total != tc.sum || bd.Total > tc.total {
				t.Errorf("total = %d, want %d (budget %d)", bd.Total, tc.sum, tc.total)
			}
			if bd.Truncated {
				t.Error("the current message was truncated")
			}
			// The prompt holds what the breakdown says, in order.
			msgs := p.Messages
			if msgs[0].Content != systemPrompt || msgs[len(msgs)-1].Content != currentText {
				t.Fatalf("prompt = %q", contents(msgs))
			}
			var block string
			if msgs[1].Role == llm.RoleSystem {
				block = msgs[1].Content
			}
			var gotSums []int64
			for id, text := range map[int64]string{1: "alpha one two", 2: "beta one two three", 3: "gamma one"} {
				if strings.Contains(block, text) {
					gotSums = append(gotSums, id)
				}
			}
			slices.Sort(gotSums)
			wantSums := slices.Clone(tc.sums)
			slices.Sort(wantSums)
			if !slices.Equal(gotSums, wantSums) {
				t.Errorf("summaries in the prompt = %v, want %v", gotSums, tc.sums)
			}
			if len(tc.sums) == 2 && strings.Index(block, "beta") > strings.Index(block, "gamma") {
				t.Error("the level-2 summary is not first")
			}
			recent := bd.Part(assemble.PartRecent).Items
			blockMsgs := 0
			if block != "" {
				blockMsgs = 1
			}
			if len(msgs) != 2+blockMsgs+recent {
				t.Errorf("%d messages, want system, block, %d recent, current", len(msgs), recent)
			}
			// The recent turns kept are the newest ones.
			for i, m := range msgs[1+blockMsgs : len(msgs)-1] {
				id := 205 - recent + i
				if !strings.HasSuffix(m.Content, ten(fmt.Sprintf("r%d", id))) {
					t.Errorf("recent turn %d = %q, want message %d", i, m.Content, id)
				}
			}
		})
	}
}

func TestCurrentMessageTruncated(t *testing.T) {
	var long []string
	for i := 1; i <= 100; i++ {
		long = append(long, fmt.Sprintf("c%d", i))
	}
	longText := strings.Join(long, " ")
	for _, tc := range []struct {
		name    string
		counter llm.Counter
		text    string
		total   int
		kept    string // the current message starts with this
		exact   int    // when > 0: the truncated message's exact tokens
	}{
		// 14 fixed (system + framing), 46 left: 31 words and the 15-word note.
		{"words", words{}, longText, 60, "c1 c2 c3", 46},
		// Only 16 left: one word and the note.
		{"words, little room", words{}, longText, 30, "c1", 16},
		// chars/4, as for non-OpenAI models: the note costs more than 20.
		{"chars/4", llm.NewCounter("llama3"), strings.Repeat("0123456789 ", 200), 100, "0123456789 0123", 0},
		{"chars/4, little room", llm.NewCounter("llama3"), strings.Repeat("0123456789 ", 200), 47, "0123", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := generous
			b.Total = tc.total
			req := request()
			req.Text, req.MessageID = tc.text, "p-long"
			p, err := assemble.New(fixture(), tc.counter, b).Build(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			bd := p.Breakdown
			if !bd.Truncated || !slices.ContainsFunc(bd.Notes, func(n string) bool { return strings.Contains(n, "truncated") }) {
				t.Errorf("truncated %v, notes %v", bd.Truncated, bd.Notes)
			}
			if bd.Total > tc.total {
				t.Errorf("total %d over the budget %d", bd.Total, tc.total)
			}
			last := p.Messages[len(p.Messages)-1]
			if last.Role != llm.RoleUser || !strings.HasPrefix(last.Content, tc.kept) || !strings.Contains(last.Content, "[Note: this message was too long") {
				t.Errorf("current message = %q", last.Content)
			}
			if strings.Contains(last.Content, "(-") {
				t.Errorf("the note reports a negative size: %q", last.Content)
			}
			cur := bd.Part(assemble.PartCurrent)
			if cur.Tokens != tc.counter.Count(last.Content) || cur.Items != 1 {
				t.Errorf("current part = %+v, the message costs %d", cur, tc.counter.Count(last.Content))
			}
			if tc.exact > 0 && cur.Tokens != tc.exact {
				t.Errorf("current message: %d tokens, want %d (all the room left)", cur.Tokens, tc.exact)
			}
			// Everything else gave way, in order.
			if bd.Part(assemble.PartSnippets).Items != 0 || bd.Part(assemble.PartRecent).Items != 0 {
				t.Errorf("parts = %+v", bd.Parts)
			}
		})
	}
}

func TestMemoryOff(t *testing.T) {
	src := fixture()
	req := request()
	req.Memory, req.Facts = false, true
	p, err := assemble.New(src, words{}, generous).Build(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	bd := p.Breakdown
	if src.calls["summaries"] != 0 || src.calls["search"] != 0 || src.calls["facts"] != 0 {
		t.Errorf("with memory off the source was asked for %v", src.calls)
	}
	checkParts(t, bd, map[string]want{
		assemble.PartSystem:    {6, 1, 0},
		assemble.PartMemories:  {6, 2, 0},
		assemble.PartSummaries: {0, 0, 0},
		assemble.PartSnippets:  {0, 0, 0},
		assemble.PartRecent:    {56, 4, 0},
		assemble.PartCurrent:   {5, 1, 0},
	})
	if want := "system|## What you know about the user\n- name: Ann\n- city: Berlin"; contents(p.Messages)[1] != want {
		t.Errorf("memory block = %q, want %q", contents(p.Messages)[1], want)
	}
	// 10 system, 9 current, 7+6+4 block, 56 recent
	if bd.Total != 92 {
		t.Errorf("total = %d, want 92", bd.Total)
	}
	if len(bd.Notes) != 1 || !strings.Contains(bd.Notes[0], "memory is off") {
		t.Errorf("notes = %v", bd.Notes)
	}
	if f := bd.Format(); !strings.Contains(f, "Note: memory is off") || strings.Contains(f, "Pulled from the archive") {
		t.Errorf("Format() = %s", f)
	}
}

func TestFactsOnlyWithMemory(t *testing.T) {
	for _, tc := range []struct {
		facts, memory bool
		maxMemories   int
		mem           want
	}{
		{false, false, 0, want{6, 2, 0}},
		{true, false, 0, want{6, 2, 0}},
		{false, true, 0, want{6, 2, 0}},
		{true, true, 0, want{10, 3, 0}},
		{true, true, 1, want{7, 2, 1}}, // one memory of two, and the fact
	} {
		t.Run(fmt.Sprintf("facts=%v,memory=%v,max=%d", tc.facts, tc.memory, tc.maxMemories), func(t *testing.T) {
			src := fixture()
			req := request()
			req.Facts, req.Memory, req.MaxMemories = tc.facts, tc.memory, tc.maxMemories
			p, err := assemble.New(src, words{}, generous).Build(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			injected := tc.facts && tc.memory
			if got := src.calls["facts"] == 1; got != injected {
				t.Errorf("facts loaded: %v, want %v", got, injected)
			}
			if injected && src.factsText != currentText {
				t.Errorf("facts looked up with %q, want the current message", src.factsText)
			}
			if got := strings.Contains(p.Messages[1].Content, "- Ann likes trains"); got != injected {
				t.Errorf("fact in the prompt: %v, want %v", got, injected)
			}
			checkParts(t, p.Breakdown, map[string]want{assemble.PartMemories: tc.mem})
		})
	}
}

// TestWithStore assembles from a real store: an archived chunk with its
// summary, active recent turns, a user memory, and the current message
// already stored (as the turn stores it before assembling).
func TestWithStore(t *testing.T) {
	ctx := context.Background()
	st, err := memory.Open(ctx, memory.Options{Dir: t.TempDir(), RetryBase: time.Millisecond, RetryMax: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	counter := llm.NewCounter("llama3")
	k := pipeline.Key{Channel: "telegram", Chat: "555"}
	t0 := time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)
	texts := map[int][2]string{
		2:  {"We booked the Lisbon trip for May 14", "Lisbon in May sounds lovely"},
		11: {"The Lisbon hotel is booked too", "Great, the hotel is done"},
	}
	for i := 1; i <= 12; i++ {
		u, a := fmt.Sprintf("Message %d about cooking pasta", i), fmt.Sprintf("Reply %d about pasta", i)
		if tx, ok := texts[i]; ok {
			u, a = tx[0], tx[1]
		}
		at := t0.Add(time.Duration(i) * 24 * time.Hour)
		pid := fmt.Sprint(i)
		err := st.Append(ctx,
			memory.Message{Key: k, Role: memory.RoleUser, SenderID: "7", SenderName: "Ann", PlatformID: pid, Text: u, Time: at, Tokens: counter.Count(u)},
			memory.Message{Key: k, Role: memory.RoleAssistant, ReplyTo: pid, Text: a, Time: at.Add(time.Minute), Tokens: counter.Count(a)})
		if err != nil {
			t.Fatal(err)
		}
	}
	active, err := st.Active(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 16)
	for i := range ids {
		ids[i] = active[i].ID
	}
	if _, err := st.Archive(ctx, k, ids, memory.Summary{Text: "Ann planned a trip and talked about pasta."}, 8); err != nil {
		t.Fatal(err)
	}
	if err := st.Remember(ctx, k.Owner(), "home_city", "Berlin"); err != nil {
		t.Fatal(err)
	}
	current := "When is my Lisbon trip?"
	cur := memory.Message{Key: k, Role: memory.RoleUser, SenderID: "7", SenderName: "Ann", PlatformID: "13", Text: current, Time: t0.Add(13 * 24 * time.Hour), Tokens: counter.Count(current)}
	if err := st.Append(ctx, cur); err != nil {
		t.Fatal(err)
	}

	p, err := assemble.New(st, counter, assemble.DefaultBudget).Build(ctx, assemble.Request{
		Key: k, Text: current, MessageID: "13", SystemPrompt: systemPrompt, Memory: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	bd := p.Breakdown
	msgs := p.Messages
	if len(msgs) != 2+8+1 {
		t.Fatalf("%d messages, want system, memory block, 8 recent turns, current:\n%s", len(msgs), strings.Join(contents(msgs), "\n"))
	}
	block := msgs[1].Content
	for _, s := range []string{
		"- home_city: Berlin",
		"[2026-02-02 – 2026-02-09, level 1] Ann planned a trip and talked about pasta.",
		"[Tue 2026-02-03] Ann: We booked the Lisbon trip for May 14\nassistant: Lisbon in May sounds lovely",
	} {
		if !strings.Contains(block, s) {
			t.Errorf("the memory block lacks %q:\n%s", s, block)
		}
	}
	if msgs[len(msgs)-1].Content != current || msgs[2].Content != "Ann: Message 9 about cooking pasta" {
		t.Errorf("prompt = %q", contents(msgs))
	}
	n := 0
	for _, m := range msgs {
		n += strings.Count(m.Content, current)
	}
	if n != 1 {
		t.Errorf("the current message appears %d times", n)
	}
	activeNow, err := st.Active(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(bd.Snippets) == 0 {
		t.Fatal("no snippets pulled")
	}
	for _, s := range bd.Snippets {
		var lines []string
		for i, m := range s.Messages {
			if slices.ContainsFunc(activeNow, func(a memory.Message) bool { return a.ID == m.ID }) {
				t.Errorf("snippet message %d (%q) is an active message, not an archived one", m.ID, m.Text)
			}
			line := m.Sender + ": " + m.Text
			if i == 0 {
				line = m.Time.Format("[Mon 2006-01-02] ") + line
			}
			lines = append(lines, line)
		}
		// Counted from the stored counts: at least the block's own, at
		// most two more per line (the estimate rounds three parts up).
		exact := counter.Count(strings.Join(lines, "\n"))
		if s.Time().IsZero() || s.Score <= 0 || s.Tokens < exact || s.Tokens > exact+2*len(lines) {
			t.Errorf("snippet %+v, block counted %d", s, exact)
		}
	}
	if bd.Total > assemble.DefaultBudget.Total || bd.Part(assemble.PartSummaries).Items != 1 || bd.Part(assemble.PartRecent).Items != 8 || bd.Part(assemble.PartMemories).Items != 1 {
		t.Errorf("breakdown = %+v", bd)
	}
	if f := bd.Format(); !strings.Contains(f, "[Tue 2026-02-03] Ann: We booked") || !strings.Contains(f, "of 8000 tokens") {
		t.Errorf("Format() = %s", f)
	}
}

// A burst: messages p2 and p3 were accepted (stored) before p2 is answered,
// and p1's reply was stored after them. The prompt for p2 shows p1 and its
// reply, then p2 — never p3, which the user sent later, neither as a recent
// turn nor as a snippet.
func TestBurstLaterMessagesNotInPrompt(t *testing.T) {
	msg := func(id int64, role memory.Role, pid, replyTo, text string) memory.Message {
		return memory.Message{ID: id, Key: key, Role: role, PlatformID: pid, ReplyTo: replyTo, Text: text, Tokens: len(strings.Fields(text)), Active: true, Time: day(10)}
	}
	later := msg(303, memory.RoleUser, "p3", "", "third question later")
	src := &fakeSource{
		recent: []memory.Message{
			msg(301, memory.RoleUser, "p1", "", "first question"),
			msg(302, memory.RoleUser, "p2", "", "second question"),
			later,
			msg(304, memory.RoleAssistant, "", "p1", "first answer"),
		},
		hits: []memory.Hit{{Message: later, Score: 5}},
	}
	req := assemble.Request{Key: key, Text: "second question", MessageID: "p2", SystemPrompt: systemPrompt, Memory: true, Now: day(11)}
	p, err := assemble.New(src, words{}, generous).Build(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := contents(p.Messages)
	want := []string{"system|" + systemPrompt, "user|first question", "assistant|first answer", "user|second question"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("prompt:\n%s\nwant:\n%s", strings.Join(got, "\n---\n"), strings.Join(want, "\n---\n"))
	}
	if q := src.query.Exclude; !slices.Contains(q, 302) || !slices.Contains(q, 303) {
		t.Errorf("excluded from search = %v, want the current message and the later one", q)
	}
}

// An image shown with the current message counts in the budget: at a total
// of 144 (everything fits without it) a 23-token image trims as a total of
// 121 would, and it goes with the current message.
func TestImageCountsInTheBudget(t *testing.T) {
	b := generous
	b.Total = 144
	req := request()
	req.Images = []llm.Image{{JPEG: []byte{0xff, 0xd8}, Width: 10, Height: 10, Tokens: 23}}
	p, err := assemble.New(fixture(), words{}, b).Build(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	checkParts(t, p.Breakdown, map[string]want{
		assemble.PartSnippets: {0, 0, 2}, assemble.PartRecent: {42, 3, 1}, assemble.PartSummaries: {24, 3, 0}, assemble.PartMemories: {6, 2, 0},
	})
	last := p.Messages[len(p.Messages)-1]
	if p.Breakdown.Total != 108+23 || len(last.Images) != 1 || last.Content != currentText {
		t.Fatalf("total %d, the current message %q with %d images", p.Breakdown.Total, last.Content, len(last.Images))
	}
	if cur := p.Breakdown.Part(assemble.PartCurrent); cur.Tokens != len(strings.Fields(currentText))+23 {
		t.Fatalf("the current message counts %d tokens", cur.Tokens)
	}
}
