package assemble

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// Vectors ranks a conversation's messages by meaning (package embed): the
// other half of hybrid retrieval, fused with full-text search.
type Vectors interface {
	// Similar returns up to limit messages of the conversation most
	// similar to text, best first, none of exclude. It makes at most one
	// call to the embeddings endpoint, within its own short deadline; an
	// error means no ranking by meaning this time (the turn goes on with
	// full text); an error with a Note() string method says why in
	// /context. No vectors yet: no hits and no error.
	Similar(ctx context.Context, key pipeline.Key, text string, limit int, exclude []int64) ([]memory.Hit, error)
	// Timeout is the deadline of that call (what /context names).
	Timeout() time.Duration
}

// WithVectors fuses full-text ranks with similarity ranks from v (reciprocal
// rank fusion) when archive snippets are searched.
func WithVectors(v Vectors) Option {
	return func(a *Assembler) { a.vectors = v }
}

// Fusion's shape.
const (
	// rrfK is reciprocal rank fusion's constant: a message at rank r of a
	// list scores 1/(rrfK+r); the usual 60 keeps the tail of each list
	// from counting for nothing.
	rrfK = 60
	// vectorHits is how many messages the similarity ranking brings per
	// question, whatever the pass: about the number of hits a 1,500-token
	// budget holds, twice.
	vectorHits = 60
)

// hybrid is one assembly's similarity ranking: started once, as the
// search starts, so that it runs beside the full-text search and the
// passes of a search share one call to the endpoint.
type hybrid struct {
	done chan struct{} // closed when hits and err are set; nil: not started
	hits []memory.Hit
	err  error
}

// start ranks the archive by similarity to the question (its words
// without the time words, as the full-text search reads it) in the
// background; wait waits for it.
func (h *hybrid) start(ctx context.Context, a *Assembler, req Request, exclude []int64) {
	if h == nil || h.done != nil {
		return
	}
	text := req.Text
	if w, ok := parseWhen(req.Text, req.Now, a.loc); ok {
		text = w.rest
	}
	h.done = make(chan struct{})
	go func() {
		defer close(h.done)
		h.hits, h.err = a.vectors.Similar(ctx, req.Key, text, vectorHits, exclude)
	}()
}

// wait returns once a started ranking is done.
func (h *hybrid) wait() {
	if h != nil && h.done != nil {
		<-h.done
	}
}

// newHybrid returns the similarity ranking of one assembly, nil without
// Vectors.
func (a *Assembler) newHybrid() *hybrid {
	if a.vectors == nil {
		return nil
	}
	return &hybrid{}
}

// fuse merges the full-text hits of a search of the whole archive with the
// messages most similar to the question (reciprocal rank fusion): a
// message's score is the sum of 1/(60+rank) over the lists it is in, so one
// found by both ranks first, and one found by meaning alone is in. At most
// limit hits are kept. Without Vectors, or when the similarity ranking
// fails (the note says so in /context), the full-text hits stay as they
// are.
func (a *Assembler) fuse(ctx context.Context, req Request, fullText []memory.Hit, limit int, exclude []int64) []memory.Hit {
	h := req.hybrid
	if a.vectors == nil || h == nil {
		return fullText
	}
	h.start(ctx, a, req, exclude) // started by recall already
	h.wait()
	if h.err != nil || len(h.hits) == 0 {
		return fullText
	}
	score := map[int64]float64{}
	msg := map[int64]memory.Message{}
	var order []int64
	add := func(hits []memory.Hit) {
		for r, x := range hits {
			id := x.Message.ID
			if req.MessageID != "" && x.Message.PlatformID == req.MessageID {
				continue
			}
			if _, ok := msg[id]; !ok {
				msg[id] = x.Message
				order = append(order, id)
			}
			score[id] += 1 / float64(rrfK+r+1)
		}
	}
	add(fullText)
	add(h.hits)
	slices.SortStableFunc(order, func(x, y int64) int {
		switch {
		case score[x] > score[y]:
			return -1
		case score[x] < score[y]:
			return 1
		}
		return 0
	})
	if len(order) > limit {
		order = order[:limit]
	}
	out := make([]memory.Hit, len(order))
	for i, id := range order {
		// Scaled so that fused scores sit in the range of BM25's.
		out[i] = memory.Hit{Message: msg[id], Score: score[id] * rrfK}
	}
	return out
}

// note is what /context says about the similarity ranking of this
// assembly ("" when it was not asked for).
func (h *hybrid) note(timeout time.Duration) string {
	if h == nil || h.done == nil {
		return ""
	}
	var n interface{ Note() string }
	switch {
	case errors.As(h.err, &n):
		return n.Note()
	case errors.Is(h.err, context.DeadlineExceeded):
		return fmt.Sprintf("the embeddings endpoint did not answer within %s: archive snippets were found by full-text search only", timeout)
	case h.err != nil:
		return "the embeddings endpoint failed: archive snippets were found by full-text search only"
	case len(h.hits) == 0:
		return "no message of this conversation is embedded yet: archive snippets were found by full-text search only"
	}
	return "archive snippets: full-text search fused with embeddings"
}

func (a *Assembler) vectorTimeout() time.Duration {
	if a.vectors == nil {
		return 0
	}
	return a.vectors.Timeout()
}
