package embed

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/recallbot/recall/memory"
)

// WorkerOptions configure a Worker.
type WorkerOptions struct {
	Batch   int           // messages per embeddings request (default 64)
	Poll    time.Duration // how often it looks for new messages (default 2 s)
	Rescan  time.Duration // how often it looks through the whole store again (default 1 h): edited texts, reused ids
	Timeout time.Duration // one request (default 1 min)
	Log     *slog.Logger
	// Stored, when set, hears how many messages each stored batch held
	// (a test waits on it).
	Stored func(n int)
	// JSON, when set, is where the owners on JSON storage keep their
	// vectors (beside their files); nil: their messages are not embedded.
	JSON JSONStore
}

// Worker embeds stored messages in the background, in batches: whatever
// has no vector by the configured model, oldest first. It starts on
// Start and stops on Close; nothing it does is on a turn's path. A failing
// endpoint is retried with a growing pause (up to a minute), logged once
// per failure streak. Once the whole store is embedded by the configured
// model, the vectors of earlier models are dropped (they served searches
// until then).
type Worker struct {
	store Store
	model Model
	opts  WorkerOptions

	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// NewWorker returns a Worker; Start starts it.
func NewWorker(store Store, model Model, o WorkerOptions) *Worker {
	if o.Batch <= 0 {
		o.Batch = 64
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.Rescan <= 0 {
		o.Rescan = time.Hour
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Worker{store: store, model: model, opts: o, kick: make(chan struct{}, 1)}
}

// Start runs the worker in its own goroutine until Close.
func (w *Worker) Start() {
	w.once.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		w.cancel, w.done = cancel, make(chan struct{})
		go func() {
			defer close(w.done)
			w.run(ctx)
		}()
	})
}

// Kick tells the worker that messages are waiting (it also looks every
// Poll without one).
func (w *Worker) Kick() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Close stops the worker and waits for it (until ctx ends). What it had not
// embedded yet is embedded at the next start.
func (w *Worker) Close(ctx context.Context) error {
	if w.cancel == nil {
		return nil
	}
	w.cancel()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stopping the embeddings worker: %w", ctx.Err())
	}
}

func (w *Worker) run(ctx context.Context) {
	var (
		after    int64 // messages up to this id are embedded
		lastFull time.Time
		failures int
		dropped  bool
		seen     = map[string]jsonState{} // JSON owners' files as of their last pass
	)
	for {
		full := lastFull.IsZero() || time.Since(lastFull) >= w.opts.Rescan
		from := after
		var top int64 // a full pass looks at every message up to this one at least
		var err error
		if full {
			from = 0
			top, err = w.store.MaxMessageID(ctx)
		}
		last := from
		if err == nil {
			last, _, err = w.pass(ctx, from, nil)
		}
		if err == nil {
			if full {
				clear(seen) // look at every JSON owner again
			}
			_, err = w.jsonPass(ctx, seen, nil)
		}
		wait := w.opts.Poll
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			failures++
			if failures == 1 {
				w.opts.Log.Warn("embedding messages failed; retrying in the background (archive search uses full text meanwhile)", "err", err)
			}
			wait = min(time.Minute, time.Second<<min(failures-1, 6))
		default:
			if failures > 0 {
				w.opts.Log.Info("embedding messages works again", "after_failures", failures)
			}
			failures = 0
			after = max(after, last, top)
			if full {
				lastFull = time.Now()
				if !dropped {
					dropped = w.dropEarlier(ctx) == nil
				}
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-w.kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// dropEarlier deletes the vectors of earlier models once everything is
// embedded by the configured one (they served searches until then).
func (w *Worker) dropEarlier(ctx context.Context) error {
	n, err := w.store.DropOtherEmbeddings(ctx, w.model.Model())
	if err != nil {
		w.opts.Log.Warn("dropping the vectors of an earlier embeddings model", "err", err)
		return err
	}
	if n > 0 {
		w.opts.Log.Info("the archive is embedded by the new model; dropped the earlier model's vectors", "model", w.model.Model(), "rows", n)
	}
	return nil
}

// pass embeds every message after id after that has no vector by the
// configured model, in batches, and returns the last id it looked at.
// progress, when set, hears the messages handled so far after each batch.
func (w *Worker) pass(ctx context.Context, after int64, progress func(n int)) (last int64, embedded int, err error) {
	model := w.model.Model()
	last = after
	handled := 0
	for {
		todo, err := w.store.PendingEmbeddings(ctx, model, last, w.opts.Batch)
		if err != nil || len(todo) == 0 {
			return last, embedded, err
		}
		n, err := w.batch(ctx, model, todo)
		if err != nil {
			return last, embedded, err
		}
		embedded += n
		handled += len(todo)
		if w.opts.Stored != nil {
			w.opts.Stored(len(todo))
		}
		last = todo[len(todo)-1].ID
		if progress != nil {
			progress(handled)
		}
	}
}

// batch embeds and stores one batch of messages: texts already embedded by
// model (an identical text elsewhere) reuse their vector, the others go to
// the endpoint once each. It returns how many texts were sent.
func (w *Worker) batch(ctx context.Context, model string, todo []memory.EmbedText) (int, error) {
	hashes := make([][]byte, len(todo))
	for i, t := range todo {
		hashes[i] = Hash(t.Text)
	}
	have, err := w.store.CachedEmbeddings(ctx, model, hashes)
	if err != nil {
		return 0, err
	}
	if have == nil {
		have = map[string][]float32{}
	}
	var texts []string
	var keys []string
	seen := map[string]bool{}
	for i, t := range todo {
		k := hex.EncodeToString(hashes[i])
		if _, ok := have[k]; ok || seen[k] {
			continue
		}
		seen[k] = true
		texts = append(texts, clip(t.Text))
		keys = append(keys, k)
	}
	vecs, err := w.embed(ctx, model, texts)
	if err != nil {
		return 0, err
	}
	for i, k := range keys {
		have[k] = normalize(vecs[i])
	}
	out := make([]memory.MessageVector, len(todo))
	for i, t := range todo {
		out[i] = memory.MessageVector{MessageID: t.ID, Model: model, Hash: hashes[i], Vec: have[hex.EncodeToString(hashes[i])]}
	}
	return len(texts), w.store.PutEmbeddings(ctx, out)
}

// embed asks the endpoint for texts' vectors. A request the endpoint
// refuses as such (a 4xx other than 401, 403, 404 and 429) is retried text
// by text, and a text it refuses alone gets an empty vector (it is found by
// full text only), so one bad message cannot stop the rest.
func (w *Worker) embed(ctx context.Context, model string, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	rctx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	vecs, err := w.model.Embed(rctx, model, texts)
	cancel()
	if err == nil || !refused(err) {
		return vecs, err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if len(texts) == 1 {
			w.opts.Log.Warn("the embeddings endpoint refused a message; it is searchable by its words only", "err", err)
			out[i] = nil
			continue
		}
		v, err := w.embed(ctx, model, []string{t})
		if err != nil {
			return nil, err
		}
		out[i] = v[0]
	}
	return out, nil
}

// refused reports whether the endpoint refused the request's content.
func refused(err error) bool {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	code := 0
	switch {
	case errors.As(err, &apiErr):
		code = apiErr.HTTPStatusCode
	case errors.As(err, &reqErr):
		code = reqErr.HTTPStatusCode
	}
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusTooManyRequests:
		return false
	}
	return code >= 400 && code < 500
}

// Reindex embeds every message of the store that has no vector by the
// model, in batches of batch, and returns when all are done (or ctx ends:
// what was stored stays, and the next run goes on from there). progress,
// when set, hears done of total after each batch. Once all are done, the
// vectors of earlier models are dropped.
func Reindex(ctx context.Context, store Store, files JSONStore, model Model, batch int, progress func(done, total int64)) (embedded int, err error) {
	total, err := store.CountPendingEmbeddings(ctx, model.Model())
	if err != nil {
		return 0, err
	}
	inFiles, err := jsonPendingCount(ctx, files, model.Model())
	if err != nil {
		return 0, err
	}
	total += inFiles
	if progress != nil {
		progress(0, total)
	}
	w := NewWorker(store, model, WorkerOptions{Batch: batch, JSON: files})
	var handled int64
	report := func(n int) {
		handled += int64(n)
		if progress != nil {
			progress(min(handled, total), total)
		}
	}
	_, embedded, err = w.pass(ctx, 0, func(n int) { report(n - int(handled)) })
	if err != nil {
		return embedded, err
	}
	n, err := w.jsonPass(ctx, nil, report)
	embedded += n
	if err != nil {
		return embedded, err
	}
	return embedded, w.dropEarlier(ctx)
}
