package assemble

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// Budget is the token budget of each part (memory.budget.* in config.yaml).
type Budget struct {
	Total     int // everything sent, the current message included
	System    int // the system prompt
	Memories  int // user memories and relevant facts
	Summaries int // active summaries
	Snippets  int // archive snippets
	Recent    int // recent turns
}

// DefaultBudget is DESIGN.md's table.
var DefaultBudget = Budget{Total: 8000, System: 1500, Memories: 500, Summaries: 2000, Snippets: 1500, Recent: 3000}

// Source is what assembly reads from the store.
//
// Build calls Search concurrently with the other methods.
type Source interface {
	Summaries(ctx context.Context, key pipeline.Key, activeOnly bool) ([]memory.Summary, error)
	Recent(ctx context.Context, key pipeline.Key, limit, tokenBudget int) ([]memory.Message, error)
	Search(ctx context.Context, key pipeline.Key, q memory.Query) ([]memory.Hit, error)
	Memories(ctx context.Context, owner string) ([]memory.UserMemory, error)
	Facts(ctx context.Context, owner, text string, limit int) ([]memory.Fact, error)
}

// Request describes one assembly.
type Request struct {
	Key          pipeline.Key
	Text         string // the current message
	MessageID    string // its platform id, so it is not also counted as a recent turn
	SystemPrompt string
	Memory       bool // the owner's memory is on: summaries and snippets are used
	Facts        bool // facts are injected (memory.facts.enabled)
	MaxMemories  int  // at most this many user memories (default 50)
	// MaxTotal, when above 0, caps the whole prompt below the budget's
	// Total (a model with a smaller context window; see Budget.Within).
	MaxTotal int
	Now      time.Time
}

// Part names, in prompt order.
const (
	PartSystem    = "system prompt"
	PartMemories  = "memories and facts"
	PartSummaries = "summaries"
	PartSnippets  = "archive snippets"
	PartRecent    = "recent turns"
	PartCurrent   = "current message"
)

// Part is one part's share of the prompt.
type Part struct {
	Name    string `json:"name"`
	Tokens  int    `json:"tokens"`
	Budget  int    `json:"budget"` // 0 = none of its own
	Items   int    `json:"items"`
	Trimmed int    `json:"trimmed"` // items dropped to fit
	// Texts are the items sent, for the memories and the summaries (what
	// /context shows).
	Texts []string `json:"texts,omitempty"`
}

// Snippet is an archived message pulled into the prompt.
type Snippet struct {
	ID     int64       `json:"id"`
	Role   memory.Role `json:"role"`
	Time   time.Time   `json:"time"`
	Tokens int         `json:"tokens"`
	Score  float64     `json:"score"`
	Text   string      `json:"text"`
}

// Breakdown is what went into a prompt and why.
type Breakdown struct {
	Parts     []Part    `json:"parts"`
	Snippets  []Snippet `json:"snippets"`
	Total     int       `json:"total_tokens"`
	Budget    int       `json:"budget"`
	Truncated bool      `json:"current_truncated"`
	Notes     []string  `json:"notes,omitempty"`
}

// Part returns the named part.
func (b Breakdown) Part(name string) Part {
	for _, p := range b.Parts {
		if p.Name == name {
			return p
		}
	}
	return Part{Name: name}
}

// Prompt is the assembled context.
type Prompt struct {
	Messages  []llm.Message
	Breakdown Breakdown
}

// perMessage is the framing every chat message costs (OpenAI's accounting).
const perMessage = 4

// Assembler builds prompts.
type Assembler struct {
	src     Source
	count   llm.Counter
	budget  Budget
	snippet int // most snippets considered
}

// New returns an Assembler.
func New(src Source, counter llm.Counter, b Budget) *Assembler {
	return &Assembler{src: src, count: counter, budget: b, snippet: 20}
}

// Build assembles the prompt for req.
func (a *Assembler) Build(ctx context.Context, req Request) (Prompt, error) {
	if req.Now.IsZero() {
		req.Now = time.Now()
	}
	if req.MaxMemories <= 0 {
		req.MaxMemories = 50
	}
	b := a.budget.Within(req.MaxTotal)
	var bd Breakdown
	bd.Budget = b.Total

	// 1. Recent turns, newest first within their budget.
	// Ask the store for no more than the budget could hold (plus the current
	// message): a long conversation with memory off has many active messages.
	recent, err := a.src.Recent(ctx, req.Key, 0, b.Recent+a.count.Count(req.Text)+perMessage)
	if err != nil {
		return Prompt{}, fmt.Errorf("loading recent turns of %s: %w", req.Key, err)
	}
	recent, dropped := dropCurrent(recent, req)
	recentTrimmed := 0
	{
		used, start := 0, len(recent)
		for i := len(recent) - 1; i >= 0; i-- {
			t := recent[i].Tokens + perMessage
			if used+t > b.Recent {
				break
			}
			used += t
			start = i
		}
		recentTrimmed = start
		recent = recent[start:]
	}
	// 2. Snippets from the archive, skipping what is already in context.
	// The search (the costliest read) runs while the memories and the
	// summaries are loaded and counted.
	type searched struct {
		hits []memory.Hit
		err  error
	}
	var found chan searched
	if req.Memory && b.Snippets > 0 {
		exclude := make([]int64, 0, len(recent)+1)
		for _, m := range recent {
			if m.ID != 0 {
				exclude = append(exclude, m.ID)
			}
		}
		// The current message is already stored: it must not come back as
		// its own best match, nor may the later messages of a burst. Active
		// messages outside the recent window (a high threshold, or memory
		// switched on late) stay findable.
		exclude = append(exclude, dropped...)
		found = make(chan searched, 1)
		go func() {
			hits, err := a.src.Search(ctx, req.Key, memory.Query{Text: req.Text, Limit: a.snippet, TokenBudget: b.Snippets, Exclude: exclude})
			found <- searched{hits, err}
		}()
	}
	// waitSearch returns the search's result (nil when none was started);
	// every return path below waits for it.
	waitSearch := func() ([]memory.Hit, error) {
		if found == nil {
			return nil, nil
		}
		r := <-found
		found = nil
		return r.hits, r.err
	}
	defer func() { _, _ = waitSearch() }() // a search still running when Build returns early is only waited for
	// 3. System prompt, capped at its budget.
	system := a.fit(req.SystemPrompt, b.System)
	// 4. Memories and facts.
	notes, _, notesTrimmed, err := a.memories(ctx, req)
	if err != nil {
		return Prompt{}, err
	}
	// 5. Summaries, highest level first, then oldest first.
	var sums []memory.Summary
	if req.Memory {
		if sums, err = a.src.Summaries(ctx, req.Key, true); err != nil {
			return Prompt{}, fmt.Errorf("loading summaries of %s: %w", req.Key, err)
		}
	}
	sort.SliceStable(sums, func(i, j int) bool {
		if sums[i].Level != sums[j].Level {
			return sums[i].Level > sums[j].Level
		}
		return sums[i].ID < sums[j].ID
	})
	sumTrimmed := 0
	sums, sumTrimmed = keepWithin(sums, b.Summaries, func(s memory.Summary) int { return a.count.Count(summaryLine(s)) })
	// The snippets found, within their budget.
	var snips []Snippet
	hits, err := waitSearch()
	if err != nil {
		return Prompt{}, fmt.Errorf("searching the archive of %s: %w", req.Key, err)
	}
	{
		used := 0
		for _, h := range hits {
			if req.MessageID != "" && h.Message.PlatformID == req.MessageID {
				continue
			}
			s := Snippet{ID: h.Message.ID, Role: h.Message.Role, Time: h.Message.Time, Score: h.Score, Text: h.Message.Text}
			s.Tokens = a.snippetTokens(s, h.Message.Tokens)
			if used+s.Tokens > b.Snippets {
				continue
			}
			used += s.Tokens
			snips = append(snips, s)
		}
	}
	// 6. The current message: always in, truncated when it alone is too big.
	current := req.Text
	fixed := a.count.Count(system) + perMessage + perMessage // system + current framing
	room := b.Total - fixed
	if room < 1 {
		room = 1
	}
	if n := a.count.Count(current); n > room {
		// The note's own cost comes out of the room (it is ~15 words: more
		// than 20 tokens with some counters).
		note := func(kept int) string {
			return fmt.Sprintf("\n\n[Note: this message was too long; only its beginning was kept (%d of %d tokens).]", kept, n)
		}
		keep := room - a.count.Count(note(room))
		for ; keep > 0; keep-- {
			if cut := a.fit(current, keep) + note(keep); a.count.Count(cut) <= room {
				current = cut
				break
			}
		}
		if keep <= 0 { // no room even for the note
			current = a.fit(current, room)
		}
		bd.Truncated = true
		bd.Notes = append(bd.Notes, "the current message was truncated to fit the budget")
	}

	// Over the total? Trim snippets, then the oldest recent turns, then the
	// oldest / lowest summaries (then memories, then a memory-less prompt).
	//
	// The memory block is counted once; while trimming, each dropped item's
	// own count is subtracted, and the whole prompt is counted again only
	// near the budget (re-tokenizing the block for every drop would cost
	// milliseconds a turn). The decisions are those of exact counting.
	currentTok := a.count.Count(current)
	exact := func() int {
		return fixed + currentTok + blockTokens(a, notes, sums, snips) + tokensOf(recent)
	}
	estimate, drops := exact(), 0
	over := func() bool {
		// A drop can save a little more than its item (a newline, a
		// section header, the block's framing): allow for that before
		// trusting the estimate.
		if estimate-2*drops-40 > b.Total {
			drops++
			return true
		}
		estimate, drops = exact(), 0
		if estimate > b.Total {
			drops++
			return true
		}
		return false
	}
	snipTrimmed := 0
	for over() && len(snips) > 0 {
		estimate -= snips[len(snips)-1].Tokens
		snips = snips[:len(snips)-1] // lowest ranked first
		snipTrimmed++
	}
	for over() && len(recent) > 0 {
		estimate -= recent[0].Tokens + perMessage
		recent = recent[1:]
		recentTrimmed++
	}
	for over() && len(sums) > 0 {
		// lowest level, oldest first: the list is sorted highest level first
		// and oldest first within a level, so find the last level's oldest.
		idx := len(sums) - 1
		for idx > 0 && sums[idx-1].Level == sums[idx].Level {
			idx--
		}
		estimate -= a.count.Count(summaryLine(sums[idx]))
		sums = append(sums[:idx], sums[idx+1:]...)
		sumTrimmed++
	}
	for over() && len(notes) > 0 {
		estimate -= a.count.Count(notes[len(notes)-1])
		notes = notes[:len(notes)-1]
		notesTrimmed++
	}
	total := exact

	var msgs []llm.Message
	if system != "" {
		msgs = append(msgs, llm.Message{Role: "system", Content: system})
	}
	if block := memoryBlock(notes, sums, snips); block != "" {
		msgs = append(msgs, llm.Message{Role: "system", Content: block})
	}
	for _, m := range recent {
		role := string(m.Role)
		content := m.Text
		if m.Role == memory.RoleUser && m.SenderName != "" && req.Key.Channel != "console" {
			content = m.SenderName + ": " + content
		}
		msgs = append(msgs, llm.Message{Role: role, Content: content})
	}
	msgs = append(msgs, llm.Message{Role: "user", Content: current})

	memTok := 0
	if len(notes) > 0 {
		memTok = a.count.Count(strings.Join(notes, "\n"))
	}
	sumTok := 0
	sumLines := make([]string, 0, len(sums))
	for _, s := range sums {
		sumLines = append(sumLines, summaryLine(s))
		sumTok += a.count.Count(sumLines[len(sumLines)-1])
	}
	snipTok := 0
	for _, s := range snips {
		snipTok += s.Tokens
	}
	bd.Parts = []Part{
		{Name: PartSystem, Tokens: a.count.Count(system), Budget: b.System, Items: boolInt(system != "")},
		{Name: PartMemories, Tokens: memTok, Budget: b.Memories, Items: len(notes), Trimmed: notesTrimmed, Texts: notes},
		{Name: PartSummaries, Tokens: sumTok, Budget: b.Summaries, Items: len(sums), Trimmed: sumTrimmed, Texts: sumLines},
		{Name: PartSnippets, Tokens: snipTok, Budget: b.Snippets, Items: len(snips), Trimmed: snipTrimmed},
		{Name: PartRecent, Tokens: tokensOf(recent), Budget: b.Recent, Items: len(recent), Trimmed: recentTrimmed},
		{Name: PartCurrent, Tokens: a.count.Count(current), Items: 1},
	}
	bd.Snippets = snips
	bd.Total = total()
	if !req.Memory {
		bd.Notes = append(bd.Notes, "memory is off for this chat: no summaries or archive snippets (/summary_on turns it on)")
	}
	return Prompt{Messages: msgs, Breakdown: bd}, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// memories returns the lines of the memories part within its budget.
func (a *Assembler) memories(ctx context.Context, req Request) (lines []string, n, trimmed int, err error) {
	mems, err := a.src.Memories(ctx, req.Key.Owner())
	if err != nil {
		return nil, 0, 0, fmt.Errorf("loading memories: %w", err)
	}
	if len(mems) > req.MaxMemories {
		trimmed += len(mems) - req.MaxMemories
		mems = mems[:req.MaxMemories]
	}
	var all []string
	for _, m := range mems {
		all = append(all, "- "+m.Key+": "+m.Content)
	}
	if req.Facts && req.Memory {
		facts, err := a.src.Facts(ctx, req.Key.Owner(), req.Text, 10)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("loading facts: %w", err)
		}
		for _, f := range facts {
			all = append(all, "- "+f.Content)
		}
	}
	used := 0
	for _, l := range all {
		t := a.count.Count(l) + 1
		if used+t > a.budget.Memories {
			trimmed++
			continue
		}
		used += t
		lines = append(lines, l)
	}
	return lines, len(lines), trimmed, nil
}

// dropCurrent removes the current message from the recent turns (it was
// stored before assembly) and returns the ids it removed. Found by its
// platform id, the user messages stored after it go too: the later messages
// of a burst, accepted before this one is answered, are not part of the
// conversation yet (the replies to earlier messages, stored after them,
// stay).
func dropCurrent(recent []memory.Message, req Request) ([]memory.Message, []int64) {
	if req.MessageID != "" {
		for i := len(recent) - 1; i >= 0; i-- {
			m := recent[i]
			if m.Role != memory.RoleUser || m.PlatformID != req.MessageID {
				continue
			}
			out, dropped := recent[:i:i], nonZero(nil, m.ID)
			for _, later := range recent[i+1:] {
				if later.Role == memory.RoleUser {
					dropped = nonZero(dropped, later.ID)
					continue
				}
				out = append(out, later)
			}
			return out, dropped
		}
		return recent, nil
	}
	for i := len(recent) - 1; i >= 0 && i >= len(recent)-3; i-- {
		m := recent[i]
		if m.Role == memory.RoleUser && m.Text == req.Text {
			return append(recent[:i:i], recent[i+1:]...), nonZero(nil, m.ID)
		}
	}
	return recent, nil
}

// nonZero appends id unless it is 0 (a message still queued for writing).
func nonZero(ids []int64, id int64) []int64 {
	if id == 0 {
		return ids
	}
	return append(ids, id)
}

func tokensOf(ms []memory.Message) int {
	n := 0
	for _, m := range ms {
		n += m.Tokens + perMessage
	}
	return n
}

func blockTokens(a *Assembler, notes []string, sums []memory.Summary, snips []Snippet) int {
	lines := blockLines(notes, sums, snips)
	if len(lines) == 0 {
		return 0
	}
	// Line by line, so that the counts come from the counter's cache (the
	// summaries' lines were counted on earlier turns) or are known (the
	// snippets'). Counters start a new piece of text after a line
	// break, so this is the block's own count; tiktoken's pre-tokenizer
	// may join a break to the punctuation before it, which makes this at
	// most a token per line more than the block's exact count, never less
	// (TestBlockTokensBound).
	n := (len(lines) - 1) * a.count.Count("\n")
	// The snippets' lines, the last ones, are counted already
	// (snippetTokens).
	for _, l := range lines[:len(lines)-len(snips)] {
		n += a.count.Count(l)
	}
	for _, s := range snips {
		n += s.Tokens
	}
	return n + perMessage
}

// keepWithin keeps items in order while they fit the budget.
func keepWithin[T any](items []T, budget int, cost func(T) int) ([]T, int) {
	var out []T
	used, dropped := 0, 0
	for _, it := range items {
		c := cost(it)
		if used+c > budget {
			dropped++
			continue
		}
		used += c
		out = append(out, it)
	}
	return out, dropped
}

func summaryLine(s memory.Summary) string {
	return fmt.Sprintf("[%s – %s, level %d] %s", s.From.Format("2006-01-02"), s.To.Format("2006-01-02"), s.Level, s.Text)
}

func snippetLine(s Snippet) string { return snippetHeader(s) + " " + s.Text }

func snippetHeader(s Snippet) string {
	return fmt.Sprintf("[%s, %s]", s.Time.Format("2006-01-02 15:04"), s.Role)
}

// snippetTokens counts a snippet's line from the message's stored count
// (taken by the same counter when it was stored), so that the turn does not
// tokenize the text of up to 20 archived messages again: the header's count,
// the text's, and the space's between them. A counter splits text
// after the header's closing bracket, and the space joins the first word
// of the text at most one token dearer than alone: this is at least the
// line's exact count, and at most a token more (two with the estimate of
// other models, which rounds each part up; TestBlockTokensBound).
// Without a stored count, the line is counted.
func (a *Assembler) snippetTokens(s Snippet, stored int) int {
	if stored <= 0 {
		return a.count.Count(snippetLine(s))
	}
	return a.count.Count(snippetHeader(s)) + a.count.Count(" ") + stored
}

// memoryBlock renders the memory system message.
func memoryBlock(notes []string, sums []memory.Summary, snips []Snippet) string {
	return strings.Join(blockLines(notes, sums, snips), "\n")
}

// blockLines returns the memory block's lines: a header per section, then
// its items, an empty line between sections.
func blockLines(notes []string, sums []memory.Summary, snips []Snippet) []string {
	var lines []string
	section := func(header string, n int, item func(int) string) {
		if n == 0 {
			return
		}
		if len(lines) > 0 {
			lines = append(lines, "")
		}
		lines = append(lines, header)
		for i := range n {
			lines = append(lines, item(i))
		}
	}
	section("## What you know about the user", len(notes), func(i int) string { return notes[i] })
	section("## Summaries of the earlier conversation", len(sums), func(i int) string { return summaryLine(sums[i]) })
	section("## Excerpts from the archive that may be relevant", len(snips), func(i int) string { return snippetLine(snips[i]) })
	return lines
}

// fit cuts text to at most max tokens (by halving on rune boundaries).
func (a *Assembler) fit(text string, max int) string {
	if max <= 0 {
		return ""
	}
	if a.count.Count(text) <= max {
		return text
	}
	r := []rune(text)
	lo, hi := 0, len(r)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if a.count.Count(string(r[:mid])) <= max {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return string(r[:lo])
}

// Format renders a breakdown for /context.
func (b Breakdown) Format() string {
	var s strings.Builder
	fmt.Fprintf(&s, "Context for the next reply: %d of %d tokens\n", b.Total, b.Budget)
	for _, p := range b.Parts {
		line := fmt.Sprintf("• %s: %s", p.Name, plural(p.Tokens, "token", "tokens"))
		if p.Budget > 0 {
			line += fmt.Sprintf(" (budget %d)", p.Budget)
		}
		if p.Items > 0 && p.Name != PartSystem && p.Name != PartCurrent {
			line += ", " + plural(p.Items, "item", "items")
		}
		if p.Trimmed > 0 {
			line += fmt.Sprintf(", %d trimmed", p.Trimmed)
		}
		s.WriteString(line + "\n")
		for _, t := range p.Texts {
			s.WriteString("  – " + shorten(strings.TrimPrefix(t, "- "), 300) + "\n")
		}
	}
	if len(b.Snippets) > 0 {
		s.WriteString("Pulled from the archive:\n")
		for _, sn := range b.Snippets {
			fmt.Fprintf(&s, "  – %s (%s, %s): %s\n", sn.Time.Format("2006-01-02"), sn.Role, plural(sn.Tokens, "token", "tokens"), shorten(sn.Text, 200))
		}
	}
	for _, n := range b.Notes {
		s.WriteString("Note: " + n + "\n")
	}
	return strings.TrimRight(s.String(), "\n")
}

// shorten puts text on one line and cuts it after max characters.
func shorten(text string, max int) string {
	r := []rune(strings.Join(strings.Fields(text), " "))
	if len(r) > max {
		r = append(r[:max], '…')
	}
	return string(r)
}

// plural is "1 item", "2 items", "0 items".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
