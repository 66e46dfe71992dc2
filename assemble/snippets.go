package assemble

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/recallbot/recall/excerpt"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// Snippet is one block of the archive in the prompt: the exchanges of one
// day around one or more search hits (each the message a hit answers and
// the reply to it, from the same conversation), shown under the day's date
// with the speakers' names, a "…" line between exchanges.
type Snippet struct {
	Messages []SnippetMessage `json:"messages"`
	Tokens   int              `json:"tokens"` // the block's lines, as the prompt carries them
	Score    float64          `json:"score"`  // its rank: the best hit's, plus a share of the others'
}

// SnippetMessage is one message of a snippet.
type SnippetMessage struct {
	ID         int64       `json:"id"`
	PlatformID string      `json:"platform_id,omitempty"`
	Role       memory.Role `json:"role"`
	Sender     string      `json:"sender"` // the speaker's name as the prompt shows it
	Time       time.Time   `json:"time"`
	Text       string      `json:"text"`
	Hit        bool        `json:"hit,omitempty"` // found by the search (not only a neighbour)
	// Gap: the message does not follow the one before it in the block
	// (another exchange of the day begins; the prompt shows "…" between).
	Gap    bool `json:"gap,omitempty"`
	tokens int  // stored count of Text (0: unknown)
	// The line's count after its start, with "Name: " and alone (in a run
	// of one speaker's messages), once counted (countSnippet).
	named, alone int
	counted      bool
}

// Time is when the snippet's first message was written.
func (s Snippet) Time() time.Time {
	if len(s.Messages) == 0 {
		return time.Time{}
	}
	return s.Messages[0].Time
}

// Retrieval's shape (see recall).
const (
	// tokensPerHit: a search returns budget/tokensPerHit hits to build
	// snippets from (30 for 1,500 tokens): a hit's window of three chat
	// messages with its header costs about 80 tokens, and windows share
	// messages, so this fills the budget.
	tokensPerHit = 50
	// exchangeGap: a neighbour belongs to a hit's exchange when it was
	// written at most this long before or after it (a reply the same
	// evening, not the next conversation days later).
	exchangeGap = time.Hour
	// exchangeReach: a hit's context reaches at most this many messages
	// before and after it (the message it answers, the reply, and the one
	// after that), each written within exchangeGap of the one next to it.
	exchangeReach = 2
	// contextShare is the share of a hit's score that the message next to
	// it gains, and each further step the next (a half, a quarter): the
	// words of a question reach its reply, as document expansion by
	// context does, and a reply two messages on still ranks above a weak
	// hit on its own.
	contextShare = 0.5
	// nameBoost multiplies the score of a hit whose sender the question
	// names.
	nameBoost = 1.5
	// dayShare: a hit gains this share of the best hit's score, times its
	// day's matches relative to the best day's (see dayScores).
	dayShare = 0.5
)

// recall finds the archive snippets for a turn: the search's hits, each
// with the message before and after it in the conversation (within
// exchangeGap, never one in exclude), merged where they overlap, ranked,
// and taken while they fit the budget (see fill). A question naming a time ("last
// week", "in May", see parseWhen) searches that time first and fills the
// rest of the budget from the whole archive. The search asks for about as
// many hits as the budget holds; when their blocks leave more than a tenth
// of it empty and there may be more, it asks again for three times as many.
func (a *Assembler) recall(ctx context.Context, req Request, exclude []int64, budget int) ([]Snippet, error) {
	if budget <= 0 {
		return nil, nil
	}
	if req.hybrid == nil {
		req.hybrid = a.newHybrid()
	}
	req.hybrid.start(ctx, a, req, exclude) // the similarity ranking, beside the full-text search (hybrid.go)
	defer req.hybrid.wait()
	limit := max(10, budget/tokensPerHit)
	var fb feedbacks // found by the first pass, searched by every pass
	var near neighbours
	for {
		snips, used, more, err := a.recallPass(ctx, req, exclude, budget, limit, &fb, &near)
		if err != nil || !more || used >= budget-budget/10 || limit >= 1000 {
			return snips, err
		}
		limit *= 3
	}
}

// recallPass is one try of recall with limit hits per search; more reports
// whether a search returned as many as it was asked for.
func (a *Assembler) recallPass(ctx context.Context, req Request, exclude []int64, budget, limit int, fb *feedbacks, near *neighbours) (out []Snippet, used int, more bool, err error) {
	var hits, all []memory.Hit
	text := req.Text
	q := memory.Query{Text: text, Limit: limit, Exclude: exclude}
	if w, ok := parseWhen(req.Text, req.Now, a.loc); ok {
		text = w.rest
		q.Text, q.From, q.To = text, w.from, w.to
		hits, all, err = a.searchWithin(ctx, req.Key, q)
		more = len(hits) >= limit
		if err == nil && len(hits) > 0 {
			hits, err = a.feedback(ctx, req.Key, q, hits, &fb.within, near) // pseudo-relevance feedback (feedback.go)
		}
		q.From, q.To = time.Time{}, time.Time{}
	} else {
		all, err = a.src.Search(ctx, req.Key, q)
	}
	// Whether there may be more is the question's own search's to say: the
	// feedback search finds as many as asked for nearly always.
	full := len(all) >= limit
	// One feedback a question: the time's hits, which rank first, when it
	// names a time that has some.
	if err == nil && len(hits) == 0 {
		all, err = a.feedback(ctx, req.Key, q, all, &fb.all, near)
	}
	if err != nil {
		return nil, 0, false, err
	}
	all = a.fuse(ctx, req, all, limit, exclude) // with the similarity ranking (hybrid.go)
	more = more || full || a.vectors != nil && len(all) >= limit
	// The time-narrowed hits rank first; the others follow.
	if len(hits) > 0 {
		top := hits[0].Score
		for _, h := range all {
			top = max(top, h.Score)
		}
		for i := range hits {
			hits[i].Score += top
		}
	}
	hits = append(hits, all...)
	if len(hits) == 0 {
		return nil, 0, false, nil
	}
	a.dayScores(hits)
	// A question that names a speaker ("what did Anna say about…") ranks
	// that speaker's messages higher: in a group, a name is in so many
	// messages (as their sender) that BM25 gives it no weight.
	if named := namedSenders(text, hits); len(named) > 0 {
		for i := range hits {
			if named[strings.ToLower(hits[i].Message.SenderName)] {
				hits[i].Score *= nameBoost
			}
		}
	}
	skip := make(map[int64]bool, len(exclude))
	for _, id := range exclude {
		skip[id] = true
	}
	score := map[int64]float64{}
	var ids []int64
	for _, h := range hits {
		if skip[h.Message.ID] || (req.MessageID != "" && h.Message.PlatformID == req.MessageID) {
			continue
		}
		if _, dup := score[h.Message.ID]; dup {
			continue
		}
		score[h.Message.ID] = h.Score
		ids = append(ids, h.Message.ID)
	}
	if len(ids) == 0 {
		return nil, 0, more, nil
	}
	// The messages around the hits, exchangeReach each way, and the hits.
	asked := make([]memory.Message, 0, len(ids))
	for _, h := range hits {
		if _, ok := score[h.Message.ID]; ok {
			asked = append(asked, h.Message)
		}
	}
	if err := a.reach(ctx, req.Key, asked, near); err != nil {
		return nil, 0, false, err
	}
	msgs := near.of(ids)
	have := make(map[int64]bool, len(msgs)+len(ids))
	for _, m := range msgs {
		have[m.ID] = true
	}
	for _, h := range hits {
		if _, ok := score[h.Message.ID]; ok && !have[h.Message.ID] {
			have[h.Message.ID] = true
			msgs = append(msgs, h.Message)
		}
	}
	slices.SortFunc(msgs, func(x, y memory.Message) int { return cmp.Compare(x.ID, y.ID) })
	// seeds are the messages whose neighbours msgs holds: the hits and
	// the messages up to exchangeReach-1 from them.
	seeds := make(map[int64]bool, 3*len(ids))
	for i, m := range msgs {
		if _, hit := score[m.ID]; hit {
			for j := max(0, i-exchangeReach+1); j < min(len(msgs), i+exchangeReach); j++ {
				seeds[msgs[j].ID] = true
			}
		}
	}
	follows := exchangeLinks(msgs, seeds)
	out, used = a.fill(msgs, follows, contextScores(msgs, follows, score, seeds), score, skip, req.MessageID, text, budget)
	return out, used, more, nil
}

// exchangeLinks reports for each of msgs (sorted by id, seeds those whose
// neighbours msgs holds) whether the next one comes right after it in the
// conversation, in the same exchange (written within exchangeGap).
func exchangeLinks(msgs []memory.Message, seeds map[int64]bool) []bool {
	out := make([]bool, len(msgs))
	for i := 0; i+1 < len(msgs); i++ {
		out[i] = (seeds[msgs[i].ID] || seeds[msgs[i+1].ID]) && absDur(msgs[i+1].Time.Sub(msgs[i].Time)) <= exchangeGap
	}
	return out
}

// contextScores scores each of msgs (sorted by id: hits and the messages
// around them, follows their exchangeLinks) by its own score, if a hit,
// plus contextShare of each hit next to it in the same exchange,
// contextShare² of each two messages away, and so on up to exchangeReach:
// a message is scored by its context too, so a reply ("yes, loved it!")
// is found through the words of the message it answers. A message the
// hits do not reach scores 0.
func contextScores(msgs []memory.Message, follows []bool, score map[int64]float64, seeds map[int64]bool) []float64 {
	next := func(i int) bool { return i >= 0 && i < len(follows) && follows[i] }
	e := make([]float64, len(msgs))
	for i, m := range msgs {
		own, hit := score[m.ID]
		if !hit {
			continue
		}
		e[i] += own
		if !seeds[m.ID] {
			continue // its neighbours are not known
		}
		for w, d := own, 1; d <= exchangeReach && next(i-d); d++ {
			w *= contextShare
			e[i-d] += w
		}
		for w, d := own, 1; d <= exchangeReach && next(i+d-1); d++ {
			w *= contextShare
			e[i+d] += w
		}
	}
	return e
}

// fill takes messages in the order of their context scores (e, see
// contextScores) while they fit the budget: a hit comes before its
// neighbours, and the neighbours of a strong hit before a weak hit. The
// messages of one day are shown as one block under one date header, in
// time order, a "…" line where one does not follow the one before it: the
// header is paid once a day, which leaves room for more of the archive. A
// day's block ranks where its first message did; the budget is filled
// message by message, none cut (but a long one shortened, see
// shortenLong).
func (a *Assembler) fill(msgs []memory.Message, follows []bool, e []float64, score map[int64]float64, skip map[int64]bool, currentPID, question string, budget int) (out []Snippet, used int) {
	order := make([]int, 0, len(msgs))
	for i, m := range msgs {
		if e[i] > 0 && !skip[m.ID] && !(currentPID != "" && m.PlatformID == currentPID) {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(x, y int) int {
		switch {
		case e[x] > e[y]:
			return -1
		case e[x] < e[y]:
			return 1
		}
		return -cmp.Compare(msgs[x].ID, msgs[y].ID) // newer first on ties
	})
	pos := make(map[int64]int, len(msgs)) // a message's index in msgs
	for i, m := range msgs {
		pos[m.ID] = i
	}
	byDay := map[string]int{} // a day's block in out
	follow := func(x, y SnippetMessage) bool { return pos[y.ID] == pos[x.ID]+1 && follows[pos[x.ID]] }
	for _, i := range order {
		m := msgs[i]
		_, hit := score[m.ID]
		one := Snippet{Score: e[i], Messages: []SnippetMessage{{ID: m.ID, PlatformID: m.PlatformID, Role: m.Role, Sender: senderName(m),
			Time: m.Time, Text: m.Text, Hit: hit, tokens: m.Tokens}}}
		shortenLong(&one, question, max(budget/longShare, minLong))
		day := m.Time.Format("2006-01-02")
		d, ok := byDay[day]
		if !ok {
			a.countSnippet(&one)
			if used+one.Tokens > budget {
				continue
			}
			byDay[day] = len(out)
			out = append(out, one)
			used += one.Tokens
			continue
		}
		if grown, ok := a.insert(&out[d], one.Messages[0], follow, budget-used); ok {
			used += grown
		}
	}
	return out, used
}

// insert adds m to day's block in time order (by id) when it grows the
// block by at most room tokens, and returns by how much; ok false: not
// added. A message that joins two exchanges can shrink the block (the "…"
// line and the next speaker's name go). A message is marked Gap unless
// follow says it comes right after the one before it.
func (a *Assembler) insert(day *Snippet, m SnippetMessage, follow func(prev, next SnippetMessage) bool, room int) (grown int, ok bool) {
	at := len(day.Messages)
	for j, x := range day.Messages {
		if x.ID > m.ID {
			at = j
			break
		}
	}
	// Only the new line and the one after it change (lineTokens).
	before := 0
	if at < len(day.Messages) {
		before = a.lineTokens(day, at)
	}
	m.Gap = at > 0 && !follow(day.Messages[at-1], m)
	day.Messages = slices.Insert(day.Messages, at, m)
	var nextGap bool
	after := a.lineTokens(day, at)
	if at+1 < len(day.Messages) {
		nextGap = day.Messages[at+1].Gap
		day.Messages[at+1].Gap = !follow(m, day.Messages[at+1])
		after += a.lineTokens(day, at+1)
	}
	if grown = after - before; grown <= room {
		day.Tokens += grown
		return grown, true
	}
	day.Messages = slices.Delete(day.Messages, at, at+1)
	if at < len(day.Messages) {
		day.Messages[at].Gap = nextGap
	}
	return 0, false
}

// neighbours are the messages a recall has read around its hits,
// exchangeReach each way, and the hits: feedback reads its best hits'
// first, and the snippets' own read leaves them out.
type neighbours struct {
	reached map[int64]bool           // the hits whose neighbours msgs holds
	msgs    map[int64]memory.Message // those hits and their neighbours
	held    []memory.Message         // msgs by id (sorted); nil when msgs has changed since
}

// reach reads the neighbours of those of hits whose neighbours near does
// not hold yet.
func (a *Assembler) reach(ctx context.Context, key pipeline.Key, hits []memory.Message, near *neighbours) error {
	var rest []memory.Message
	for _, m := range hits {
		if !near.reached[m.ID] && !slices.ContainsFunc(rest, func(r memory.Message) bool { return r.ID == m.ID }) {
			rest = append(rest, m)
		}
	}
	if len(rest) == 0 {
		return nil
	}
	ids := make([]int64, len(rest))
	for i, m := range rest {
		ids[i] = m.ID
	}
	msgs, err := a.around(ctx, key, ids, exchangeReach)
	if err != nil {
		return err
	}
	if near.reached == nil {
		near.reached, near.msgs = map[int64]bool{}, map[int64]memory.Message{}
	}
	for _, m := range rest {
		near.reached[m.ID] = true
		near.msgs[m.ID] = m
	}
	for _, m := range msgs {
		near.msgs[m.ID] = m
	}
	near.held = nil
	return nil
}

// of returns the neighbours of ids (each read by reach) up to exchangeReach
// each way, without ids themselves, sorted by id. near holds every
// message within exchangeReach of a hit it reached, so a hit's neighbours
// are the messages next to it among near's, by id.
func (near *neighbours) of(ids []int64) []memory.Message {
	held := near.sorted()
	in := make(map[int64]bool, len(ids))
	for _, id := range ids {
		in[id] = true
	}
	take := make([]bool, len(held))
	for i, m := range held {
		if in[m.ID] {
			for j := max(0, i-exchangeReach); j <= min(len(held)-1, i+exchangeReach); j++ {
				if !in[held[j].ID] {
					take[j] = true
				}
			}
		}
	}
	var out []memory.Message
	for i, m := range held {
		if take[i] {
			out = append(out, m)
		}
	}
	return out
}

// sorted is every message near holds, by id (feedback's words and the
// snippets read it; it is sorted again only after reach added some). The
// caller does not change it.
func (near *neighbours) sorted() []memory.Message {
	if near.held != nil || len(near.msgs) == 0 {
		return near.held
	}
	near.held = make([]memory.Message, 0, len(near.msgs))
	for _, m := range near.msgs {
		near.held = append(near.held, m)
	}
	slices.SortFunc(near.held, func(x, y memory.Message) int { return cmp.Compare(x.ID, y.ID) })
	return near.held
}

// reacher is a Source that reads the messages several steps around ids at
// once (memory.Store.AroundReach).
type reacher interface {
	AroundReach(ctx context.Context, key pipeline.Key, ids []int64, reach int) ([]memory.Message, error)
}

// around returns the messages up to reach steps before and after each of
// ids, without ids, sorted by id: from one read when the source can, else
// one Around a step (memory.AroundSteps).
func (a *Assembler) around(ctx context.Context, key pipeline.Key, ids []int64, reach int) ([]memory.Message, error) {
	if r, ok := a.src.(reacher); ok {
		return r.AroundReach(ctx, key, ids, reach)
	}
	return memory.AroundSteps(ctx, a.src.Around, key, ids, reach)
}

// withinSearcher is a Source that answers a question naming a time from
// one search: its hits in that time and in the whole archive
// (memory.Store.SearchWithin).
type withinSearcher interface {
	SearchWithin(ctx context.Context, key pipeline.Key, q memory.Query) (within, all []memory.Hit, err error)
}

// searchWithin returns q's hits within its time range and the same query's
// over the whole archive: from one search when the source can, else two.
func (a *Assembler) searchWithin(ctx context.Context, key pipeline.Key, q memory.Query) (within, all []memory.Hit, err error) {
	if ws, ok := a.src.(withinSearcher); ok {
		return ws.SearchWithin(ctx, key, q)
	}
	if within, err = a.src.Search(ctx, key, q); err != nil {
		return nil, nil, err
	}
	q.From, q.To = time.Time{}, time.Time{}
	all, err = a.src.Search(ctx, key, q)
	return within, all, err
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// dayScores adds to each hit a share of its day's: the sum of the scores of
// the hits written that day (in the assembler's time zone), relative to the
// best day's, times dayShare and the best hit's score. A conversation keeps
// to a topic for a while: a message of the day the question's words keep
// coming up ranks above one where they come up once (the day's talk is the
// context BM25 does not see in a single message). Scores are a cluster's
// evidence added to a document's own, as in cluster-based retrieval.
func (a *Assembler) dayScores(hits []memory.Hit) {
	if len(hits) < 2 {
		return
	}
	day := make([]int, len(hits))
	days := make(map[int]float64, len(hits))
	top := 0.0
	for i, h := range hits {
		day[i] = a.day(h.Message.Time)
		days[day[i]] += h.Score
		top = max(top, h.Score)
	}
	best := 0.0
	for _, v := range days {
		best = max(best, v)
	}
	if best <= 0 {
		return
	}
	for i := range hits {
		hits[i].Score += dayShare * top * days[day[i]] / best
	}
}

// day is t's calendar day in the assembler's time zone, as a number
// (year × 1000 + day of the year).
func (a *Assembler) day(t time.Time) int {
	if a.loc != nil {
		t = t.In(a.loc)
	}
	return t.Year()*1000 + t.YearDay()
}

// longShare: a message longer than a longShare-th of the snippet budget (a
// document, a pasted text) is shown as its parts relevant to the question.
const longShare = 3

// minLong is the fewest tokens a message must have to be shortened: a chat
// message is never cut, even under a small budget.
const minLong = 200

// shortenLong replaces the text of each message of s longer than max
// tokens (about 4 bytes a token) by the parts of it most relevant to
// question (excerpt.Of): whole, one document would spend the budget, or
// not fit at all; the rest of it stays in memory, found by other
// questions.
func shortenLong(s *Snippet, question string, max int) {
	maxBytes := 4 * max
	for i := range s.Messages {
		m := &s.Messages[i]
		if long := m.tokens > max || (m.tokens <= 0 && len(m.Text) > maxBytes); !long {
			continue
		}
		part := excerpt.Of(m.Text, question, maxBytes)
		if part == "" || len(part) > maxBytes {
			part = strings.ToValidUTF8(m.Text[:min(len(m.Text), maxBytes)], "")
		}
		m.Text, m.tokens = part, 0
	}
}

// senderName is how a snippet names a message's author.
func senderName(m memory.Message) string {
	switch {
	case m.Role == memory.RoleAssistant:
		return "assistant"
	case m.Role == memory.RoleSystem:
		return "system"
	case m.SenderName != "" && m.Key.Channel != "console":
		return m.SenderName
	}
	return "user"
}

// snippetLines renders a snippet: one line per message, "Name: text", the
// first of each day after its date, a "…" line where another exchange
// begins; a message that goes on from its speaker's previous one (same
// exchange, same day) is its text alone, as a chat shows a run of messages
// under one name.
func snippetLines(s Snippet) []string {
	lines := make([]string, 0, len(s.Messages))
	for i, m := range s.Messages {
		line := flatten(m.Text)
		switch lineStart(s, i) {
		case startDay:
			line = dateHeader(m.Time) + " " + m.Sender + ": " + line
		case startGap:
			lines = append(lines, gapLine)
			line = m.Sender + ": " + line
		case startSpeaker:
			line = m.Sender + ": " + line
		}
		lines = append(lines, line)
	}
	return lines
}

// How a snippet's line begins (lineStart).
const (
	startSpeaker = iota // "Name: "
	startDay            // the date, then "Name: " (a new day)
	startGap            // a "…" line before it, then "Name: " (another exchange)
	startGoesOn         // nothing: the same speaker goes on
)

// lineStart is how message i of s begins its line.
func lineStart(s Snippet, i int) int {
	m := s.Messages[i]
	switch {
	case i == 0 || !sameDate(m.Time, s.Messages[i-1].Time):
		return startDay
	case m.Gap:
		return startGap
	case m.Sender == s.Messages[i-1].Sender:
		return startGoesOn
	}
	return startSpeaker
}

// sameDate reports whether x and y fall on one calendar date (each in its
// own location, as its header shows it).
func sameDate(x, y time.Time) bool {
	y1, m1, d1 := x.Date()
	y2, m2, d2 := y.Date()
	return y1 == y2 && m1 == m2 && d1 == d2
}

// gapLine stands between two exchanges of one block.
const gapLine = "…"

// dateHeader is "[Mon 2026-01-05]".
func dateHeader(t time.Time) string { return "[" + t.Format("Mon 2006-01-02") + "]" }

// flatten keeps a message on its line.
func flatten(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// snippetText is the snippet as the prompt carries it.
func snippetText(s Snippet) string { return strings.Join(snippetLines(s), "\n") }

// countSnippet sets s.Tokens from the messages' stored counts (taken by the
// same counter when they were stored), so that a turn does not tokenize the
// text of dozens of archived messages again. Each line is counted in pieces
// that repeat from turn to turn (the counter caches them): the date, the
// speaker's "Name:", a space between pieces, and the stored count of the
// text. A counter splits text at the "]" and ":" ending the first pieces,
// and a space joins the word after it at most one token dearer than alone:
// this is at least the line's exact count and at most a token or two more
// (TestBlockTokensBound). A line that goes on from its speaker's previous
// one is its text's stored count alone, and a "…" line its own count. A
// message without a stored count, or whose text was flattened, is counted
// whole.
func (a *Assembler) countSnippet(s *Snippet) {
	n := 0
	for i := range s.Messages {
		n += a.lineTokens(s, i)
	}
	s.Tokens = n
}

// lineTokens is what message i of s adds to the block's count (see
// countSnippet): its line, the newline before it, and a date or "…" line
// it starts with. It depends on message i and the one before it only.
func (a *Assembler) lineTokens(s *Snippet, i int) int {
	space, newline := a.count.Count(" "), a.count.Count("\n")
	n := 0
	if i > 0 {
		n += newline
	}
	m := s.Messages[i]
	start := lineStart(*s, i)
	switch start {
	case startDay:
		n += a.count.Count(dateHeader(m.Time)) + space
	case startGap:
		n += a.count.Count(gapLine) + newline
	}
	if !m.counted {
		if m.tokens > 0 && !strings.ContainsAny(m.Text, "\r\n") {
			m.named, m.alone = a.count.Count(m.Sender+":")+space+m.tokens, m.tokens
		} else {
			text := flatten(m.Text)
			m.named, m.alone = a.count.Count(m.Sender+": "+text), a.count.Count(text)
		}
		m.counted = true
		s.Messages[i] = m
	}
	if start == startGoesOn {
		return n + m.alone
	}
	return n + m.named
}

// FormatSnippet renders a snippet for a user (/search, /context): its
// date, then each message shortened to width runes.
func FormatSnippet(s Snippet, width int) string {
	var b strings.Builder
	for i, line := range snippetLines(s) {
		if i > 0 {
			b.WriteString("\n")
		}
		r := []rune(line)
		if width > 0 && len(r) > width {
			r = append(r[:width], '…')
		}
		b.WriteString(string(r))
	}
	return b.String()
}

// Search finds snippets of the whole conversation for text (/search) the
// way a turn finds them, recent messages included, within budget tokens.
func (a *Assembler) Search(ctx context.Context, key pipeline.Key, text string, budget int) ([]Snippet, error) {
	snips, err := a.recall(ctx, Request{Key: key, Text: text, Now: time.Now()}, nil, budget)
	if err != nil {
		return nil, fmt.Errorf("searching %s: %w", key, err)
	}
	return snips, nil
}

// namedSenders returns the senders (lowercased names) of hits that text
// names: a word of the text is a word of their name.
func namedSenders(text string, hits []memory.Hit) map[string]bool {
	words := map[string]bool{}
	for _, w := range memory.Terms(text) {
		words[w] = true
	}
	var out map[string]bool
	for _, h := range hits {
		n := strings.ToLower(h.Message.SenderName)
		if n == "" || h.Message.Role != memory.RoleUser || out[n] {
			continue
		}
		for _, w := range memory.Terms(n) {
			if words[w] {
				if out == nil {
					out = map[string]bool{}
				}
				out[n] = true
				break
			}
		}
	}
	return out
}
