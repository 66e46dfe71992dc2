package embed

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// SearcherOptions configure a Searcher.
type SearcherOptions struct {
	// Timeout bounds the question's embedding (memory.embeddings.timeout,
	// default 300 ms): past it the turn answers from full text alone.
	Timeout time.Duration
	// MaxBytes bounds the in-memory indexes of all conversations together
	// (default 256 MiB: about 5 million messages at 256 dimensions, 1.3
	// million at 1,536); the least recently searched conversations are
	// dropped first and loaded again when searched.
	MaxBytes int
	// Candidates is how many messages per wanted hit the sign-bit scan
	// passes on to be scored exactly (default 4).
	Candidates int
	Log        *slog.Logger
}

// Searcher ranks a conversation's messages by the cosine similarity of
// their vectors to a question's. It is safe for concurrent use; its
// indexes are bounded by SearcherOptions.MaxBytes.
type Searcher struct {
	store Store
	model Model
	opts  SearcherOptions

	mu    sync.Mutex
	convs map[pipeline.Key]*convIndex
	clock int64 // ticks on every search: the LRU order
}

// convIndex is one conversation's index, per model.
type convIndex struct {
	mu     sync.Mutex
	seq    int64 // rows of message_embeddings up to this one are in
	models map[string]*codes
	used   int64 // Searcher.clock at the last search
	size   int   // bytes, as of the last search
}

// NewSearcher returns a Searcher.
func NewSearcher(store Store, model Model, o SearcherOptions) *Searcher {
	if o.Timeout <= 0 {
		o.Timeout = 300 * time.Millisecond
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 256 << 20
	}
	if o.Candidates <= 0 {
		o.Candidates = 4
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Searcher{store: store, model: model, opts: o, convs: map[pipeline.Key]*convIndex{}}
}

// Model is the configured embeddings model.
func (s *Searcher) Model() string { return s.model.Model() }

// Timeout is how long a question's embedding may take.
func (s *Searcher) Timeout() time.Duration { return s.opts.Timeout }

// loadPage is how many vectors one read of an index brings.
const loadPage = 20_000

// Similar returns up to limit messages of the conversation most similar in
// meaning to text, best first (Score: the cosine similarity, above 0), none
// of exclude. It makes one call to the embeddings endpoint, bounded by the
// Timeout: an error (errors.Is context.DeadlineExceeded when it was too
// slow) means no ranking by meaning this time. While a change of model is
// being embedded, the model with more of the conversation's messages
// serves. No vectors yet: no hits and no error.
func (s *Searcher) Similar(ctx context.Context, key pipeline.Key, text string, limit int, exclude []int64) ([]memory.Hit, error) {
	if limit <= 0 || strings.TrimSpace(text) == "" {
		return nil, nil
	}
	ix := s.index(key)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := s.refresh(ctx, key, ix); err != nil {
		return nil, err
	}
	model, c := s.serving(ix)
	if c == nil || len(c.ids) == 0 {
		return nil, nil
	}
	ectx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	qs, err := s.model.Embed(ectx, model, []string{clip(text)})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("embedding the question: %w", err)
	}
	q := normalize(qs[0])
	if len(q) != c.dims {
		return nil, fmt.Errorf("the question's embedding by %s has %d dimensions, unlike the stored vectors (memory.embeddings.dimensions changed?)", model, len(q))
	}
	skip := make(map[int64]bool, len(exclude))
	for _, id := range exclude {
		skip[id] = true
	}
	ids := c.nearest(q, limit*s.opts.Candidates, skip)
	found, err := s.store.VectorsOf(ctx, key, model, ids)
	if err != nil {
		return nil, err
	}
	if len(found) < len(ids) { // purged since they were indexed
		have := make(map[int64]bool, len(found))
		for _, f := range found {
			have[f.Message.ID] = true
		}
		var gone []int64
		for _, id := range ids {
			if !have[id] {
				gone = append(gone, id)
			}
		}
		c.remove(gone)
	}
	hits := make([]memory.Hit, 0, len(found))
	for _, f := range found {
		if sim := float64(dot(q, f.Vec)); sim > 0 {
			hits = append(hits, memory.Hit{Message: f.Message, Score: sim})
		}
	}
	slices.SortStableFunc(hits, func(a, b memory.Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		case a.Message.ID > b.Message.ID: // newer first on ties
			return -1
		case a.Message.ID < b.Message.ID:
			return 1
		}
		return 0
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}

// index returns the conversation's index, making room for it within
// MaxBytes by dropping the least recently searched others.
func (s *Searcher) index(key pipeline.Key) *convIndex {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock++
	ix, ok := s.convs[key]
	if !ok {
		ix = &convIndex{models: map[string]*codes{}}
		s.convs[key] = ix
	}
	ix.used = s.clock
	total := 0
	for _, o := range s.convs {
		total += o.size
	}
	for total > s.opts.MaxBytes && len(s.convs) > 1 {
		var oldest pipeline.Key
		var o *convIndex
		for k, c := range s.convs {
			if c != ix && (o == nil || c.used < o.used) {
				oldest, o = k, c
			}
		}
		total -= o.size
		delete(s.convs, oldest)
	}
	return ix
}

// refresh reads the vectors stored since the index last looked.
func (s *Searcher) refresh(ctx context.Context, key pipeline.Key, ix *convIndex) error {
	for {
		rows, err := s.store.VectorsSince(ctx, key, ix.seq, loadPage)
		if err != nil {
			return err
		}
		for _, r := range rows {
			c := ix.models[r.Model]
			if c == nil {
				c = newCodes(len(r.Vec))
				ix.models[r.Model] = c
			}
			c.put(r.MessageID, r.Vec)
			ix.seq = r.Seq
		}
		if len(rows) < loadPage {
			break
		}
	}
	ix.size = 0
	for _, c := range ix.models {
		ix.size += c.bytes()
	}
	return nil
}

// serving picks the model whose vectors answer: the configured one unless
// an earlier model still covers more of the conversation (a change of
// model being embedded).
func (s *Searcher) serving(ix *convIndex) (string, *codes) {
	model := s.model.Model()
	best := ix.models[model]
	for m, c := range ix.models {
		if m != model && (best == nil || len(c.ids) > len(best.ids)) {
			model, best = m, c
		}
	}
	// An earlier model no longer needed frees its memory.
	if cur := ix.models[s.model.Model()]; cur != nil && best == cur {
		for m := range ix.models {
			if m != model {
				delete(ix.models, m)
			}
		}
	}
	return model, best
}

// Coverage counts the conversation's messages embedded by the configured
// model, and those that can be (for /summary_status).
func (s *Searcher) Coverage(ctx context.Context, key pipeline.Key) (done, total int64, err error) {
	return s.store.EmbeddingCoverage(ctx, key, s.model.Model())
}
