package embed_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/embed"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/memory/pgtest"
	"github.com/recallbot/recall/pipeline"
)

var group = pipeline.Key{Channel: "telegram", Chat: "-1001"}

type words struct{}

func (words) Count(s string) int { return len(strings.Fields(s)) }

// filler is small talk that shares no word with the questions below.
var filler = []string{
	"the weather was lovely at the beach today",
	"did you see the game last night",
	"my sister plays the violin in an orchestra",
	"we should paint the fence green",
	"the bakery on the corner sells great croissants",
	"I am learning to knit a scarf",
	"our neighbour has a noisy parrot",
	"the garden needs watering twice a week",
}

// archive stores n messages of a group conversation, imported as `bot
// import` does (archived), with extra lines among the filler.
func archive(t *testing.T, n int, extra map[int]string) *memory.Store {
	t.Helper()
	return archiveIn(t, memory.StorageSQLite, n, extra)
}

// archiveIn is archive with the owner on storage.
func archiveIn(t *testing.T, storage memory.Storage, n int, extra map[int]string) *memory.Store {
	t.Helper()
	return archiveOn(t, "", storage, n, extra)
}

// onDatabases runs fn on SQLite (url "") and on PostgreSQL (its url; the
// subtest skips unless RECALL_TEST_POSTGRES_URL is set): the embeddings
// behave the same on both.
func onDatabases(t *testing.T, fn func(t *testing.T, url string)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, "") })
	t.Run("postgres", func(t *testing.T) { fn(t, pgtest.URL(t)) })
}

// queryRow runs a query on the store's database.
func queryRow(ctx context.Context, st *memory.Store, q string) interface{ Scan(...any) error } {
	if p := st.Postgres(); p != nil {
		return p.Pool().QueryRow(ctx, q)
	}
	return st.SQLite().DB().QueryRowContext(ctx, q)
}

// archiveOn is archiveIn in the PostgreSQL database at url ("": SQLite).
func archiveOn(t *testing.T, url string, storage memory.Storage, n int, extra map[int]string) *memory.Store {
	t.Helper()
	ctx := context.Background()
	st, err := memory.Open(ctx, memory.Options{Dir: t.TempDir(), DatabaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	set := memory.Settings{Owner: group.Owner(), MemoryEnabled: true, Storage: storage, Threshold: 10}
	conv := memory.ConversationData{Key: group.String()}
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for i := range n {
		who, text := "Anna", filler[i%len(filler)]
		if i%2 == 1 {
			who = "Ben"
		}
		if e, ok := extra[i]; ok {
			text = e
		} else if i >= len(filler) {
			text = fmt.Sprintf("%s, number %d", text, i) // unique texts
		}
		conv.Messages = append(conv.Messages, memory.Message{Role: memory.RoleUser, SenderID: strings.ToLower(who), SenderName: who,
			PlatformID: fmt.Sprint(i + 1), Text: text, Time: t0.Add(time.Duration(i) * 3 * time.Hour), Tokens: words{}.Count(text)})
	}
	if _, err := st.Import(ctx, memory.NewExport(memory.OwnerData{Owner: group.Owner(), Settings: &set, Conversations: []memory.ConversationData{conv}})); err != nil {
		t.Fatal(err)
	}
	return st
}

func embedder(t *testing.T, srv *llmtest.Server, model string) *llm.Embedder {
	t.Helper()
	e, err := llm.NewEmbedder(llm.EmbedderOptions{BaseURL: srv.URL, Model: model, Dimensions: 128})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func snippetTexts(snips []assemble.Snippet) string {
	var b strings.Builder
	for _, s := range snips {
		for _, m := range s.Messages {
			b.WriteString(m.Text + "\n")
		}
	}
	return b.String()
}

const purchase = "We finally got the automobile yesterday, a red one"

// A question in other words than the archive's finds the message only
// with embeddings on: "purchase" and "car" are in no stored message.
func TestParaphraseFoundOnlyWithEmbeddings(t *testing.T) {
	onDatabases(t, func(t *testing.T, url string) {
		ctx := context.Background()
		st := archiveOn(t, url, memory.StorageSQLite, 200, map[int]string{57: purchase, 120: "the car wash was closed"})
		srv := llmtest.NewServer(t, llmtest.Echo(""))
		e := embedder(t, srv, "fake-embed")
		if _, err := embed.Reindex(ctx, st.Embeddings(), nil, e, 32, nil); err != nil {
			t.Fatal(err)
		}
		req := assemble.Request{Key: group, Text: "when did we buy the automobile vehicle thing?", Memory: true, Now: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)}
		req.Text = "when did they purchase their new car?"
		budget := assemble.Budget{Total: 4000, Snippets: 300, Recent: 500, Summaries: 500, Memories: 200, System: 200}

		off, err := assemble.New(st, words{}, budget).Build(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if got := snippetTexts(off.Breakdown.Snippets); strings.Contains(got, purchase) {
			t.Fatalf("full text alone found the paraphrased message:\n%s", got)
		}
		s := embed.NewSearcher(st.Embeddings(), e, embed.SearcherOptions{LoadWait: time.Minute})
		on, err := assemble.New(st, words{}, budget, assemble.WithVectors(s)).Build(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if got := snippetTexts(on.Breakdown.Snippets); !strings.Contains(got, purchase) {
			t.Fatalf("with embeddings the paraphrased message is not among the snippets:\n%s", got)
		}
		if got := strings.Join(on.Breakdown.Notes, "\n"); !strings.Contains(got, "fused with embeddings") {
			t.Errorf("notes = %q, want the fusion named", got)
		}
		// The only call in the turn is the question's, with its words.
		calls := srv.EmbeddingCalls()
		if last := calls[len(calls)-1]; len(last.Input) != 1 || last.Input[0] != req.Text {
			t.Errorf("last call = %+v, want the question alone", last)
		}
		// The full-text hit on "car" is still there: fused, not replaced.
		if got := snippetTexts(on.Breakdown.Snippets); !strings.Contains(got, "car wash") {
			t.Errorf("the full-text hit was lost:\n%s", got)
		}
	})
}

// A slow or failing endpoint costs the turn at most the timeout: the
// snippets come from full text and /context says so.
func TestSlowEndpointFallsBackToFullText(t *testing.T) {
	ctx := context.Background()
	st := archive(t, 60, map[int]string{20: purchase, 30: "the car wash was closed"})
	srv := llmtest.NewServer(t, llmtest.Echo(""))
	e := embedder(t, srv, "fake-embed")
	if _, err := embed.Reindex(ctx, st.SQLite(), nil, e, 32, nil); err != nil {
		t.Fatal(err)
	}
	req := assemble.Request{Key: group, Text: "when did they purchase their new car?", Memory: true}
	budget := assemble.Budget{Total: 4000, Snippets: 300, Recent: 500, Summaries: 500, Memories: 200, System: 200}
	for _, tc := range []struct {
		name   string
		script llmtest.EmbeddingScript
		note   string
	}{
		{"hangs", llmtest.EmbeddingScript{Hang: true}, "did not answer within 50ms"},
		{"fails", llmtest.EmbeddingScript{Status: 500}, "the embeddings endpoint failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.OnEmbeddings(func(llmtest.EmbeddingRequest) llmtest.EmbeddingScript { return tc.script })
			s := embed.NewSearcher(st.SQLite(), e, embed.SearcherOptions{Timeout: 50 * time.Millisecond, LoadWait: time.Minute})
			before := len(srv.EmbeddingCalls())
			p, err := assemble.New(st, words{}, budget, assemble.WithVectors(s)).Build(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			got := snippetTexts(p.Breakdown.Snippets)
			if !strings.Contains(got, "car wash") || strings.Contains(got, purchase) {
				t.Errorf("snippets = %q, want the full-text ones", got)
			}
			if notes := strings.Join(p.Breakdown.Notes, "\n"); !strings.Contains(notes, tc.note) || !strings.Contains(notes, "full-text search only") {
				t.Errorf("notes = %q, want %q", notes, tc.note)
			}
			if !strings.Contains(p.Breakdown.Format(), "full-text search only") {
				t.Error("/context does not say the turn used full text only")
			}
			if n := len(srv.EmbeddingCalls()) - before; n != 1 {
				t.Errorf("%d embeddings calls in the turn, want 1", n)
			}
		})
	}
}

// Identical texts are embedded once; /summary_status's coverage counts
// every message.
func TestIdenticalTextsEmbeddedOnce(t *testing.T) {
	onDatabases(t, func(t *testing.T, url string) {
		ctx := context.Background()
		extra := map[int]string{}
		for i := 10; i < 40; i++ {
			extra[i] = "ok thanks"
		}
		st := archiveOn(t, url, memory.StorageSQLite, 50, extra)
		srv := llmtest.NewServer(t, llmtest.Echo(""))
		e := embedder(t, srv, "fake-embed")
		n, err := embed.Reindex(ctx, st.Embeddings(), nil, e, 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		// 50 messages: 8 filler texts (first round), 30 "ok thanks", 12 unique.
		if want := 8 + 1 + 12; n != want || srv.EmbeddedTexts() != want {
			t.Errorf("embedded %d texts (server saw %d), want %d", n, srv.EmbeddedTexts(), want)
		}
		s := embed.NewSearcher(st.Embeddings(), e, embed.SearcherOptions{LoadWait: time.Minute})
		done, total, err := s.Coverage(ctx, group)
		if err != nil || done != 50 || total != 50 {
			t.Errorf("coverage = %d of %d (%v), want 50 of 50", done, total, err)
		}
		// Run again: nothing left to embed.
		if n, err := embed.Reindex(ctx, st.Embeddings(), nil, e, 8, nil); err != nil || n != 0 {
			t.Errorf("second run embedded %d (%v), want 0", n, err)
		}
	})
}

// bot reindex killed midway goes on where it stopped: no message is
// embedded twice, and the progress reaches the total.
func TestReindexResumesAfterCancel(t *testing.T) {
	onDatabases(t, func(t *testing.T, url string) {
		st := archiveOn(t, url, memory.StorageSQLite, 300, nil)
		srv := llmtest.NewServer(t, llmtest.Echo(""))
		e := embedder(t, srv, "fake-embed")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var calls atomic.Int64
		srv.OnEmbeddings(func(llmtest.EmbeddingRequest) llmtest.EmbeddingScript {
			if calls.Add(1) == 5 {
				cancel() // the user presses Ctrl-C during the fifth request
				return llmtest.EmbeddingScript{Hang: true}
			}
			return llmtest.EmbeddingScript{}
		})
		_, err := embed.Reindex(ctx, st.Embeddings(), nil, e, 16, nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("first run: %v, want cancelled", err)
		}
		cut := srv.EmbeddingCalls()[4]
		first := srv.EmbeddedTexts()
		var last, total int64
		if _, err := embed.Reindex(context.Background(), st.Embeddings(), nil, e, 16, func(d, t int64) { last, total = d, t }); err != nil {
			t.Fatal(err)
		}
		// 300 unique texts: the 4 stored batches are not sent again; the cut
		// one is.
		if again := srv.EmbeddedTexts() - first; first-len(cut.Input)+again != 300 || total != 300-4*16 || last != total {
			t.Errorf("first run sent %d (cut %d), second %d; progress %d of %d", first, len(cut.Input), again, last, total)
		}
	})
}

// After a change of model the old vectors serve (the question is embedded
// by the old model) until the new model covers the conversation; then the
// old vectors are dropped.
func TestModelChangeOldVectorsServe(t *testing.T) {
	onDatabases(t, func(t *testing.T, url string) {
		ctx := context.Background()
		st := archiveOn(t, url, memory.StorageSQLite, 80, map[int]string{33: purchase})
		srv := llmtest.NewServer(t, llmtest.Echo(""))
		if _, err := embed.Reindex(ctx, st.Embeddings(), nil, embedder(t, srv, "old-model"), 16, nil); err != nil {
			t.Fatal(err)
		}
		newModel := embedder(t, srv, "new-model")
		s := embed.NewSearcher(st.Embeddings(), newModel, embed.SearcherOptions{LoadWait: time.Minute})
		find := func() string {
			t.Helper()
			hits, err := s.Similar(ctx, group, "when did they purchase their new car?", 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			calls := srv.EmbeddingCalls()
			if len(hits) == 0 || hits[0].Message.Text != purchase {
				t.Fatalf("hits = %+v, want the purchase first", hits)
			}
			return calls[len(calls)-1].Model
		}
		if m := find(); m != "old-model" {
			t.Errorf("question embedded by %s before the new model's vectors exist, want old-model", m)
		}
		// Half embedded by the new model: the old one still covers more.
		stopAt := 40
		var stored atomic.Int64
		cctx, cancel := context.WithCancel(ctx)
		srv.OnEmbeddings(func(r llmtest.EmbeddingRequest) llmtest.EmbeddingScript {
			if r.Model == "new-model" && len(r.Input) > 1 && stored.Add(int64(len(r.Input))) > int64(stopAt) {
				cancel()
				return llmtest.EmbeddingScript{Hang: true}
			}
			return llmtest.EmbeddingScript{}
		})
		_, _ = embed.Reindex(cctx, st.Embeddings(), nil, newModel, 20, nil)
		srv.OnEmbeddings(nil)
		if m := find(); m != "old-model" {
			t.Errorf("half re-embedded: question embedded by %s, want old-model", m)
		}
		if _, err := embed.Reindex(ctx, st.Embeddings(), nil, newModel, 20, nil); err != nil {
			t.Fatal(err)
		}
		if m := find(); m != "new-model" {
			t.Errorf("re-embedded: question embedded by %s, want new-model", m)
		}
		var old int
		if err := queryRow(ctx, st, `SELECT count(*) FROM embedding_vectors WHERE model = 'old-model'`).Scan(&old); err != nil || old != 0 {
			t.Errorf("%d vectors of the old model left (%v)", old, err)
		}
	})
}

// The worker embeds new messages in the background, and a purge takes
// their vectors with them.
func TestWorkerEmbedsNewMessagesAndPurgeDropsVectors(t *testing.T) {
	onDatabases(t, func(t *testing.T, url string) {
		ctx := context.Background()
		st := archiveOn(t, url, memory.StorageSQLite, 20, nil)
		srv := llmtest.NewServer(t, llmtest.Echo(""))
		embedNewMessage(t, st, st.Embeddings(), srv, embed.WorkerOptions{Batch: 8, Poll: time.Hour}, 20)
		s := embed.NewSearcher(st.Embeddings(), embedder(t, srv, "fake-embed"), embed.SearcherOptions{LoadWait: time.Minute})
		if done, total, err := s.Coverage(ctx, group); err != nil || done != 21 || total != 21 {
			t.Fatalf("coverage %d of %d (%v)", done, total, err)
		}
		if _, err := st.Purge(ctx, memory.PurgeScope{Owner: group.Owner(), Key: group}); err != nil {
			t.Fatal(err)
		}
		var vecs, rows int
		if err := queryRow(ctx, st, `SELECT (SELECT count(*) FROM embedding_vectors), (SELECT count(*) FROM message_embeddings)`).Scan(&vecs, &rows); err != nil {
			t.Fatal(err)
		}
		if vecs != 0 || rows != 0 {
			t.Errorf("after /purge: %d vectors, %d message embeddings left", vecs, rows)
		}
	})
}

// gatedStore holds the first load of a conversation's vectors until gate
// is closed.
type gatedStore struct {
	embed.Store
	gate chan struct{}
}

func (g gatedStore) ConversationVectors(ctx context.Context, key pipeline.Key, fn func(memory.MessageVector)) error {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Store.ConversationVectors(ctx, key, fn)
}

// A big archive loads its vectors in the background: meanwhile the turns
// use full text and /context says why; once loaded, embeddings serve.
func TestFirstLoadInBackground(t *testing.T) {
	ctx := context.Background()
	st := archive(t, 60, map[int]string{20: purchase, 30: "the car wash was closed"})
	srv := llmtest.NewServer(t, llmtest.Echo(""))
	e := embedder(t, srv, "fake-embed")
	if _, err := embed.Reindex(ctx, st.SQLite(), nil, e, 32, nil); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	s := embed.NewSearcher(gatedStore{st.SQLite(), gate}, e, embed.SearcherOptions{LoadWait: time.Millisecond})
	defer s.Close(ctx)
	req := assemble.Request{Key: group, Text: "when did they purchase their new car?", Memory: true}
	budget := assemble.Budget{Total: 4000, Snippets: 300, Recent: 500, Summaries: 500, Memories: 200, System: 200}
	a := assemble.New(st, words{}, budget, assemble.WithVectors(s))
	p, err := a.Build(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if notes := strings.Join(p.Breakdown.Notes, "\n"); !strings.Contains(notes, "still being loaded") || strings.Contains(snippetTexts(p.Breakdown.Snippets), purchase) {
		t.Errorf("while loading: notes %q, snippets %q", notes, snippetTexts(p.Breakdown.Snippets))
	}
	close(gate)
	// The load finishes; a search that waits longer than LoadWait is not
	// needed: Similar waits for a finished load's channel at once.
	for {
		_, err := s.Similar(ctx, group, req.Text, 3, nil)
		if err == nil {
			break
		}
		var l embed.Loading
		if !errors.As(err, &l) {
			t.Fatal(err)
		}
	}
	p, err = a.Build(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(snippetTexts(p.Breakdown.Snippets), purchase) {
		t.Errorf("after the load: snippets %q", snippetTexts(p.Breakdown.Snippets))
	}
}

// An owner on JSON storage keeps its vectors in a file beside its own
// (0600), found by meaning like the database's; a purge rewrites that file
// without the purged messages' vectors, or removes it with the owner's.
func TestJSONOwnerVectorsBesideTheirFile(t *testing.T) {
	ctx := context.Background()
	st := archiveIn(t, memory.StorageJSON, 60, map[int]string{20: purchase, 30: "the car wash was closed"})
	if !st.JSON().Has(group.Owner()) {
		t.Fatal("the owner is not on JSON storage")
	}
	srv := llmtest.NewServer(t, llmtest.Echo(""))
	e := embedder(t, srv, "fake-embed")
	var last, total int64
	if _, err := embed.Reindex(ctx, st.SQLite(), st.JSON(), e, 16, func(d, t int64) { last, total = d, t }); err != nil {
		t.Fatal(err)
	}
	if last != 60 || total != 60 {
		t.Errorf("progress %d of %d, want 60 of 60", last, total)
	}
	path := st.JSON().VectorsPath(group.Owner())
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || filepath.Dir(path) != filepath.Dir(st.JSON().Path(group.Owner())) {
		t.Fatalf("vectors file %s: %v, %v; want 0600 beside the owner's file", path, fi, err)
	}
	var rows int
	if err := st.SQLite().DB().QueryRowContext(ctx, `SELECT count(*) FROM embedding_vectors`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("%d vectors in the database for a JSON owner (%v)", rows, err)
	}
	s := embed.NewSearcher(st.SQLite(), e, embed.SearcherOptions{JSON: st.JSON(), LoadWait: time.Minute})
	defer s.Close(ctx)
	if done, total, err := s.Coverage(ctx, group); err != nil || done != 60 || total != 60 {
		t.Errorf("coverage %d of %d (%v)", done, total, err)
	}
	req := assemble.Request{Key: group, Text: "when did they purchase their new car?", Memory: true}
	budget := assemble.Budget{Total: 4000, Snippets: 300, Recent: 500, Summaries: 500, Memories: 200, System: 200}
	p, err := assemble.New(st, words{}, budget, assemble.WithVectors(s)).Build(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := snippetTexts(p.Breakdown.Snippets); !strings.Contains(got, purchase) {
		t.Errorf("the JSON owner's paraphrased message was not found:\n%s", got)
	}
	// Purge the messages older than the purchase's day: its vector stays,
	// the older ones go.
	cut := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC).Add(20 * 3 * time.Hour)
	if _, err := st.Purge(ctx, memory.PurgeScope{Owner: group.Owner(), OlderThan: cut}); err != nil {
		t.Fatal(err)
	}
	vs, err := st.JSON().Vectors(ctx, group.Owner())
	if err != nil || len(vs) != 40 {
		t.Fatalf("after purging 20 messages: %d vectors (%v), want 40", len(vs), err)
	}
	if _, err := s.Similar(ctx, group, req.Text, 3, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Purge(ctx, memory.PurgeScope{Owner: group.Owner()}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after purging everything the vectors file is still there: %v", err)
	}
}

// The worker embeds a JSON owner's new messages in the background too,
// into the file beside theirs.
func TestWorkerEmbedsJSONOwners(t *testing.T) {
	ctx := context.Background()
	st := archiveIn(t, memory.StorageJSON, 10, nil)
	srv := llmtest.NewServer(t, llmtest.Echo(""))
	embedNewMessage(t, st, st.SQLite(), srv, embed.WorkerOptions{Batch: 4, Poll: time.Hour, JSON: st.JSON()}, 10)
	vs, err := st.JSON().Vectors(ctx, group.Owner())
	if err != nil || len(vs) != 11 {
		t.Fatalf("%d vectors beside the file (%v), want 11", len(vs), err)
	}
}

// recordingStore reports the id each look for messages to embed starts
// after.
type recordingStore struct {
	embed.Store
	afters chan int64
}

func (r recordingStore) PendingEmbeddings(ctx context.Context, model string, after int64, limit int) ([]memory.EmbedText, error) {
	select {
	case r.afters <- after:
	case <-ctx.Done():
	}
	return r.Store.PendingEmbeddings(ctx, model, after, limit)
}

// Once everything is embedded, the worker's later looks start after the
// newest message: it does not read the whole store again at every poll.
func TestWorkerLooksOnlyPastTheNewest(t *testing.T) {
	ctx := context.Background()
	st := archive(t, 30, nil)
	srv := llmtest.NewServer(t, llmtest.Echo(""))
	e := embedder(t, srv, "fake-embed")
	if _, err := embed.Reindex(ctx, st.SQLite(), nil, e, 16, nil); err != nil {
		t.Fatal(err)
	}
	top, err := st.SQLite().MaxMessageID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec := recordingStore{Store: st.SQLite(), afters: make(chan int64)}
	w := embed.NewWorker(rec, e, embed.WorkerOptions{Poll: time.Millisecond})
	w.Start()
	defer w.Close(ctx)
	if first := <-rec.afters; first != 0 {
		t.Fatalf("the first look starts after %d, want 0 (the whole store)", first)
	}
	for range 3 {
		if a := <-rec.afters; a != top {
			t.Fatalf("a later look starts after %d, want the newest message %d", a, top)
		}
	}
}

// embedNewMessage runs a worker over store until it has embedded the n
// messages of the archive in st, then appends one message and kicks the
// worker, which must embed it (alone) before it closes.
func embedNewMessage(t *testing.T, st *memory.Store, store embed.Store, srv *llmtest.Server, o embed.WorkerOptions, n int) {
	t.Helper()
	ctx := context.Background()
	batches := make(chan int, 100)
	o.Stored = func(n int) { batches <- n }
	w := embed.NewWorker(store, embedder(t, srv, "fake-embed"), o)
	w.Start()
	defer w.Close(ctx)
	for got := 0; got < n; got += <-batches {
	}
	if err := st.Append(ctx, memory.Message{Key: group, Role: memory.RoleUser, SenderName: "Anna", PlatformID: "new-1", Text: purchase, Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	w.Kick()
	if n := <-batches; n != 1 {
		t.Fatalf("stored a batch of %d, want the new message", n)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
