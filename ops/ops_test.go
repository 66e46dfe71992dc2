package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/metrics"
	"github.com/recallbot/recall/ops"
	"github.com/recallbot/recall/pipeline"
)

// fakeChannel is a chat channel whose health the test sets.
type fakeChannel struct {
	mu  sync.Mutex
	err error
}

func (c *fakeChannel) Health() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *fakeChannel) set(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
}

var _ ops.HealthReporter = (*fakeChannel)(nil)

// legacyChannel has no Health method: it counts as healthy.
type legacyChannel struct{}

const secret = "123456:SECRET-token"

// rig is a real store with the health and metrics handlers in front of it.
type rig struct {
	store   *memory.Store
	chat    *fakeChannel
	metrics *metrics.Metrics
	h       http.Handler
}

func newRig(t *testing.T) *rig {
	t.Helper()
	s, err := memory.Open(t.Context(), memory.Options{Dir: t.TempDir(), RetryBase: time.Millisecond, RetryMax: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Some tests leave writes failing: don't wait for them.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	r := &rig{store: s, chat: &fakeChannel{}, metrics: metrics.New(metrics.Options{WriteQueue: s, Channels: []string{"telegram"}})}
	redact := strings.NewReplacer(secret, "***").Replace
	health := ops.NewHealth(redact, ops.Database(s.SQLite().DB()), ops.WriteQueueCheck(s))
	health.Add(ops.Channel("telegram", legacyChannel{}))
	health.Add(ops.Channel("whatsapp", r.chat))
	r.h = ops.Handler(health, r.metrics.Handler())
	return r
}

// get requests path and returns the status and body.
func (r *rig) get(t *testing.T, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// health requests /healthz and decodes the report.
func (r *rig) health(t *testing.T) (int, ops.Report) {
	t.Helper()
	code, body := r.get(t, "/healthz")
	var rep ops.Report
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatalf("/healthz answered %d with a body that is not a report: %v\n%s", code, err, body)
	}
	return code, rep
}

// eventually polls cond until it holds, failing after 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHealthz(t *testing.T) {
	key := pipeline.Key{Channel: "telegram", Chat: "1"}
	msg := func(text string) memory.Message {
		return memory.Message{Key: key, Role: memory.RoleUser, SenderID: "1", PlatformID: text, Text: text, Time: time.Now()}
	}
	tests := []struct {
		name     string
		breakIt  func(t *testing.T, r *rig)
		wantCode int
		wantBad  map[string]string // part → substring of its message; the others must be "ok"
	}{
		{"all healthy", func(*testing.T, *rig) {}, 200, nil},
		{"channel disconnected", func(_ *testing.T, r *rig) {
			r.chat.set(errors.New("disconnected: logged out from the phone (token " + secret + ")"))
		}, 503, map[string]string{"whatsapp": "logged out from the phone (token ***)"}},
		{"write queue failing", func(t *testing.T, r *rig) {
			if _, err := r.store.SQLite().DB().ExecContext(t.Context(), `PRAGMA query_only = 1`); err != nil {
				t.Fatal(err)
			}
			if err := r.store.Enqueue(msg("while read-only")); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the writer to fail", func() bool { return r.store.WriteStats().Failing != nil })
		}, 503, map[string]string{"write_queue": "writes failing since"}},
		{"database closed", func(t *testing.T, r *rig) {
			if err := r.store.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
		}, 503, map[string]string{"database": "closed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			tt.breakIt(t, r)
			code, rep := r.health(t)
			if code != tt.wantCode {
				t.Errorf("status %d, want %d: %+v", code, tt.wantCode, rep)
			}
			wantStatus := ops.StatusOK
			if tt.wantCode != 200 {
				wantStatus = ops.StatusUnavailable
			}
			if rep.Status != wantStatus {
				t.Errorf("status %q, want %q", rep.Status, wantStatus)
			}
			for _, part := range []string{"database", "write_queue", "telegram", "whatsapp"} {
				got, ok := rep.Parts[part]
				if !ok {
					t.Errorf("part %s missing: %+v", part, rep.Parts)
					continue
				}
				if want, bad := tt.wantBad[part]; bad {
					if got == ops.StatusOK || !strings.Contains(got, want) {
						t.Errorf("part %s = %q, want a message containing %q", part, got, want)
					}
				} else if got != ops.StatusOK {
					t.Errorf("part %s = %q, want ok", part, got)
				}
			}
			if _, body := r.get(t, "/healthz"); strings.Contains(body, secret) {
				t.Errorf("/healthz shows a secret: %s", body)
			}
		})
	}
}

// The body is exactly the documented shape when healthy, and the report
// recovers with the parts it depends on.
func TestHealthzRecovers(t *testing.T) {
	r := newRig(t)
	code, body := r.get(t, "/healthz")
	want := `{"status":"ok","parts":{"database":"ok","telegram":"ok","whatsapp":"ok","write_queue":"ok"}}` + "\n"
	if code != 200 || body != want {
		t.Fatalf("/healthz = %d %s, want 200 %s", code, body, want)
	}
	db := r.store.SQLite().DB()
	if _, err := db.ExecContext(t.Context(), `PRAGMA query_only = 1`); err != nil {
		t.Fatal(err)
	}
	key := pipeline.Key{Channel: "telegram", Chat: "1"}
	if err := r.store.Enqueue(memory.Message{Key: key, Role: memory.RoleUser, PlatformID: "1", Text: "x", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "/healthz to report the failing writes", func() bool { c, _ := r.get(t, "/healthz"); return c == 503 })
	if _, err := db.ExecContext(t.Context(), `PRAGMA query_only = 0`); err != nil {
		t.Fatal(err)
	}
	eventually(t, "/healthz to recover", func() bool { c, _ := r.get(t, "/healthz"); return c == 200 })
}

// A database that does not answer within ops.DatabaseTimeout (its only
// writer connection is held, as by a long write) is reported as such; the
// request does not hang.
func TestHealthzDatabaseBusy(t *testing.T) {
	r := newRig(t)
	conn, err := r.store.SQLite().DB().Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	code, rep := r.health(t)
	if code != 503 || !strings.Contains(rep.Parts["database"], "not answering within 2s") {
		t.Fatalf("/healthz = %d %+v, want the database not answering", code, rep)
	}
}

func TestMetricsEndpoint(t *testing.T) {
	r := newRig(t)
	r.metrics.Turn("telegram", "ok", 2*time.Second, llm.Reply{Text: "hi", Model: "m", PromptTokens: 10, CompletionTokens: 2})
	r.metrics.Turn("telegram", "llm_error", 0, llm.Reply{})
	r.metrics.SummaryCreated(1)
	r.metrics.ChannelReconnected("telegram")
	code, body := r.get(t, "/metrics")
	if code != 200 {
		t.Fatalf("/metrics answered %d", code)
	}
	for _, name := range []string{
		`recall_turns_total{channel="telegram",outcome="ok"} 1`,
		`recall_turns_total{channel="telegram",outcome="llm_error"} 1`,
		`recall_llm_latency_seconds_bucket{le="2"} 1`,
		`recall_llm_tokens_total{kind="prompt",model="m"} 10`,
		`recall_llm_tokens_total{kind="completion",model="m"} 2`,
		`recall_summaries_created_total{level="1"} 1`,
		`recall_channel_reconnects_total{channel="telegram"} 1`,
		`recall_write_queue_depth 0`,
		`recall_write_failures_total 0`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	} {
		if !strings.Contains(body, name) {
			t.Errorf("/metrics lacks %q", name)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
	if code, _ := r.get(t, "/nothing"); code != 404 {
		t.Errorf("/nothing answered %d, want 404", code)
	}
	if code, _ := r.get(t, "/"); code != 200 {
		t.Errorf("/ answered %d, want 200", code)
	}
}

// Serve serves until its context ends, then returns nil.
func TestServe(t *testing.T) {
	r := newRig(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ops.Serve(ctx, ln, r.h) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("GET /healthz = %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve returned %v after its context ended", err)
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/healthz"); err == nil {
		t.Errorf("still serving after Serve returned")
	}
}

// /healthz has an llm part from the model's last calls: a model server that
// keeps failing makes the bot unavailable, and a success heals it.
func TestHealthzLLMPart(t *testing.T) {
	var mu sync.Mutex
	status := http.StatusBadGateway
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
		mu.Lock()
		defer mu.Unlock()
		return llmtest.Response{Status: status, Text: "ok"}
	})
	model := llm.New(llm.Options{BaseURL: srv.URL, APIKey: "k", Model: "m", MaxRetries: -1, UnhealthyAfter: 2})
	h := ops.NewHealth(nil, ops.LLM(model))
	get := func() (int, ops.Report) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		var rep ops.Report
		if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		return rec.Code, rep
	}
	if code, rep := get(); code != http.StatusOK || rep.Parts["llm"] != ops.StatusOK {
		t.Fatalf("before any call: %d %+v", code, rep)
	}
	for range 2 {
		model.Chat(t.Context(), []llm.Message{{Role: llm.RoleUser, Content: "hi"}})
	}
	code, rep := get()
	if code != http.StatusServiceUnavailable || !strings.Contains(rep.Parts["llm"], "HTTP 502") {
		t.Fatalf("after 2 failed calls: %d %+v", code, rep)
	}
	mu.Lock()
	status = http.StatusOK
	mu.Unlock()
	if _, err := model.Chat(t.Context(), []llm.Message{{Role: llm.RoleUser, Content: "hi"}}); err != nil {
		t.Fatal(err)
	}
	if code, rep := get(); code != http.StatusOK {
		t.Fatalf("after a success: %d %+v", code, rep)
	}
}

// Notes inform /healthz without judging: the status stays ok, secrets are
// scrubbed, and the JSON carries them under "notes".
func TestHealthzNotes(t *testing.T) {
	h := ops.NewHealth(func(s string) string { return strings.ReplaceAll(s, "s3cret", "[redacted]") },
		ops.Check{Name: "database", Run: func(context.Context) error { return nil }})
	h.AddNote(ops.Note{Name: "lease channel:telegram", Run: func(context.Context) string { return "held by replica-b (s3cret)" }})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	var rep ops.Report
	if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusOK || rep.Status != ops.StatusOK {
		t.Errorf("a note changed the status: %d %+v", rec.Code, rep)
	}
	if got := rep.Notes["lease channel:telegram"]; got != "held by replica-b ([redacted])" {
		t.Errorf("note = %q", got)
	}
}

// A bot with no model configured runs (commands work) but cannot answer a
// chat message: its llm part says so and the report is degraded, with a
// 200 (a restart would not help), unless another part fails.
func TestHealthzLLMNotConfigured(t *testing.T) {
	failing := &fakeChannel{}
	h := ops.NewHealth(nil, ops.LLMNotConfigured(), ops.Channel("telegram", failing))
	get := func() (int, ops.Report) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		var rep ops.Report
		if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		return rec.Code, rep
	}
	code, rep := get()
	if code != http.StatusOK || rep.Status != ops.StatusDegraded {
		t.Fatalf("no model: want 200 degraded, got %d %+v", code, rep)
	}
	for _, want := range []string{"not configured", "llm.base_url", "llm.model"} {
		if !strings.Contains(rep.Parts["llm"], want) {
			t.Errorf("the llm part does not say %q: %q", want, rep.Parts["llm"])
		}
	}
	if rep.Parts["telegram"] != ops.StatusOK {
		t.Errorf("telegram part: %q", rep.Parts["telegram"])
	}
	failing.set(errors.New("disconnected"))
	if code, rep := get(); code != http.StatusServiceUnavailable || rep.Status != ops.StatusUnavailable {
		t.Fatalf("no model and telegram down: want 503 unavailable, got %d %+v", code, rep)
	}
}
