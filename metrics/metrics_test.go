package metrics

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
)

// fakeQueue is a write queue whose state the test sets.
type fakeQueue struct {
	mu sync.Mutex
	st memory.WriteStats
}

func (q *fakeQueue) WriteStats() memory.WriteStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.st
}

func (q *fakeQueue) set(st memory.WriteStats) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.st = st
}

// scrape returns the /metrics text.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics answered %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want the text format", ct)
	}
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}

// sample returns the value of the series written exactly as series (name
// and labels in the exposition's order), or "" when absent.
func sample(text, series string) string {
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

func TestMetricsAfterObservations(t *testing.T) {
	q := &fakeQueue{}
	m := New(Options{Version: "1.2.3", Channels: []string{"telegram"}, WriteQueue: q})
	reply := llm.Reply{Text: "hi", Model: "gpt-test", PromptTokens: 120, CompletionTokens: 30}
	m.Turn("telegram", "ok", 1500*time.Millisecond, reply)
	m.Turn("telegram", "ok", 500*time.Millisecond, reply)
	m.Turn("telegram", "llm_error", 0, llm.Reply{})
	m.Turn("console", "not_configured", time.Millisecond, llm.Reply{})
	m.Turn("telegram", "send_error", time.Second, llm.Reply{Text: "x", PromptTokens: 5}) // no model reported
	m.SummaryCreated(1)
	m.SummaryCreated(1)
	m.SummaryCreated(2)
	m.ChannelReconnected("telegram")
	q.set(memory.WriteStats{Queued: 7, Failures: 3, Failing: errors.New("disk full")})

	text := scrape(t, m)
	for _, tc := range []struct{ series, want string }{
		{`recall_turns_total{channel="telegram",outcome="ok"}`, "2"},
		{`recall_turns_total{channel="telegram",outcome="llm_error"}`, "1"},
		{`recall_turns_total{channel="telegram",outcome="send_error"}`, "1"},
		{`recall_turns_total{channel="console",outcome="not_configured"}`, "1"},
		{`recall_llm_latency_seconds_count`, "3"}, // ok, ok, send_error
		{`recall_llm_latency_seconds_sum`, "3"},
		{`recall_llm_latency_seconds_bucket{le="0.5"}`, "1"},
		{`recall_llm_latency_seconds_bucket{le="+Inf"}`, "3"},
		{`recall_llm_tokens_total{kind="prompt",model="gpt-test"}`, "240"},
		{`recall_llm_tokens_total{kind="completion",model="gpt-test"}`, "60"},
		{`recall_llm_tokens_total{kind="prompt",model="unknown"}`, "5"},
		{`recall_summaries_created_total{level="1"}`, "2"},
		{`recall_summaries_created_total{level="2"}`, "1"},
		{`recall_channel_reconnects_total{channel="telegram"}`, "1"},
		{`recall_write_queue_depth`, "7"},
		{`recall_write_queue_failing`, "1"},
		{`recall_write_failures_total`, "3"},
		{`recall_build_info{version="1.2.3"}`, "1"},
	} {
		if got := sample(text, tc.series); got != tc.want {
			t.Errorf("%s = %q, want %q", tc.series, got, tc.want)
		}
	}
	for _, name := range []string{
		"# TYPE recall_turns_total counter",
		"# TYPE recall_llm_latency_seconds histogram",
		"# TYPE recall_llm_tokens_total counter",
		"# TYPE recall_summaries_created_total counter",
		"# TYPE recall_channel_reconnects_total counter",
		"# TYPE recall_write_queue_depth gauge",
		"# TYPE recall_write_failures_total counter",
		"go_goroutines ",
		"process_start_time_seconds ",
	} {
		if !strings.Contains(text, name) {
			t.Errorf("/metrics lacks %q", name)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", text)
	}

	// The queue is read at each scrape.
	q.set(memory.WriteStats{Failures: 3})
	text = scrape(t, m)
	if got := sample(text, "recall_write_queue_failing"); got != "0" {
		t.Errorf("after recovery recall_write_queue_failing = %q, want 0", got)
	}
	if got := sample(text, "recall_write_queue_depth"); got != "0" {
		t.Errorf("after recovery recall_write_queue_depth = %q, want 0", got)
	}
}

// Enabled channels are visible at 0 before anything happened; the global
// registry is left alone.
func TestMetricsStartAtZero(t *testing.T) {
	m := New(Options{Channels: []string{"telegram", "whatsapp"}})
	text := scrape(t, m)
	for _, series := range []string{
		`recall_channel_reconnects_total{channel="telegram"}`,
		`recall_channel_reconnects_total{channel="whatsapp"}`,
		`recall_turns_total{channel="whatsapp",outcome="ok"}`,
	} {
		if got := sample(text, series); got != "0" {
			t.Errorf("%s = %q, want 0", series, got)
		}
	}
	if strings.Contains(text, "recall_write_queue_depth") {
		t.Errorf("no write queue given, but recall_write_queue_depth is exported")
	}
	// Two instances do not collide (no global registration).
	_ = New(Options{Channels: []string{"telegram"}})
}

// With several replicas on one database every series names its replica,
// so their counts are told apart when one Prometheus scrapes them all.
func TestReplicaLabel(t *testing.T) {
	m := New(Options{Channels: []string{"telegram"}, Replica: "recall-2", WriteQueue: &fakeQueue{}})
	m.Turn("telegram", "ok", time.Second, llm.Reply{Model: "m", PromptTokens: 3})
	body := scrape(t, m)
	for _, want := range []string{
		`recall_turns_total{channel="telegram",outcome="ok",replica="recall-2"} 1`,
		`recall_write_queue_depth{replica="recall-2"}`,
		`go_goroutines{replica="recall-2"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	if one := scrape(t, New(Options{})); strings.Contains(one, "replica=") {
		t.Errorf("a single process labels its series with a replica")
	}
}

// A model name is the LLM server's text: a quote or backslash in it stays
// inside its label value, and the scrape stays parseable.
func TestLabelValuesEscaped(t *testing.T) {
	m := New(Options{})
	m.Turn("telegram", "ok", time.Second, llm.Reply{Model: `my "best"\model` + "\nx", PromptTokens: 4})
	want := `recall_llm_tokens_total{kind="prompt",model="my \"best\"\\model\nx"} 4`
	if body := scrape(t, m); !strings.Contains(body, want) {
		t.Errorf("/metrics has no %s:\n%s", want, body)
	}
}
