package llm_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
)

// refusedURL is a base URL nothing listens on.
func refusedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/v1"
}

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A wrong key, a wrong URL or a wrong model is found at start and logged at
// error level with the fix, instead of looking healthy until a user writes.
func TestCheckAtStart(t *testing.T) {
	keyed := func(ids ...string) func(string) llmtest.Models {
		return func(key string) llmtest.Models {
			if key != testKey {
				return llmtest.Models{Status: http.StatusUnauthorized}
			}
			return llmtest.Models{IDs: ids}
		}
	}
	srv := llmtest.NewServer(t, llmtest.Echo(""))
	srv.OnModels(keyed("gpt-4o-mini", "llama3:latest", "test-model"))
	for _, tc := range []struct {
		name    string
		url     string
		mod     func(*llm.Options)
		is      error  // nil: healthy
		fix     string // in the error and the log
		healthy bool
	}{
		{name: "ok", url: srv.URL, healthy: true},
		{name: "ollama tag", url: srv.URL, mod: func(o *llm.Options) { o.Model = "llama3" }, healthy: true},
		{name: "wrong key", url: srv.URL, mod: func(o *llm.Options) { o.APIKey = "sk-wrong" }, is: llm.ErrAuth, fix: "set llm.api_key"},
		{name: "nothing listening", url: refusedURL(t), is: llm.ErrUnreachable, fix: "check llm.base_url"},
		{name: "unknown model", url: srv.URL, mod: func(o *llm.Options) { o.Model = "gpt-4o-mni" }, is: llm.ErrUnknownModel,
			fix: "(it offers gpt-4o-mini, llama3:latest, test-model): set llm.model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, tc.url, tc.mod)
			var buf logBuffer
			err := c.CheckAtStart(t.Context(), slog.New(slog.NewTextHandler(&buf, nil)))
			switch {
			case tc.healthy:
				if err != nil || c.Health() != nil || !strings.Contains(buf.String(), "level=INFO") {
					t.Fatalf("check %v, health %v, log:\n%s", err, c.Health(), buf.String())
				}
				return
			case !errors.Is(err, tc.is):
				t.Fatalf("check = %v, want %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.fix) {
				t.Errorf("check error %q lacks the fix %q", err, tc.fix)
			}
			if log := buf.String(); !strings.Contains(log, "level=ERROR") || !strings.Contains(log, tc.fix) || strings.Contains(log, "sk-wrong") {
				t.Errorf("log is not an error with the fix (and no key):\n%s", log)
			}
			if err := c.Health(); err == nil || !strings.Contains(err.Error(), "the start-up check failed") {
				t.Errorf("after a failed check, Health() = %v", err)
			}
		})
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the check made %d chat calls; GET /models is enough", n)
	}
}

// A server without GET /models is checked with a one-token chat.
func TestCheckWithoutModelsEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		fix    string // "" = ok
	}{
		{"answers", http.StatusOK, ""},
		{"understands but refuses", http.StatusBadRequest, ""},
		{"unknown model", http.StatusNotFound, "check llm.model"},
		{"wrong key", http.StatusUnauthorized, "set llm.api_key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var maxTokens []int
			var mu sync.Mutex
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/chat/completions" {
					http.NotFound(w, r)
					return
				}
				mu.Lock()
				maxTokens = append(maxTokens, 0)
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				if tc.status != http.StatusOK {
					w.WriteHeader(tc.status)
					w.Write([]byte(`{"error":{"message":"no","type":"x"}}`))
					return
				}
				w.Write([]byte(`{"id":"1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"p"},"finish_reason":"length"}]}`))
			}))
			t.Cleanup(srv.Close)
			c := newClient(t, srv.URL+"/v1", nil)
			err := c.Check(t.Context())
			if len(maxTokens) != 1 {
				t.Fatalf("%d probe calls, want 1", len(maxTokens))
			}
			if tc.fix == "" {
				if err != nil {
					t.Fatalf("check = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.fix) {
				t.Fatalf("check = %v, want it to say %q", err, tc.fix)
			}
		})
	}
}

// /healthz's llm part: unhealthy after UnhealthyAfter failed calls in a
// row, healthy again after one success; a request the server refused for its
// content says nothing about the model.
func TestHealthFollowsTheLastCalls(t *testing.T) {
	var mu sync.Mutex
	status := http.StatusBadGateway
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
		mu.Lock()
		defer mu.Unlock()
		return llmtest.Response{Status: status, Text: "ok"}
	})
	set := func(s int) { mu.Lock(); status = s; mu.Unlock() }
	c := newClient(t, srv.URL, func(o *llm.Options) { o.MaxRetries = -1; o.UnhealthyAfter = 3 })
	for i := range 2 {
		if _, err := c.Chat(t.Context(), hello); err == nil {
			t.Fatal("no error")
		}
		if err := c.Health(); err != nil {
			t.Fatalf("unhealthy after %d failures: %v", i+1, err)
		}
	}
	set(http.StatusBadRequest) // the request, not the model
	c.Chat(t.Context(), hello)
	if err := c.Health(); err != nil {
		t.Fatalf("a 400 counted: %v", err)
	}
	set(http.StatusBadGateway)
	c.Chat(t.Context(), hello)
	err := c.Health()
	if err == nil || !strings.Contains(err.Error(), "the last 3 calls to the model failed") || !strings.Contains(err.Error(), "HTTP 502") {
		t.Fatalf("health after 3 failures = %v", err)
	}
	set(http.StatusOK)
	if _, err := c.Chat(t.Context(), hello); err != nil {
		t.Fatal(err)
	}
	if err := c.Health(); err != nil {
		t.Fatalf("still unhealthy after a success: %v", err)
	}
}

// The user reads which of the three it is: the key refused, the server
// unreachable, or the server failing.
func TestUserMessageNamesTheCause(t *testing.T) {
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if r.APIKey != testKey {
			return llmtest.Response{Status: http.StatusUnauthorized}
		}
		return llmtest.Response{Status: http.StatusInternalServerError}
	})
	for _, tc := range []struct {
		name string
		url  string
		key  string
		want string
	}{
		{"key refused", srv.URL, "sk-wrong", "refused the bot's API key (operator: check llm.api_key"},
		{"unreachable", refusedURL(t), testKey, "model server is unreachable"},
		{"server failed", srv.URL, testKey, "model server failed (HTTP 500)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, tc.url, func(o *llm.Options) { o.APIKey = tc.key; o.MaxRetries = -1 })
			_, err := c.Chat(t.Context(), hello)
			if got := llm.UserMessage(err); !strings.Contains(got, tc.want) {
				t.Errorf("UserMessage(%v) = %q, want %q", err, got, tc.want)
			}
		})
	}
}

// One deadline for the whole turn: retries share it, and the user is told
// it took too long instead of waiting through every attempt's timeout.
func TestTurnTimeoutBoundsRetries(t *testing.T) {
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response { return llmtest.Response{Hang: true} })
	c := newClient(t, srv.URL, func(o *llm.Options) {
		o.Timeout, o.RequestTimeout = time.Hour, time.Hour // an attempt alone would wait an hour
		o.TurnTimeout = 100 * time.Millisecond
		o.MaxRetries = 5
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a bound for the test, not the client
	defer cancel()
	_, err := c.Chat(ctx, hello)
	if !errors.Is(err, llm.ErrTimeout) || !strings.Contains(err.Error(), "llm.turn_timeout") {
		t.Fatalf("err = %v, want the turn's timeout", err)
	}
	if got := llm.UserMessage(err); !strings.Contains(got, "took too long") {
		t.Errorf("UserMessage = %q", got)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}

// An attempt that timed out is retried once, not MaxRetries times.
func TestTimedOutAttemptRetriedOnce(t *testing.T) {
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response { return llmtest.Response{Hang: true} })
	for _, stream := range []bool{false, true} {
		c := newClient(t, srv.URL, func(o *llm.Options) {
			o.Timeout, o.RequestTimeout = 20*time.Millisecond, 20*time.Millisecond
			o.MaxRetries = 5
		})
		recordSleeps(c)
		before := len(srv.Requests())
		var err error
		if stream {
			_, err = c.Stream(t.Context(), hello, nil)
		} else {
			_, err = c.Chat(t.Context(), hello)
		}
		if !errors.Is(err, llm.ErrTimeout) {
			t.Fatalf("stream %v: err = %v", stream, err)
		}
		if n := len(srv.Requests()) - before; n != 2 {
			t.Errorf("stream %v: %d attempts, want 2 (one retry after a timeout)", stream, n)
		}
	}
}

// A stream whose text flows is not cut by the turn's deadline: it bounds
// the silence before the first word, not a long answer.
func TestTurnTimeoutEndsWhenTextFlows(t *testing.T) {
	step := make(chan struct{})
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
		return llmtest.Response{Pieces: []string{"one ", "two ", "three"}, Step: step}
	})
	c := newClient(t, srv.URL, func(o *llm.Options) { o.TurnTimeout = 50 * time.Millisecond })
	go func() { step <- struct{}{} }() // the first piece at once
	var got []string
	rep, err := c.Stream(t.Context(), hello, func(d string) {
		got = append(got, d)
		if len(got) == 1 {
			// Past the turn's deadline before the rest comes.
			time.Sleep(100 * time.Millisecond)
			close(step)
		}
	})
	if err != nil || rep.Text != "one two three" {
		t.Fatalf("reply %q, err %v", rep.Text, err)
	}
}

// A slow model that keeps producing is never cut: it sends chunks without
// text first (a model thinking, as Ollama's reasoning models do), its
// first word comes after the turn's deadline (TurnTimeout), and the whole
// answer takes longer than the silence timeout (Timeout) — each gap well
// within it.
func TestSlowStreamThatKeepsWritingIsNotCut(t *testing.T) {
	pieces := make([]string, 20)
	for i := 10; i < len(pieces); i++ {
		pieces[i] = fmt.Sprintf("w%d ", i) // the first 10 chunks hold no text
	}
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
		return llmtest.Response{Pieces: pieces, PieceDelay: 20 * time.Millisecond} // 400 ms in all
	})
	c := newClient(t, srv.URL, func(o *llm.Options) {
		o.Timeout, o.TurnTimeout = 200*time.Millisecond, 200*time.Millisecond
	})
	start := time.Now()
	rep, err := c.Stream(t.Context(), hello, nil)
	if err != nil || rep.Text != strings.Join(pieces, "") {
		t.Fatalf("reply %q, err %v", rep.Text, err)
	}
	if took := time.Since(start); took < 400*time.Millisecond {
		t.Fatalf("the stream took %s: not longer than the timeouts, the test proves nothing", took)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}

// A model that goes silent longer than the silence timeout fails with a
// message that says so (retried once first), and the user reads that it
// took too long.
func TestSilentStreamFailsClearly(t *testing.T) {
	never := make(chan struct{}) // no piece is ever released
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
		return llmtest.Response{Text: "never sent", Step: never}
	})
	c := newClient(t, srv.URL, func(o *llm.Options) { o.Timeout = 50 * time.Millisecond })
	_, err := c.Stream(t.Context(), hello, nil)
	if !errors.Is(err, llm.ErrTimeout) || !strings.Contains(err.Error(), "the model sent nothing for 50ms (llm.timeout)") {
		t.Fatalf("err = %v, want the silence timeout named", err)
	}
	if got := llm.UserMessage(err); !strings.Contains(got, "took too long") {
		t.Errorf("UserMessage = %q", got)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d attempts, want 2 (one retry after a timeout)", n)
	}
}

// A non-streamed request shows nothing until it ends: the silence timeout
// does not bound it, RequestTimeout does.
func TestNonStreamedRequestHasItsOwnBound(t *testing.T) {
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if r.N == 1 {
			return llmtest.Response{Text: "slow but sure", Delay: 150 * time.Millisecond}
		}
		return llmtest.Response{Hang: true}
	})
	c := newClient(t, srv.URL, func(o *llm.Options) {
		o.Timeout, o.RequestTimeout, o.MaxRetries = 20*time.Millisecond, 5*time.Second, -1
	})
	if rep, err := c.Chat(t.Context(), hello); err != nil || rep.Text != "slow but sure" {
		t.Fatalf("a 150 ms answer with a 20 ms silence timeout: %q, %v", rep.Text, err)
	}
	c = newClient(t, srv.URL, func(o *llm.Options) {
		o.Timeout, o.RequestTimeout, o.MaxRetries = time.Hour, 50*time.Millisecond, -1
	})
	_, err := c.Chat(t.Context(), hello)
	if !errors.Is(err, llm.ErrTimeout) || !strings.Contains(err.Error(), "no answer within 50ms") {
		t.Fatalf("err = %v, want RequestTimeout's bound", err)
	}
}
