package assemble

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// WithFeedback searches the archive twice for snippets: the question, then
// the words of the exchanges it found best (pseudo-relevance feedback, see
// feedback). It finds more of what answers a question in other words
// (REALTALK recall 0.702 from 0.691, bench --only=recall) for about 0.6 ms
// more a turn at 100,000 archived messages (docs/figures.md, note 15). The bot
// turns it on unless memory.feedback is false.
func WithFeedback() Option {
	return func(a *Assembler) { a.feedbackOn = true }
}

// Feedback's shape: pseudo-relevance feedback as RM3 does it, with the IR
// literature's usual values (RM3's 10 documents and 10 words; the
// question's share in its usual 0.5–0.9); docs/figures.md, note 15, has the recall
// across nearby values.
const (
	fbDocs  = 10  // the best hits whose exchanges give the words
	fbTerms = 10  // expansion words
	fbOrig  = 0.8 // the question's words' share of the expanded query
	// fbCommon: an expansion word in more than this share of the
	// conversation's messages is left out (memory.Query.MaxShare).
	fbCommon = 0.1
	// fbMaxAsked: a question of more search words than this is searched
	// as it is: it says more than the expansion would add (feedback helps
	// short questions, whose words miss the answer's), and its own search
	// already costs the most (a long message is the slowest turn).
	fbMaxAsked = fbTerms
)

// feedbacks are a recall's expansions: of its hits in the time the
// question names, and over the whole archive.
type feedbacks struct{ within, all expansion }

// expansion is one question's expansion words (pseudo-relevance feedback),
// found once per assembly and searched by every pass of recall.
type expansion struct {
	done  bool
	words []string // none: no feedback
}

// feedback is pseudo-relevance feedback (RM3) over the conversation's own
// archive. The exchanges of the best hits of the question (each hit with
// the messages before and after it, as a snippet shows it) are taken as
// relevant; their likeliest words (P(w|R): each exchange weighted by its
// hit's share of the scores, its words evenly), the question's own words
// and stopwords left out, are searched too, and the search's BM25 weighs each
// by its rarity in the conversation, as RM3's second retrieval does (a
// word of every other message adds next to nothing). A message then
// scores as the expanded query would: fbOrig of the question's BM25 per
// word, the rest the expansion words' per word. So a message that answers
// the question in other words than it, in the words of the talk where the
// question's words came up, is found: "where did Jack go on holiday?"
// finds "we landed in Lisbon" through the exchanges that spoke of the
// holiday and the flight. It costs a read of the best hits' neighbours and
// a second search, beside the read of the other hits' neighbours
// (docs/figures.md, note 15); off without WithFeedback. A question of more than fbMaxAsked
// words is searched as it is.
func (a *Assembler) feedback(ctx context.Context, key pipeline.Key, q memory.Query, hits []memory.Hit, exp *expansion, near *neighbours) ([]memory.Hit, error) {
	if !a.feedbackOn {
		return hits, nil
	}
	asked := len(memory.Terms(q.Text))
	if asked > fbMaxAsked {
		return hits, nil
	}
	if !exp.done {
		exp.done = true
		exp.words = a.expansionWords(ctx, key, q.Text, hits, near)
	}
	if len(exp.words) == 0 {
		return hits, nil
	}
	q.Text, q.MaxShare, q.TextOnly = strings.Join(exp.words, " "), fbCommon, true
	// While the words are searched, the neighbours of the question's own
	// hits are read (the snippets need them): the turn waits for the
	// longer of the two, not both.
	read := make(chan error, 1)
	go func() {
		msgs := make([]memory.Message, len(hits))
		for i, h := range hits {
			msgs[i] = h.Message
		}
		read <- a.reach(ctx, key, msgs, near)
	}()
	more, err := a.src.Search(ctx, key, q)
	if rerr := <-read; err == nil {
		err = rerr
	}
	if err != nil {
		return nil, err
	}
	score := map[int64]float64{}
	msg := map[int64]memory.Message{}
	var ids []int64
	add := func(hs []memory.Hit, w float64) {
		for _, h := range hs {
			id := h.Message.ID
			if _, ok := msg[id]; !ok {
				msg[id] = h.Message
				ids = append(ids, id)
			}
			score[id] += w * h.Score
		}
	}
	add(hits, fbOrig/float64(asked))
	add(more, (1-fbOrig)/float64(len(exp.words)))
	slices.SortStableFunc(ids, func(x, y int64) int { return cmpDesc(score[x], score[y]) })
	ids = ids[:min(len(ids), max(q.Limit, len(hits)))]
	// Scaled back to the question's BM25 (the day and name boosts add to
	// it).
	scale := float64(asked) / fbOrig
	out := make([]memory.Hit, len(ids))
	for i, id := range ids {
		out[i] = memory.Hit{Message: msg[id], Score: score[id] * scale}
	}
	return out, nil
}

// expansionWords picks the expansion words of text from its hits (see
// feedback): none when there are too few hits to learn from.
func (a *Assembler) expansionWords(ctx context.Context, key pipeline.Key, text string, hits []memory.Hit, near *neighbours) []string {
	if len(hits) < 2 {
		return nil
	}
	asked := map[string]bool{}
	for _, w := range memory.Terms(text) {
		asked[a.stems.of(w)] = true
	}
	if len(asked) == 0 {
		return nil
	}
	top := hits[:min(fbDocs, len(hits))]
	total := 0.0
	msgs := make([]memory.Message, len(top))
	for i, h := range top {
		total += h.Score
		msgs[i] = h.Message
	}
	if total <= 0 {
		return nil
	}
	// Each hit's exchange: the hit and its neighbours within exchangeGap,
	// read as the snippets will read them (near).
	if err := a.reach(ctx, key, msgs, near); err != nil {
		return nil
	}
	around := near.sorted()
	texts := make([]string, len(top))
	for i, h := range top {
		texts[i] = h.Message.Text
		j, found := slices.BinarySearchFunc(around, h.Message.ID, func(m memory.Message, id int64) int { return cmp.Compare(m.ID, id) })
		if !found {
			continue
		}
		if j > 0 && absDur(around[j-1].Time.Sub(h.Message.Time)) <= exchangeGap {
			texts[i] += " " + around[j-1].Text
		}
		if j+1 < len(around) && absDur(around[j+1].Time.Sub(h.Message.Time)) <= exchangeGap {
			texts[i] += " " + around[j+1].Text
		}
	}
	// P(w|R): each exchange by its hit's share of the scores, its words
	// evenly.
	rel := map[string]float64{}
	word := map[string]string{} // a stem's word as first seen
	var order []string
	for i, h := range top {
		var stems []string
		for _, w := range memory.Terms(texts[i]) {
			s := a.stems.of(w)
			if s == "" || strings.Contains(s, " ") || asked[s] || slices.Contains(stems, s) {
				continue
			}
			stems = append(stems, s)
			if _, ok := word[s]; !ok {
				word[s] = w
				order = append(order, s)
			}
		}
		for _, s := range stems {
			rel[s] += h.Score / total / float64(len(stems))
		}
	}
	// The likeliest fbTerms words (the first seen of equals).
	slices.SortStableFunc(order, func(x, y string) int { return cmpDesc(rel[x], rel[y]) })
	words := make([]string, 0, fbTerms)
	for _, s := range order[:min(len(order), fbTerms)] {
		words = append(words, word[s])
	}
	return words
}

func cmpDesc(x, y float64) int {
	switch {
	case x > y:
		return -1
	case x < y:
		return 1
	}
	return 0
}

// stemCache remembers how the search reads words (memory.Stem), for
// feedback: the words of a conversation's exchanges come up turn after
// turn, and stemming them again cost a turn about as much as reading them.
// It holds at most stemCacheSize words, emptied when full.
type stemCache struct {
	mu sync.Mutex
	m  map[string]string
}

const stemCacheSize = 1 << 12

// of is memory.Stem(w); a nil cache stems every time.
func (c *stemCache) of(w string) string {
	if c == nil {
		return memory.Stem(w)
	}
	c.mu.Lock()
	s, ok := c.m[w]
	c.mu.Unlock()
	if ok {
		return s
	}
	s = memory.Stem(w)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= stemCacheSize {
		c.m = make(map[string]string)
	}
	c.m[w] = s
	c.mu.Unlock()
	return s
}
