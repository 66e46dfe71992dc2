package assemble

import (
	"context"
	"fmt"
	"sort"
	"strconv"
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

// DefaultBudget is the budget table of docs/design.md ("The prompt").
var DefaultBudget = Budget{Total: 8000, System: 1500, Memories: 500, Summaries: 2000, Snippets: 1500, Recent: 3000}

// Source is what assembly reads from the store.
//
// Build calls Search and Around concurrently with the other methods.
type Source interface {
	Summaries(ctx context.Context, key pipeline.Key, activeOnly bool) ([]memory.Summary, error)
	Recent(ctx context.Context, key pipeline.Key, limit, tokenBudget int) ([]memory.Message, error)
	Search(ctx context.Context, key pipeline.Key, q memory.Query) ([]memory.Hit, error)
	Around(ctx context.Context, key pipeline.Key, ids []int64) ([]memory.Message, error)
	Memories(ctx context.Context, owner string) ([]memory.UserMemory, error)
	Facts(ctx context.Context, owner, text string, limit int) ([]memory.Fact, error)
}

// Request describes one assembly.
type Request struct {
	Key  pipeline.Key
	Text string // the current message
	// Images are shown to the model with the current message (a photo);
	// their Tokens count in the budget as part of it.
	Images       []llm.Image
	MessageID    string // its platform id, so it is not also counted as a recent turn
	SystemPrompt string
	Memory       bool // the owner's memory is on: summaries and snippets are used
	Facts        bool // facts are injected (memory.facts.enabled)
	MaxMemories  int  // at most this many user memories (default 50)
	// MaxTotal, when above 0, caps the whole prompt below the budget's
	// Total (a model with a smaller context window; see Budget.Within).
	MaxTotal int
	Now      time.Time

	hybrid *hybrid // the similarity ranking of this assembly (hybrid.go)
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
	src    Source
	count  llm.Counter
	budget Budget
	loc    *time.Location // time words in questions ("yesterday") are read here
	// vectors, when set, ranks the archive by meaning too (hybrid.go).
	vectors Vectors
	// feedbackOn: the archive is searched again with the words of the
	// best hits' exchanges (WithFeedback, feedback.go).
	feedbackOn bool
	stems      *stemCache // feedback's
}

// Option configures an Assembler.
type Option func(*Assembler)

// InLocation reads the time words of questions ("yesterday", "in May") in
// loc (memory.timezone); the default is the server's local time.
func InLocation(loc *time.Location) Option {
	return func(a *Assembler) {
		if loc != nil {
			a.loc = loc
		}
	}
}

// New returns an Assembler.
func New(src Source, counter llm.Counter, b Budget, opts ...Option) *Assembler {
	a := &Assembler{src: src, count: counter, budget: b, loc: time.Local, stems: &stemCache{}}
	for _, o := range opts {
		o(a)
	}
	return a
}

// parts is a prompt's content on its way through Build.
type parts struct {
	system, current string
	images          []llm.Image // shown with the current message
	notes           []string
	sums            []memory.Summary
	// noteTok and sumTok are each note's and summary line's tokens, in
	// order (counted once: trimming counts the block again and again).
	noteTok, sumTok []int
	snips           []Snippet
	recent          []memory.Message
	// items dropped to fit, per part
	notesTrimmed, sumTrimmed, snipTrimmed, recentTrimmed int
	truncated                                            bool
}

// Build assembles the prompt for req in three steps: gather each part
// within its own budget, fit the current message, and trim the whole to the
// total.
func (a *Assembler) Build(ctx context.Context, req Request) (Prompt, error) {
	if req.Now.IsZero() {
		req.Now = time.Now()
	}
	if req.MaxMemories <= 0 {
		req.MaxMemories = 50
	}
	req.hybrid = a.newHybrid()
	if req.MaxTotal > 0 && req.MaxTotal < a.budget.Total {
		// A smaller context window: the same assembly on a smaller budget.
		small := *a
		small.budget = a.budget.Within(req.MaxTotal)
		a = &small
	}
	p, err := a.gather(ctx, req)
	if err != nil {
		return Prompt{}, err
	}
	fixed := a.fitCurrent(&p)
	total := a.trim(&p, fixed)
	return a.render(req, p, total), nil
}

// gather loads every part within its own budget: the recent turns, newest
// first; the archive snippets, skipping what the recent turns show; the
// system prompt; memories and facts; summaries, highest level first.
func (a *Assembler) gather(ctx context.Context, req Request) (parts, error) {
	b := a.budget
	p := parts{current: req.Text, images: req.Images}
	// Ask the store for no more than the budget could hold (plus the current
	// message): a long conversation with memory off has many active messages.
	recent, err := a.src.Recent(ctx, req.Key, 0, b.Recent+a.count.Count(req.Text)+perMessage)
	if err != nil {
		return p, fmt.Errorf("loading recent turns of %s: %w", req.Key, err)
	}
	recent, dropped := dropCurrent(recent, req)
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
		p.recentTrimmed = start
		p.recent = recent[start:]
	}
	// The search (the costliest read) runs while the memories and the
	// summaries are loaded and counted.
	type searched struct {
		snips []Snippet
		err   error
	}
	var found chan searched
	if req.Memory && b.Snippets > 0 {
		exclude := make([]int64, 0, len(p.recent)+1)
		for _, m := range p.recent {
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
			snips, err := a.recall(ctx, req, exclude, b.Snippets)
			found <- searched{snips, err}
		}()
	}
	// waitSearch returns the search's result (nil when none was started);
	// every return path below waits for it.
	waitSearch := func() ([]Snippet, error) {
		if found == nil {
			return nil, nil
		}
		r := <-found
		found = nil
		return r.snips, r.err
	}
	defer func() { _, _ = waitSearch() }() // a search still running when Build returns early is only waited for
	p.system = a.cut(req.SystemPrompt, b.System)
	if p.notes, p.noteTok, p.notesTrimmed, err = a.memories(ctx, req); err != nil {
		return p, err
	}
	if req.Memory {
		if p.sums, err = a.src.Summaries(ctx, req.Key, true); err != nil {
			return p, fmt.Errorf("loading summaries of %s: %w", req.Key, err)
		}
	}
	sort.SliceStable(p.sums, func(i, j int) bool {
		if p.sums[i].Level != p.sums[j].Level {
			return p.sums[i].Level > p.sums[j].Level
		}
		return p.sums[i].ID < p.sums[j].ID
	})
	p.sums, p.sumTok, p.sumTrimmed = keepWithin(p.sums, b.Summaries, func(s memory.Summary) int { return a.count.Count(summaryLine(s)) })
	if p.snips, err = waitSearch(); err != nil {
		return p, fmt.Errorf("searching the archive of %s: %w", req.Key, err)
	}
	return p, nil
}

// fitCurrent truncates the current message when it alone is over the total
// (it is always in), and returns the tokens of the system prompt and the two
// messages' framing.
func (a *Assembler) fitCurrent(p *parts) int {
	fixed := a.count.Count(p.system) + perMessage + perMessage + imageTokens(p.images) // system + current framing and images
	room := a.budget.Total - fixed
	if room < 1 {
		room = 1
	}
	if n := a.count.Count(p.current); n > room {
		// The note's own cost comes out of the room (it is ~15 words: more
		// than 20 tokens with some counters).
		note := func(kept int) string {
			return fmt.Sprintf("\n\n[Note: this message was too long; only its beginning was kept (%d of %d tokens).]", kept, n)
		}
		keep := room - a.count.Count(note(room))
		for ; keep > 0; keep-- {
			if cut := a.cut(p.current, keep) + note(keep); a.count.Count(cut) <= room {
				p.current = cut
				break
			}
		}
		if keep <= 0 { // no room even for the note
			p.current = a.cut(p.current, room)
		}
		p.truncated = true
	}
	return fixed
}

// trim drops items while the prompt is over the total: snippets (lowest
// ranked first), then the oldest recent turns, then the oldest / lowest
// summaries, then memories. It returns a function counting the prompt.
//
// The memory block is counted once; while trimming, each dropped item's
// own count is subtracted, and the whole prompt is counted again only
// near the budget (re-tokenizing the block for every drop would cost
// milliseconds a turn). The decisions are those of exact counting.
func (a *Assembler) trim(p *parts, fixed int) func() int {
	currentTok := a.count.Count(p.current)
	exact := func() int {
		return fixed + currentTok + a.partsBlockTokens(p) + tokensOf(p.recent)
	}
	total := a.budget.Total
	estimate, drops := exact(), 0
	over := func() bool {
		// A drop can save a little more than its item (a newline, a
		// section header, the block's framing): allow for that before
		// trusting the estimate.
		if estimate-2*drops-40 > total {
			drops++
			return true
		}
		estimate, drops = exact(), 0
		if estimate > total {
			drops++
			return true
		}
		return false
	}
	for over() && len(p.snips) > 0 {
		estimate -= p.snips[len(p.snips)-1].Tokens
		p.snips = p.snips[:len(p.snips)-1]
		p.snipTrimmed++
	}
	for over() && len(p.recent) > 0 {
		estimate -= p.recent[0].Tokens + perMessage
		p.recent = p.recent[1:]
		p.recentTrimmed++
	}
	for over() && len(p.sums) > 0 {
		// lowest level, oldest first: the list is sorted highest level first
		// and oldest first within a level, so find the last level's oldest.
		idx := len(p.sums) - 1
		for idx > 0 && p.sums[idx-1].Level == p.sums[idx].Level {
			idx--
		}
		estimate -= p.sumTok[idx]
		p.sums = append(p.sums[:idx], p.sums[idx+1:]...)
		p.sumTok = append(p.sumTok[:idx], p.sumTok[idx+1:]...)
		p.sumTrimmed++
	}
	for over() && len(p.notes) > 0 {
		estimate -= p.noteTok[len(p.notes)-1]
		p.notes = p.notes[:len(p.notes)-1]
		p.noteTok = p.noteTok[:len(p.notes)]
		p.notesTrimmed++
	}
	return exact
}

// render turns the parts into the chat messages and their breakdown.
func (a *Assembler) render(req Request, p parts, total func() int) Prompt {
	b := a.budget
	bd := Breakdown{Budget: b.Total}
	if p.truncated {
		bd.Truncated = true
		bd.Notes = append(bd.Notes, "the current message was truncated to fit the budget")
	}
	var msgs []llm.Message
	if p.system != "" {
		msgs = append(msgs, llm.Message{Role: "system", Content: p.system})
	}
	if block := memoryBlock(p.notes, p.sums, p.snips); block != "" {
		msgs = append(msgs, llm.Message{Role: "system", Content: block})
	}
	for _, m := range p.recent {
		role := string(m.Role)
		content := m.Text
		if m.Role == memory.RoleUser && m.SenderName != "" && req.Key.Channel != "console" {
			content = m.SenderName + ": " + content
		}
		msgs = append(msgs, llm.Message{Role: role, Content: content})
	}
	msgs = append(msgs, llm.Message{Role: "user", Content: p.current, Images: p.images})
	if n := len(p.images); n > 0 {
		bd.Notes = append(bd.Notes, fmt.Sprintf("the current message shows the model %d image(s): %d tokens", n, imageTokens(p.images)))
	}

	memTok := 0
	if len(p.notes) > 0 {
		memTok = a.count.Count(strings.Join(p.notes, "\n"))
	}
	sumTok := 0
	sumLines := make([]string, 0, len(p.sums))
	for i, s := range p.sums {
		sumLines = append(sumLines, summaryLine(s))
		sumTok += p.sumTok[i]
	}
	snipTok := 0
	for _, s := range p.snips {
		snipTok += s.Tokens
	}
	bd.Parts = []Part{
		{Name: PartSystem, Tokens: a.count.Count(p.system), Budget: b.System, Items: boolInt(p.system != "")},
		{Name: PartMemories, Tokens: memTok, Budget: b.Memories, Items: len(p.notes), Trimmed: p.notesTrimmed, Texts: p.notes},
		{Name: PartSummaries, Tokens: sumTok, Budget: b.Summaries, Items: len(p.sums), Trimmed: p.sumTrimmed, Texts: sumLines},
		{Name: PartSnippets, Tokens: snipTok, Budget: b.Snippets, Items: len(p.snips), Trimmed: p.snipTrimmed},
		{Name: PartRecent, Tokens: tokensOf(p.recent), Budget: b.Recent, Items: len(p.recent), Trimmed: p.recentTrimmed},
		{Name: PartCurrent, Tokens: a.count.Count(p.current) + imageTokens(p.images), Items: 1},
	}
	bd.Snippets = p.snips
	bd.Total = total()
	if n := req.hybrid.note(a.vectorTimeout()); n != "" {
		bd.Notes = append(bd.Notes, n)
	}
	if !req.Memory {
		bd.Notes = append(bd.Notes, "memory is off for this chat: no summaries or archive snippets (/summary_on turns it on)")
	}
	return Prompt{Messages: msgs, Breakdown: bd}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// memories returns the lines of the memories part within its budget, and
// each one's tokens.
func (a *Assembler) memories(ctx context.Context, req Request) (lines []string, toks []int, trimmed int, err error) {
	mems, err := a.src.Memories(ctx, req.Key.Owner())
	if err != nil {
		return nil, nil, 0, fmt.Errorf("loading memories: %w", err)
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
			return nil, nil, 0, fmt.Errorf("loading facts: %w", err)
		}
		for _, f := range facts {
			all = append(all, "- "+f.Content)
		}
	}
	used := 0
	for _, l := range all {
		n := a.count.Count(l)
		if used+n+1 > a.budget.Memories {
			trimmed++
			continue
		}
		used += n + 1
		lines = append(lines, l)
		toks = append(toks, n)
	}
	return lines, toks, trimmed, nil
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
	// The snippets, the last items, are counted already (countSnippet).
	for _, l := range lines[:len(lines)-len(snips)] {
		n += a.count.Count(l)
	}
	for _, s := range snips {
		n += s.Tokens
	}
	return n + perMessage
}

// partsBlockTokens is blockTokens of p's notes, summaries and snippets,
// from the counts the parts carry: the block is not rendered (trimming
// counts it after every few drops).
func (a *Assembler) partsBlockTokens(p *parts) int {
	lines, n := 0, 0
	section := func(header string, items, tokens int) {
		if items == 0 {
			return
		}
		if lines > 0 {
			lines++ // the empty line before a section
			n += a.count.Count("")
		}
		lines += 1 + items
		n += a.count.Count(header) + tokens
	}
	section(notesHeader, len(p.notes), sumInts(p.noteTok))
	section(sumsHeader, len(p.sums), sumInts(p.sumTok))
	snipTok := 0
	for _, s := range p.snips {
		snipTok += s.Tokens
	}
	section(snipsHeader, len(p.snips), snipTok)
	if lines == 0 {
		return 0
	}
	return n + (lines-1)*a.count.Count("\n") + perMessage
}

func sumInts(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}

// keepWithin keeps items in order while they fit the budget, and returns
// each kept item's cost.
func keepWithin[T any](items []T, budget int, cost func(T) int) ([]T, []int, int) {
	var out []T
	var costs []int
	used, dropped := 0, 0
	for _, it := range items {
		c := cost(it)
		if used+c > budget {
			dropped++
			continue
		}
		used += c
		out = append(out, it)
		costs = append(costs, c)
	}
	return out, costs, dropped
}

func summaryLine(s memory.Summary) string {
	return "[" + s.From.Format("2006-01-02") + " – " + s.To.Format("2006-01-02") + ", level " + strconv.Itoa(s.Level) + "] " + s.Text
}

// memoryBlock renders the memory system message.
func memoryBlock(notes []string, sums []memory.Summary, snips []Snippet) string {
	return strings.Join(blockLines(notes, sums, snips), "\n")
}

// The memory block's section headers.
const (
	notesHeader = "## What you know about the user"
	sumsHeader  = "## Summaries of the earlier conversation"
	snipsHeader = "## Excerpts from the archive that may be relevant"
)

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
	section(notesHeader, len(notes), func(i int) string { return notes[i] })
	section(sumsHeader, len(sums), func(i int) string { return summaryLine(sums[i]) })
	section(snipsHeader, len(snips), func(i int) string { return snippetText(snips[i]) })
	return lines
}

// cut cuts text to at most max tokens (by halving on rune boundaries).
func (a *Assembler) cut(text string, max int) string {
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
			fmt.Fprintf(&s, "  – %s:\n", plural(sn.Tokens, "token", "tokens"))
			for _, l := range strings.Split(FormatSnippet(sn, 60), "\n") {
				s.WriteString("    " + l + "\n")
			}
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

// imageTokens is what images cost in the prompt.
func imageTokens(images []llm.Image) int {
	n := 0
	for _, im := range images {
		n += im.Tokens
	}
	return n
}
