package embed

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
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
	// (default 256 MiB: about 800,000 messages at 256 dimensions, 150,000
	// at 1,536); the least recently searched conversations are dropped
	// first and loaded again when searched.
	MaxBytes int
	// Candidates is how many messages per wanted hit the sign-bit scan
	// passes on to be scored by their 8-bit vectors (default 4).
	Candidates int
	// LoadWait is how long a search waits for the first load of its
	// conversation's index (default 300 ms); a bigger archive goes on
	// loading in the background while the turns use full text (Loading).
	LoadWait time.Duration
	// JSON, when set, holds the vectors of the owners on JSON storage
	// (beside their files); nil: their conversations have none.
	JSON JSONStore
	// Notified: the one writer of vectors (the bot's Worker) calls Stored
	// after each batch, so a search reads the store for new vectors only
	// then; otherwise every search looks.
	Notified bool
	Log      *slog.Logger
}

// Loading is the error of a search whose conversation's vectors are still
// being loaded into memory (the first search since the start).
type Loading struct{ Key pipeline.Key }

func (e Loading) Error() string {
	return "the vectors of " + e.Key.String() + " are still being loaded"
}

// Note is what /context says.
func (e Loading) Note() string {
	return "the archive's embeddings are still being loaded (the first search since the bot started): archive snippets were found by full-text search only"
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

	stored atomic.Int64 // batches stored (Stored), with Notified

	base   context.Context // the loads' context, cancelled by Close
	cancel context.CancelFunc
	loads  sync.WaitGroup
}

// convIndex is one conversation's index, per model.
type convIndex struct {
	loading chan struct{} // closed when the first load ends (guarded by Searcher.mu)
	loadErr error         // its error (read after loading is closed)

	mu     sync.Mutex
	seq    int64 // rows of message_embeddings up to this one are in
	models map[string]*codes
	loaded bool  // the first load is done (guarded by Searcher.mu)
	seen   int64 // Searcher.stored as of the last refresh (with Notified)
	inFile bool  // the vectors are a JSON owner's (its ids are the file's)
	used   int64 // Searcher.clock at the last search (guarded by Searcher.mu)
	size   int   // bytes, as of the last search (guarded by Searcher.mu)
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
	if o.LoadWait <= 0 {
		o.LoadWait = 300 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	base, cancel := context.WithCancel(context.Background())
	return &Searcher{store: store, model: model, opts: o, convs: map[pipeline.Key]*convIndex{}, base: base, cancel: cancel}
}

// Close stops the loads in progress and waits for them (until ctx ends).
func (s *Searcher) Close(ctx context.Context) error {
	s.cancel()
	done := make(chan struct{})
	go func() { s.loads.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stopping the loads of vector indexes: %w", ctx.Err())
	}
}

// ready waits up to LoadWait for the first load of the conversation's
// index, starting it if none runs; a load that takes longer goes on in the
// background (Loading).
func (s *Searcher) ready(ctx context.Context, key pipeline.Key, ix *convIndex) error {
	s.mu.Lock()
	if ix.loaded {
		s.mu.Unlock()
		return nil
	}
	ch := ix.loading
	if ch == nil {
		ch = make(chan struct{})
		ix.loading = ch
		s.loads.Add(1)
		go func() {
			defer s.loads.Done()
			err := s.load(s.base, key, ix)
			s.mu.Lock()
			ix.loadErr = err
			if err == nil {
				ix.loaded = true
			}
			ix.loading = nil // a failed load is tried again by the next search
			s.mu.Unlock()
			close(ch)
			if err != nil && s.base.Err() == nil {
				s.opts.Log.Warn("loading the vectors of a conversation failed", "key", key, "err", err)
			}
		}()
	}
	s.mu.Unlock()
	t := time.NewTimer(s.opts.LoadWait)
	defer t.Stop()
	select {
	case <-ch:
		return ix.loadErr
	case <-t.C:
		return Loading{Key: key}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// load reads the conversation's vectors into ix: through its messages,
// then what was stored meanwhile comes with the rows since seq.
func (s *Searcher) load(ctx context.Context, key pipeline.Key, ix *convIndex) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	src := s.src(key)
	seq, err := src.LastVectorSeq(ctx, key)
	if err != nil {
		return err
	}
	if err := src.ConversationVectors(ctx, key, ix.put); err != nil {
		return err
	}
	ix.seq = seq
	return nil
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
	if err := s.ready(ctx, key, ix); err != nil {
		return nil, err
	}
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
	top := c.best(q, limit, s.opts.Candidates, skip)
	ids := make([]int64, len(top))
	for i, x := range top {
		ids[i] = x.id
	}
	msgs, err := s.src(key).MessagesOf(ctx, key, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]memory.Message, len(msgs))
	for _, m := range msgs {
		byID[m.ID] = m
	}
	hits := make([]memory.Hit, 0, len(top))
	var gone []int64
	for _, x := range top {
		m, ok := byID[x.id]
		if !ok { // purged since it was indexed
			gone = append(gone, x.id)
			continue
		}
		hits = append(hits, memory.Hit{Message: m, Score: float64(x.sim)})
	}
	c.remove(gone)
	return hits, nil
}

// index returns the conversation's index, making room for it within
// MaxBytes by dropping the least recently searched others.
func (s *Searcher) index(key pipeline.Key) *convIndex {
	_, inFile := s.src(key).(jsonSource)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock++
	ix, ok := s.convs[key]
	if !ok || ix.inFile != inFile {
		// New, or the owner moved between the database and a file: ids
		// differ there, so the index starts over.
		ix = &convIndex{models: map[string]*codes{}, inFile: inFile}
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

// Stored tells the Searcher that vectors were stored (with Notified).
func (s *Searcher) Stored(int) { s.stored.Add(1) }

// refresh reads the vectors stored since the index last looked.
func (s *Searcher) refresh(ctx context.Context, key pipeline.Key, ix *convIndex) error {
	if s.opts.Notified {
		n := s.stored.Load()
		if n == ix.seen {
			return nil
		}
		ix.seen = n // read before the rows: a batch stored meanwhile is read next time
	}
	for {
		rows, err := s.src(key).VectorsSince(ctx, key, ix.seq, loadPage)
		if err != nil {
			return err
		}
		for _, r := range rows {
			ix.put(r)
			ix.seq = r.Seq
		}
		if len(rows) < loadPage {
			break
		}
	}
	size := 0
	for _, c := range ix.models {
		size += c.bytes()
	}
	s.mu.Lock()
	ix.size = size
	s.mu.Unlock()
	return nil
}

// put adds a stored vector.
func (ix *convIndex) put(r memory.MessageVector) {
	c := ix.models[r.Model]
	if c == nil {
		c = newCodes(len(r.Vec))
		ix.models[r.Model] = c
	}
	c.put(r.MessageID, r.Vec)
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
	return s.src(key).EmbeddingCoverage(ctx, key, s.model.Model())
}

// src is where the conversation's vectors are: beside a JSON owner's file,
// else in the database.
func (s *Searcher) src(key pipeline.Key) source {
	if s.opts.JSON != nil && s.opts.JSON.Has(key.Owner()) {
		return jsonSource{s.opts.JSON}
	}
	return dbSource{s.store}
}
