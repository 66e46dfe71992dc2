package summary

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// openStore opens a real store (SQLite) in a temporary directory.
func openStore(t *testing.T) *memory.Store {
	t.Helper()
	st, err := memory.Open(context.Background(), memory.Options{Dir: t.TempDir(), RetryBase: time.Millisecond, RetryMax: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(context.Background()); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	return st
}

// newClient returns a real LLM client for srv: tiny backoff, and no retries
// when retries < 0.
func newClient(srv *llmtest.Server, retries int) *llm.Client {
	return llm.New(llm.Options{
		BaseURL:        srv.URL,
		Model:          "test-model",
		Timeout:        10 * time.Second,
		RequestTimeout: 10 * time.Second,
		MaxRetries:     retries,
		BaseDelay:      time.Millisecond,
		MaxDelay:       2 * time.Millisecond,
	})
}

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func userText(prefix string, i int) string {
	return fmt.Sprintf("%s question %d: I paid %d euros on day %d", prefix, i, i*7, i)
}

func botText(prefix string, i int) string {
	return fmt.Sprintf("%s answer %d: noted, %d euros", prefix, i, i*7)
}

// exchange stores exchange i (1-based) of key the way a turn does: the user
// message, then the assistant reply that answers it.
func exchange(t *testing.T, st *memory.Store, key pipeline.Key, prefix string, i int) {
	t.Helper()
	ctx := context.Background()
	at := t0.Add(time.Duration(i) * 37 * time.Minute)
	pid := fmt.Sprintf("%s-%d", prefix, i)
	user := memory.Message{Key: key, Role: memory.RoleUser, SenderID: "42", SenderName: "Ann", PlatformID: pid, Text: userText(prefix, i), Time: at}
	bot := memory.Message{Key: key, Role: memory.RoleAssistant, ReplyTo: pid, PlatformID: pid + "-r", Text: botText(prefix, i), Time: at.Add(20 * time.Second)}
	if err := st.Append(ctx, user, bot); err != nil {
		t.Fatal(err)
	}
}

// waitIdle waits until every background run started so far has finished,
// without closing the summarizer (Wait does close it). The runs were added
// to the wait group before MaybeStart returned.
func waitIdle(s *Summarizer) { s.wg.Wait() }

func status(t *testing.T, st *memory.Store, key pipeline.Key) memory.Status {
	t.Helper()
	s, err := st.Status(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func summaries(t *testing.T, st *memory.Store, key pipeline.Key, activeOnly bool) []memory.Summary {
	t.Helper()
	s, err := st.Summaries(context.Background(), key, activeOnly)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func provenance(t *testing.T, st *memory.Store, key pipeline.Key, id int64) []memory.Message {
	t.Helper()
	msgs, err := st.Provenance(context.Background(), key, id)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func msgIDs(ms []memory.Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// checkRange checks that a summary's time range is exactly the span of the
// messages it was built from.
func checkRange(t *testing.T, sm memory.Summary, msgs []memory.Message) {
	t.Helper()
	if len(msgs) == 0 {
		t.Errorf("summary %d (level %d) has no messages", sm.ID, sm.Level)
		return
	}
	lo, hi := msgs[0].Time, msgs[0].Time
	for _, m := range msgs {
		if m.Time.Before(lo) {
			lo = m.Time
		}
		if m.Time.After(hi) {
			hi = m.Time
		}
	}
	if !sm.From.Equal(lo) || !sm.To.Equal(hi) {
		t.Errorf("summary %d (level %d) covers %s – %s, its messages span %s – %s", sm.ID, sm.Level, sm.From, sm.To, lo, hi)
	}
}

// summarizerHandler answers level-1 requests with "Ann talked about topic N"
// and fold requests with "Merged summary N", N being the request number.
func summarizerHandler(r llmtest.Request) llmtest.Response {
	if len(r.Messages) > 0 && r.Messages[0].Content == FoldInstructions {
		return llmtest.Response{Text: fmt.Sprintf("Merged summary %d", r.N)}
	}
	return llmtest.Response{Text: fmt.Sprintf("  Ann talked about topic %d\n", r.N)}
}

func TestSixtyExchangesAtThreshold10(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewServer(t, summarizerHandler)
	st := openStore(t)
	counter := llm.NewCounter("test-model")
	s := New(st, newClient(srv, -1), counter, Policy{}, nil) // defaults: keep 4, 5 per level, 10 in all
	var mu sync.Mutex
	var notified []error
	notify := func(_ context.Context, err error) {
		mu.Lock()
		notified = append(notified, err)
		mu.Unlock()
	}
	key := pipeline.Key{Channel: "telegram", Chat: "4711"}

	var prevTotal int64
	for i := 1; i <= 60; i++ {
		exchange(t, st, key, "ann", i)
		if started := s.MaybeStart(ctx, key, 10, notify); started != (i%10 == 0) {
			t.Fatalf("exchange %d: MaybeStart started a run: %v, want %v", i, started, i%10 == 0)
		}
		waitIdle(s)

		got := status(t, st, key)
		if got.Total < prevTotal {
			t.Fatalf("exchange %d: the message count dropped from %d to %d", i, prevTotal, got.Total)
		}
		prevTotal = got.Total
		archived := int64(0)
		if k := i / 10; k > 0 {
			archived = 12 + 20*int64(k-1) // the first run keeps 4 of 10 exchanges, later ones archive 10
		}
		want := memory.Status{Total: int64(2 * i), Active: int64(2*i) - archived, Archived: archived, TurnsSinceSummary: i % 10}
		if got.Total != want.Total || got.Active != want.Active || got.Archived != want.Archived || got.TurnsSinceSummary != want.TurnsSinceSummary {
			t.Fatalf("exchange %d: total/active/archived/turns = %d/%d/%d/%d, want %d/%d/%d/%d", i,
				got.Total, got.Active, got.Archived, got.TurnsSinceSummary, want.Total, want.Active, want.Archived, want.TurnsSinceSummary)
		}
		if i%10 == 0 {
			wantLevels := map[int]int{1: i / 10}
			if i == 60 {
				wantLevels = map[int]int{1: 1, 2: 1}
			}
			if !reflect.DeepEqual(got.ActiveByLevel, wantLevels) {
				t.Fatalf("exchange %d: active summaries by level = %v, want %v", i, got.ActiveByLevel, wantLevels)
			}
		}
	}
	s.Wait()
	if s.MaybeStart(ctx, key, 1, notify) {
		t.Error("MaybeStart started a run after Wait")
	}
	if len(notified) != 0 {
		t.Errorf("Notify was called: %v", notified)
	}

	final := status(t, st, key)
	if final.Archived != 112 || final.Active != 8 || final.Total != 120 || final.HighestLevel != 2 {
		t.Errorf("final status = %+v, want 112 archived, 8 active, 120 in all, highest level 2", final)
	}
	active, err := st.Active(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(active) != 8 || active[0].Text != userText("ann", 57) || active[7].Text != botText("ann", 60) {
		t.Errorf("the active window is not exchanges 57–60: %d messages, first %q", len(active), active[0].Text)
	}

	all := summaries(t, st, key, false)
	if len(all) != 7 {
		t.Fatalf("%d summaries in all, want 6 of level 1 and 1 of level 2", len(all))
	}
	var l1 []memory.Summary
	var l2 memory.Summary
	for _, sm := range all {
		switch sm.Level {
		case 1:
			l1 = append(l1, sm)
		case 2:
			l2 = sm
		default:
			t.Errorf("unexpected summary level %d", sm.Level)
		}
	}
	if len(l1) != 6 || l2.ID == 0 {
		t.Fatalf("%d level-1 summaries and level-2 id %d", len(l1), l2.ID)
	}
	for i, sm := range l1 {
		if sm.Active != (i == 5) {
			t.Errorf("level-1 summary %d active = %v; only the newest should be", i+1, sm.Active)
		}
		if strings.TrimSpace(sm.Text) != sm.Text || !strings.HasPrefix(sm.Text, "Ann talked about topic") {
			t.Errorf("summary text %q is not the model's answer, trimmed", sm.Text)
		}
		if sm.Tokens != counter.Count(sm.Text) {
			t.Errorf("summary %d: %d tokens, want %d", sm.ID, sm.Tokens, counter.Count(sm.Text))
		}
	}
	if !l2.Active || !reflect.DeepEqual(l2.Sources, []int64{l1[0].ID, l1[1].ID, l1[2].ID, l1[3].ID, l1[4].ID}) {
		t.Errorf("level-2 summary: active %v, sources %v; want the 5 oldest level-1 summaries", l2.Active, l2.Sources)
	}

	// Provenance: the level-2 summary goes down to exactly the messages of
	// its 5 chunks: exchanges 1–46.
	var fromChunks []int64
	for _, sm := range l1[:5] {
		fromChunks = append(fromChunks, msgIDs(provenance(t, st, key, sm.ID))...)
	}
	prov := provenance(t, st, key, l2.ID)
	if !reflect.DeepEqual(msgIDs(prov), fromChunks) {
		t.Errorf("provenance of the level-2 summary = %v, want the messages of its chunks %v", msgIDs(prov), fromChunks)
	}
	if len(prov) != 92 || prov[0].Text != userText("ann", 1) || prov[91].Text != botText("ann", 46) {
		t.Errorf("provenance of the level-2 summary: %d messages, want the 92 of exchanges 1–46", len(prov))
	}
	for _, m := range prov {
		if m.Active || m.ChunkID == 0 {
			t.Errorf("message %d in provenance: active %v, chunk %d", m.ID, m.Active, m.ChunkID)
		}
	}
	// Each summary's time range covers exactly its messages.
	for _, sm := range all {
		checkRange(t, sm, provenance(t, st, key, sm.ID))
	}

	// The prompts: 6 level-1 requests and one fold, through Summarize.
	reqs := srv.Requests()
	if len(reqs) != 7 {
		t.Fatalf("%d requests to the model, want 7", len(reqs))
	}
	for _, word := range []string{"name", "date", "number", "decision", "same language"} {
		if !strings.Contains(Instructions, word) {
			t.Errorf("the summary instructions do not ask to keep %q", word)
		}
	}
	for _, sm := range l1 {
		var n int
		if _, err := fmt.Sscanf(sm.Text, "Ann talked about topic %d", &n); err != nil || n < 1 || n > len(reqs) {
			t.Fatalf("summary %q does not name its request", sm.Text)
		}
		r := reqs[n-1]
		if r.Temperature < 0.19 || r.Temperature > 0.21 {
			t.Errorf("request %d: temperature %v, want Summarize's 0.2", n, r.Temperature)
		}
		if len(r.Messages) != 2 || r.Messages[0].Role != llm.RoleSystem || r.Messages[0].Content != Instructions || r.Messages[1].Role != llm.RoleUser {
			t.Errorf("request %d: want the instructions as the system message and the messages as the user message, got %+v", n, r.Messages)
			continue
		}
		body := r.Messages[1].Content
		msgs := provenance(t, st, key, sm.ID)
		for _, m := range msgs {
			if !strings.Contains(body, m.Text) {
				t.Errorf("request %d lacks message %q", n, m.Text)
			}
			if !strings.Contains(body, m.Time.Format("2006-01-02 15:04")) {
				t.Errorf("request %d lacks the time of message %q", n, m.Text)
			}
		}
		if !strings.Contains(body, "Ann: "+msgs[0].Text) || !strings.Contains(body, "assistant: "+msgs[1].Text) {
			t.Errorf("request %d does not name who said what:\n%s", n, body)
		}
		// Nothing of the kept window or of other chunks.
		if strings.Contains(body, userText("ann", 60)+"\n") {
			t.Errorf("request %d contains a message of the keep-recent window", n)
		}
	}
	fold := reqs[6]
	if fold.Messages[0].Content != FoldInstructions {
		t.Errorf("the last request is not a fold: %q", fold.Messages[0].Content)
	}
	for _, sm := range l1[:5] {
		if !strings.Contains(fold.Messages[1].Content, sm.Text) {
			t.Errorf("the fold request lacks summary %q", sm.Text)
		}
	}
	if strings.Contains(fold.Messages[1].Content, l1[5].Text) {
		t.Errorf("the fold request contains the newest level-1 summary")
	}
}

func TestSummaryFailureArchivesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail llmtest.Response
	}{
		{"server error", llmtest.Response{Status: http.StatusInternalServerError, Text: "boom"}},
		{"garbage", llmtest.Response{Garbage: true}},
		{"empty summary", llmtest.Response{Text: "  \n "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var failing atomic.Bool
			failing.Store(true)
			entered := make(chan struct{}, 1)
			release := make(chan struct{})
			srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
				if failing.Load() {
					return tc.fail
				}
				entered <- struct{}{}
				select {
				case <-release:
				case <-time.After(10 * time.Second):
				}
				return llmtest.Response{Text: "Ann paid for everything."}
			})
			var releaseOnce sync.Once
			t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
			st := openStore(t)
			s := New(st, newClient(srv, -1), llm.NewCounter("test-model"), Policy{}, nil)
			var mu sync.Mutex
			var notified []pipeline.Key
			key := pipeline.Key{Channel: "whatsapp", Chat: "4915112345678@s.whatsapp.net"}
			notify := func(_ context.Context, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					t.Error("Notify without an error")
				}
				notified = append(notified, key)
			}
			for i := 1; i <= 10; i++ {
				exchange(t, st, key, "ann", i)
			}
			unchanged := func(when string) {
				t.Helper()
				got := status(t, st, key)
				if got.Archived != 0 || got.Active != 20 || got.TurnsSinceSummary != 10 || got.ActiveSummaries() != 0 {
					t.Errorf("%s: status = %+v, want nothing archived, 20 active, 10 turns, no summary", when, got)
				}
				if sums := summaries(t, st, key, false); len(sums) != 0 {
					t.Errorf("%s: %d summaries stored", when, len(sums))
				}
			}

			// At the trigger, synchronously: an error, nothing changed.
			res, err := s.Run(ctx, key)
			if err == nil || errors.Is(err, ErrNothingToSummarize) {
				t.Fatalf("Run = %+v, %v; want the model's failure", res, err)
			}
			if res.Archived != 0 || len(res.Created) != 0 {
				t.Errorf("failed Run reports %+v", res)
			}
			unchanged("after a failed Run")

			// The same in the background: the conversation is told once.
			if !s.MaybeStart(ctx, key, 10, notify) {
				t.Fatal("MaybeStart did not start a run at the threshold")
			}
			waitIdle(s)
			unchanged("after a failed background run")
			mu.Lock()
			if len(notified) != 1 || notified[0] != key {
				t.Errorf("Notify calls = %v, want one for %s", notified, key)
			}
			mu.Unlock()

			// The model recovers; the next exchange triggers again and an
			// exchange taken while the summary is written still counts.
			failing.Store(false)
			exchange(t, st, key, "ann", 11)
			if !s.MaybeStart(ctx, key, 10, notify) {
				t.Fatal("MaybeStart did not retry at the next trigger")
			}
			<-entered
			exchange(t, st, key, "ann", 12)
			releaseOnce.Do(func() { close(release) })
			waitIdle(s)

			got := status(t, st, key)
			// 11 exchanges were active at the run: 7 archived, 4 kept.
			if got.Archived != 14 || got.Active != 10 || got.Total != 24 || got.ActiveByLevel[1] != 1 {
				t.Errorf("after recovery: status = %+v, want 14 archived, 10 active, one summary", got)
			}
			if got.TurnsSinceSummary != 1 {
				t.Errorf("after recovery: %d turns since the summary, want 1 (the exchange taken meanwhile)", got.TurnsSinceSummary)
			}
			mu.Lock()
			if len(notified) != 1 {
				t.Errorf("Notify called %d times, want once", len(notified))
			}
			mu.Unlock()
			if n := len(srv.Requests()); n != 3 {
				t.Errorf("%d requests, want 3 (no retries configured)", n)
			}
		})
	}
}

func TestRunNothingToSummarize(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewServer(t, summarizerHandler)
	st := openStore(t)
	s := New(st, newClient(srv, -1), llm.NewCounter("test-model"), Policy{KeepRecentTurns: 4}, nil)
	notified := 0
	notify := func(context.Context, error) { notified++ }
	key := pipeline.Key{Channel: "console", Chat: "local"}
	if _, err := s.Run(ctx, key); !errors.Is(err, ErrNothingToSummarize) {
		t.Errorf("Run on an empty conversation = %v, want ErrNothingToSummarize", err)
	}
	exchange(t, st, key, "c", 1)
	if _, err := s.Run(ctx, key); !errors.Is(err, ErrNothingToSummarize) {
		t.Errorf("Run with one exchange = %v, want ErrNothingToSummarize (the last exchange stays)", err)
	}
	for i := 2; i <= 4; i++ {
		exchange(t, st, key, "c", i)
	}
	// The trigger keeps the keep-recent window: nothing to summarize.
	if !s.MaybeStart(ctx, key, 4, notify) {
		t.Fatal("MaybeStart did not start at the threshold")
	}
	s.Wait()
	if notified != 0 {
		t.Errorf("Notify called %d times for nothing to summarize", notified)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests to the model, want none", n)
	}
	if got := status(t, st, key); got.Archived != 0 || got.TurnsSinceSummary != 4 {
		t.Errorf("status = %+v", got)
	}
}

// TestRunNowSummarizesTheKeptWindow is /summary_now in a short
// conversation: four exchanges, all inside the trigger's keep-recent window
// of 4. Before, Run answered "nothing to summarize"; seed 002 says it
// summarizes regardless of the threshold, and only the last exchange stays.
func TestRunNowSummarizesTheKeptWindow(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewServer(t, summarizerHandler)
	st := openStore(t)
	s := New(st, newClient(srv, -1), llm.NewCounter("test-model"), Policy{KeepRecentTurns: 4}, nil)
	key := pipeline.Key{Channel: "telegram", Chat: "42"}
	for i := 1; i <= 4; i++ {
		exchange(t, st, key, "c", i)
	}
	res, err := s.Run(ctx, key)
	if err != nil {
		t.Fatalf("Run with four exchanges and a keep-recent window of 4: %v", err)
	}
	if res.Archived != 6 || len(res.Created) != 1 {
		t.Errorf("Run = %+v, want 6 messages archived into one summary", res)
	}
	got := status(t, st, key)
	if got.Active != 2 || got.Archived != 6 || got.ActiveByLevel[1] != 1 {
		t.Errorf("status = %+v, want the last exchange active, 6 archived, one summary", got)
	}
	active, err := st.Active(ctx, key)
	if err != nil || len(active) != 2 || active[0].Role != memory.RoleUser {
		t.Fatalf("active = %+v, %v; want the last exchange", active, err)
	}
}

func TestOneRunAtATimePerConversation(t *testing.T) {
	ctx := context.Background()
	entered := make(chan string, 8)
	release := make(chan struct{})
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		who := "beta"
		if strings.Contains(r.Messages[len(r.Messages)-1].Content, "alpha") {
			who = "alpha"
		}
		entered <- who
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		return llmtest.Response{Text: "summary of " + who}
	})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	st := openStore(t)
	s := New(st, newClient(srv, -1), llm.NewCounter("test-model"), Policy{}, nil)
	failed := func(ctx context.Context, err error) { t.Errorf("a run failed: %v", err) }
	a := pipeline.Key{Channel: "telegram", Chat: "100"}
	b := pipeline.Key{Channel: "telegram", Chat: "200"}
	for i := 1; i <= 10; i++ {
		exchange(t, st, a, "alpha", i)
		exchange(t, st, b, "beta", i)
	}
	wait := func(want string) {
		t.Helper()
		select {
		case got := <-entered:
			if got != want {
				t.Fatalf("the model got a request for %s, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no request for %s", want)
		}
	}

	if !s.MaybeStart(ctx, a, 10, failed) {
		t.Fatal("MaybeStart(a) did not start")
	}
	wait("alpha") // a's run is now blocked in the model
	for range 2 {
		if s.MaybeStart(ctx, a, 10, failed) {
			t.Error("a second run started for a conversation that has one running")
		}
	}
	if !s.Running(a) || s.Running(b) {
		t.Errorf("Running: a %v, b %v; want a only", s.Running(a), s.Running(b))
	}
	// Another conversation is not held up by a's run.
	if !s.MaybeStart(ctx, b, 10, failed) {
		t.Fatal("MaybeStart(b) did not start while a runs")
	}
	wait("beta")
	if !s.Running(a) || !s.Running(b) {
		t.Errorf("Running: a %v, b %v; want both", s.Running(a), s.Running(b))
	}
	releaseOnce.Do(func() { close(release) })
	s.Wait()

	select {
	case who := <-entered:
		t.Errorf("an extra request for %s", who)
	default:
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	for _, k := range []pipeline.Key{a, b} {
		if s.Running(k) {
			t.Errorf("%s still running after Wait", k)
		}
		got := status(t, st, k)
		if got.ActiveByLevel[1] != 1 || got.Archived != 12 || got.TurnsSinceSummary != 0 {
			t.Errorf("%s: status = %+v, want one summary and 12 archived", k, got)
		}
	}
}

func TestFoldingRecursion(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewServer(t, summarizerHandler)
	st := openStore(t)
	p := Policy{KeepRecentTurns: 1, MaxActivePerLevel: 2, MaxActiveTotal: 4}
	s := New(st, newClient(srv, -1), llm.NewCounter("test-model"), p, nil)
	key := pipeline.Key{Channel: "telegram", Chat: "-1001234", Thread: "7"}

	// Each run archives one exchange as a level-1 summary; the expected
	// active summaries per level after it follow the per-level cap (2) and
	// the total cap (4).
	want := []map[int]int{
		{1: 1},
		{1: 2},
		{1: 1, 2: 1},
		{1: 2, 2: 1},
		{1: 1, 2: 2},
		{1: 2, 2: 2},
		{1: 1, 2: 1, 3: 1},
		{1: 2, 2: 1, 3: 1},
		{1: 1, 2: 2, 3: 1},
		{2: 1, 3: 2}, // 5 active > 4: two level-1 fold, then level 2 overflows
		{1: 1, 2: 1, 3: 2},
		{2: 2, 3: 2},
		{1: 1, 3: 1, 4: 1},
	}
	exchange(t, st, key, "topic", 0)
	for run, wantLevels := range want {
		exchange(t, st, key, "topic", run+1)
		res, err := s.Run(ctx, key)
		if err != nil {
			t.Fatalf("run %d: %v", run+1, err)
		}
		if res.Archived != 2 || len(res.Created) == 0 || res.Created[0].Level != 1 {
			t.Fatalf("run %d: result %+v, want one exchange archived as a level-1 summary first", run+1, res)
		}
		for i := 1; i < len(res.Created); i++ {
			if res.Created[i].Level < 2 {
				t.Errorf("run %d: created[%d] has level %d", run+1, i, res.Created[i].Level)
			}
		}
		got := status(t, st, key)
		levels := map[int]int{}
		for l, n := range got.ActiveByLevel {
			if n > 0 {
				levels[l] = n
			}
			if n > p.MaxActivePerLevel {
				t.Errorf("run %d: %d active summaries at level %d, cap %d", run+1, n, l, p.MaxActivePerLevel)
			}
		}
		if got.ActiveSummaries() > p.MaxActiveTotal {
			t.Errorf("run %d: %d active summaries, cap %d", run+1, got.ActiveSummaries(), p.MaxActiveTotal)
		}
		if !reflect.DeepEqual(levels, wantLevels) {
			t.Errorf("run %d: active by level %v, want %v", run+1, levels, wantLevels)
		}
		if got.Active != 2 || got.Archived != int64(2*(run+1)) {
			t.Errorf("run %d: %d active, %d archived messages", run+1, got.Active, got.Archived)
		}

		// The active summaries partition the archive: every archived
		// message is behind exactly one of them, and read highest level
		// first they are in chronological order.
		active := summaries(t, st, key, true)
		sort.SliceStable(active, func(i, j int) bool { return active[i].Level > active[j].Level })
		seen := map[int64]bool{}
		for i, sm := range active {
			msgs := provenance(t, st, key, sm.ID)
			checkRange(t, sm, msgs)
			for _, m := range msgs {
				if seen[m.ID] {
					t.Errorf("run %d: message %d is behind two active summaries", run+1, m.ID)
				}
				seen[m.ID] = true
			}
			if i > 0 && !active[i-1].To.Before(sm.From) {
				t.Errorf("run %d: summary %d (level %d) does not follow summary %d (level %d) in time", run+1, sm.ID, sm.Level, active[i-1].ID, active[i-1].Level)
			}
		}
		if int64(len(seen)) != got.Archived {
			t.Errorf("run %d: active summaries cover %d messages, %d are archived", run+1, len(seen), got.Archived)
		}
	}
	if got := status(t, st, key); got.HighestLevel != 4 {
		t.Errorf("highest level %d, want 4", got.HighestLevel)
	}
	// Every fold request used the fold instructions and the texts of its
	// sources.
	for _, sm := range summaries(t, st, key, false) {
		if sm.Level < 2 {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(sm.Text, "Merged summary %d", &n); err != nil {
			t.Fatalf("level-%d summary %q was not written by a fold request", sm.Level, sm.Text)
		}
		r := srv.Requests()[n-1]
		if r.Messages[0].Content != FoldInstructions {
			t.Errorf("fold request %d has the wrong instructions", n)
		}
		if len(sm.Sources) < 2 {
			t.Errorf("level-%d summary %d has sources %v", sm.Level, sm.ID, sm.Sources)
		}
	}
}

func TestKeepCut(t *testing.T) {
	// roles: u user, a assistant, s system.
	msgs := func(roles string) []memory.Message {
		var out []memory.Message
		for i, r := range roles {
			m := memory.Message{ID: int64(i + 1)}
			switch r {
			case 'u':
				m.Role = memory.RoleUser
			case 'a':
				m.Role = memory.RoleAssistant
			case 's':
				m.Role = memory.RoleSystem
			}
			out = append(out, m)
		}
		return out
	}
	for _, tc := range []struct {
		roles string
		keep  int
		want  int
	}{
		{"", 4, 0},
		{"ua", 1, 0},
		{"uaua", 4, 0},
		{"uauauaua", 4, 0},    // exactly the window: nothing to archive
		{"uauauauaua", 4, 2},  // five exchanges: the first goes
		{"uauauauau", 4, 2},   // a trailing unanswered message counts as a turn
		{"auauauaua", 4, 1},   // a leading reply without its question goes too
		{"uuauauaua", 4, 1},   // two users before one reply (a group): each counts
		{"suauauauaua", 4, 3}, // a system message before the window is archived
		{"uaaauauaua", 4, 0},  // several replies to one question are one turn
		{"uauauauauaua", 1, 10},
		{"uauauauauaua", 6, 0},
		{"uauauauauaua", 5, 2},
	} {
		if got := keepCut(msgs(tc.roles), tc.keep); got != tc.want {
			t.Errorf("keepCut(%q, %d) = %d, want %d", tc.roles, tc.keep, got, tc.want)
		}
	}
}

func TestDue(t *testing.T) {
	for _, tc := range []struct {
		turns, threshold int
		want             bool
	}{
		{0, 10, false},
		{9, 10, false},
		{10, 10, true},
		{11, 10, true},
		{1, 1, true},
		{5, 0, false},
	} {
		if got := Due(memory.Status{TurnsSinceSummary: tc.turns}, tc.threshold); got != tc.want {
			t.Errorf("Due(%d turns, threshold %d) = %v", tc.turns, tc.threshold, got)
		}
	}
}

// /summary_now and a background run never write the same conversation's
// summary at once: the second caller is told one is running.
func TestRunRefusesWhileBackgroundRunIsBusy(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	h := func(r llmtest.Request) llmtest.Response {
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
		return llmtest.Response{Text: "a summary"}
	}
	srv := llmtest.NewServer(t, h)
	ctx := context.Background()
	store, err := memory.Open(ctx, memory.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(ctx)
	client := llm.New(llm.Options{BaseURL: srv.URL, APIKey: "k", Model: "gpt-4o-mini", MaxRetries: -1})
	s := New(store, client, llm.NewCounter("gpt-4o-mini"), Policy{KeepRecentTurns: 1}, nil)
	k := pipeline.Key{Channel: "console", Chat: "local"}
	for i := 0; i < 3; i++ {
		id := fmt.Sprint(i)
		if err := store.Append(ctx, memory.Message{Key: k, Role: memory.RoleUser, PlatformID: id, Text: "hello " + id},
			memory.Message{Key: k, Role: memory.RoleAssistant, ReplyTo: id, Text: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	if !s.MaybeStart(ctx, k, 3, nil) {
		t.Fatal("the trigger did not start a run")
	}
	<-started
	if _, err := s.Run(ctx, k); !errors.Is(err, ErrRunning) {
		t.Errorf("Run during a background run = %v, want ErrRunning", err)
	}
	close(release)
	s.Wait()
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d summarization requests, want 1", n)
	}
}
