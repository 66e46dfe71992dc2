package llm_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
)

const testKey = "sk-test-S3CRET-key-0123456789"

var hello = []llm.Message{
	{Role: llm.RoleSystem, Content: "You are a test."},
	{Role: llm.RoleUser, Content: "hello"},
}

// newClient returns a client for srv with tiny backoff delays; mod may
// adjust the options.
func newClient(t *testing.T, baseURL string, mod func(*llm.Options)) *llm.Client {
	t.Helper()
	o := llm.Options{
		BaseURL:    baseURL,
		APIKey:     testKey,
		Model:      "test-model",
		Timeout:    10 * time.Second,
		MaxRetries: 3,
		BaseDelay:  time.Millisecond,
		MaxDelay:   5 * time.Millisecond,
	}
	if mod != nil {
		mod(&o)
	}
	return llm.New(o)
}

// recordSleeps makes c's backoff instant and records the requested waits.
func recordSleeps(c *llm.Client) func() []time.Duration {
	var mu sync.Mutex
	var got []time.Duration
	llm.SetSleep(c, func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		got = append(got, d)
		mu.Unlock()
		return ctx.Err()
	})
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), got...)
	}
}

func assertNoKey(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if strings.Contains(err.Error(), testKey) {
		t.Fatalf("error leaks the API key: %v", err)
	}
	if msg := llm.UserMessage(err); strings.Contains(msg, testKey) || strings.Contains(msg, "llm:") {
		t.Fatalf("UserMessage leaks internals: %q", msg)
	}
}

func TestChat(t *testing.T) {
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		resp := llmtest.Echo("echo: ")(r)
		resp.PromptTokens, resp.CompletionTokens = 12, 3
		return resp
	})
	c := newClient(t, srv.URL, func(o *llm.Options) { o.Temperature = 0.7; o.MaxTokens = 99 })
	if c.Model() != "test-model" {
		t.Fatalf("Model() = %q", c.Model())
	}
	rep, err := c.Chat(t.Context(), hello)
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Reply{Text: "echo: hello", Model: "test-model", PromptTokens: 12, CompletionTokens: 3, FinishReason: "stop"}
	if !reflect.DeepEqual(rep, want) {
		t.Fatalf("reply = %+v, want %+v", rep, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Model != "test-model" || r.Stream || r.N != 1 || r.APIKey != testKey || r.MaxTokens != 99 ||
		r.Temperature < 0.69 || r.Temperature > 0.71 {
		t.Fatalf("request = %+v", r)
	}
	if len(r.Messages) != 2 || !reflect.DeepEqual(r.Messages[0], hello[0]) || !reflect.DeepEqual(r.Messages[1], hello[1]) {
		t.Fatalf("messages = %+v", r.Messages)
	}
}

func TestSummarizeUsesSummaryModel(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Echo("sum: "))
	c := newClient(t, srv.URL, func(o *llm.Options) { o.SummaryModel = "small-model"; o.Temperature = 0.9 })
	rep, err := c.Summarize(t.Context(), hello)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Text != "sum: hello" || rep.Model != "small-model" {
		t.Fatalf("reply = %+v", rep)
	}
	r := srv.Requests()[0]
	if r.Model != "small-model" || r.Temperature < 0.19 || r.Temperature > 0.21 {
		t.Fatalf("request = %+v", r)
	}

	// Without SummaryModel, Summarize falls back to Model.
	c2 := newClient(t, srv.URL, nil)
	if _, err := c2.Summarize(t.Context(), hello); err != nil {
		t.Fatal(err)
	}
	if m := srv.Requests()[1].Model; m != "test-model" {
		t.Fatalf("fallback model = %q", m)
	}
}

func TestBaseURLWithoutV1(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Echo(""))
	c := newClient(t, strings.TrimSuffix(srv.URL, "/v1")+"/", nil)
	if rep, err := c.Chat(t.Context(), hello); err != nil || rep.Text != "hello" {
		t.Fatalf("rep=%+v err=%v", rep, err)
	}
}

func TestStream(t *testing.T) {
	const text = "The quick brown fox jumps over the lazy dog."
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		return llmtest.Response{Text: text, PromptTokens: 20, CompletionTokens: 10}
	})
	c := newClient(t, srv.URL, nil)
	var deltas []string
	rep, err := c.Stream(t.Context(), hello, func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if len(deltas) < 2 {
		t.Fatalf("expected several deltas, got %q", deltas)
	}
	if got := strings.Join(deltas, ""); got != text {
		t.Fatalf("deltas reassemble to %q", got)
	}
	want := llm.Reply{Text: text, Model: "test-model", PromptTokens: 20, CompletionTokens: 10, FinishReason: "stop"}
	if !reflect.DeepEqual(rep, want) {
		t.Fatalf("reply = %+v, want %+v", rep, want)
	}
	if r := srv.Requests(); len(r) != 1 || !r[0].Stream {
		t.Fatalf("requests = %+v", r)
	}
}

func TestStreamNilCallback(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Echo("> "))
	c := newClient(t, srv.URL, nil)
	rep, err := c.Stream(t.Context(), hello, nil)
	if err != nil || rep.Text != "> hello" {
		t.Fatalf("rep=%+v err=%v", rep, err)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if r.N == 1 {
			return llmtest.Response{Status: 429, RetryAfter: "7", Text: "slow down"}
		}
		return llmtest.Response{Text: "ok"}
	})
	c := newClient(t, srv.URL, nil)
	sleeps := recordSleeps(c)
	rep, err := c.Chat(t.Context(), hello)
	if err != nil || rep.Text != "ok" {
		t.Fatalf("rep=%+v err=%v", rep, err)
	}
	got := sleeps()
	if len(got) != 1 || got[0] < 7*time.Second || got[0] > 8*time.Second {
		t.Fatalf("backoff sleeps = %v, want one of ~7s", got)
	}
}

func TestRetryAfterHTTPDateAndCap(t *testing.T) {
	for _, tc := range []struct {
		name, header string
		min, max     time.Duration
	}{
		{"date", time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat), 25 * time.Second, 31 * time.Second},
		{"capped", "3600", 2 * time.Minute, 2 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
				if r.N == 1 {
					return llmtest.Response{Status: 429, RetryAfter: tc.header}
				}
				return llmtest.Response{Text: "ok"}
			})
			c := newClient(t, srv.URL, nil)
			sleeps := recordSleeps(c)
			if _, err := c.Chat(t.Context(), hello); err != nil {
				t.Fatal(err)
			}
			if got := sleeps(); len(got) != 1 || got[0] < tc.min || got[0] > tc.max {
				t.Fatalf("sleeps = %v, want in [%v, %v]", got, tc.min, tc.max)
			}
		})
	}
}

func TestRetryAfterBeyondDeadlineFailsFast(t *testing.T) {
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
		return llmtest.Response{Status: 429, RetryAfter: "60"}
	})
	c := newClient(t, srv.URL, nil)
	sleeps := recordSleeps(c)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := c.Chat(ctx, hello)
	var rl *llm.RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter != time.Minute {
		t.Fatalf("err = %v, want RateLimitError with RetryAfter 1m", err)
	}
	if n := len(srv.Requests()); n != 1 || len(sleeps()) != 0 {
		t.Fatalf("%d requests, sleeps %v", n, sleeps())
	}
}

func TestServerErrorsThenSuccess(t *testing.T) {
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if r.N <= 2 {
			return llmtest.Response{Status: 500 + r.N, Text: "boom"}
		}
		return llmtest.Response{Text: "finally"}
	})
	c := newClient(t, srv.URL, nil)
	sleeps := recordSleeps(c)
	rep, err := c.Chat(t.Context(), hello)
	if err != nil || rep.Text != "finally" {
		t.Fatalf("rep=%+v err=%v", rep, err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
	for i, d := range sleeps() { // full jitter within min(MaxDelay, Base*2^i)
		if limit := min(5*time.Millisecond, time.Millisecond<<i); d < 0 || d > limit {
			t.Fatalf("sleep %d = %v, want within [0, %v]", i, d, limit)
		}
	}
}

func TestGarbageThenSuccess(t *testing.T) {
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if r.N%2 == 1 {
			return llmtest.Response{Garbage: true}
		}
		return llmtest.Response{Text: "clean"}
	})
	c := newClient(t, srv.URL, nil)
	rep, err := c.Chat(t.Context(), hello)
	if err != nil || rep.Text != "clean" {
		t.Fatalf("chat: rep=%+v err=%v", rep, err)
	}
	rep, err = c.Stream(t.Context(), hello, nil)
	if err != nil || rep.Text != "clean" {
		t.Fatalf("stream: rep=%+v err=%v", rep, err)
	}
	if n := len(srv.Requests()); n != 4 {
		t.Fatalf("%d requests, want 4", n)
	}
}

func TestHangPastTimeoutThenSuccess(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "chat", true: "stream"}[stream], func(t *testing.T) {
			srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
				if r.N == 1 {
					return llmtest.Response{Hang: true}
				}
				return llmtest.Response{Text: "awake"}
			})
			c := newClient(t, srv.URL, func(o *llm.Options) { o.Timeout, o.RequestTimeout = 300*time.Millisecond, 300*time.Millisecond })
			var rep llm.Reply
			var err error
			if stream {
				rep, err = c.Stream(t.Context(), hello, nil)
			} else {
				rep, err = c.Chat(t.Context(), hello)
			}
			if err != nil || rep.Text != "awake" {
				t.Fatalf("rep=%+v err=%v", rep, err)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Fatalf("%d requests, want 2", n)
			}
		})
	}
}

func TestAuthNotRetried(t *testing.T) {
	for _, code := range []int{401, 403} {
		srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
			return llmtest.Response{Status: code, Text: "Incorrect API key provided: " + testKey}
		})
		c := newClient(t, srv.URL, nil)
		_, err := c.Chat(t.Context(), hello)
		if !errors.Is(err, llm.ErrAuth) {
			t.Fatalf("%d: err = %v, want ErrAuth", code, err)
		}
		var se *llm.StatusError
		if !errors.As(err, &se) || se.Code != code {
			t.Fatalf("%d: err = %v, want StatusError", code, err)
		}
		assertNoKey(t, err)
		if n := len(srv.Requests()); n != 1 {
			t.Fatalf("%d: %d requests, want 1", code, n)
		}
		if got := llm.UserMessage(err); got != "The model server refused the bot's API key (operator: check llm.api_key, or RECALL_LLM_API_KEY)." {
			t.Fatalf("UserMessage = %q", got)
		}
	}
}

func TestClientErrorsNotRetried(t *testing.T) {
	for _, code := range []int{400, 404, 422} {
		srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
			return llmtest.Response{Status: code, Text: "nope"}
		})
		c := newClient(t, srv.URL, nil)
		_, err := c.Stream(t.Context(), hello, nil)
		var se *llm.StatusError
		if !errors.As(err, &se) || se.Code != code || se.Message != "nope" {
			t.Fatalf("%d: err = %v", code, err)
		}
		if errors.Is(err, llm.ErrAuth) || errors.Is(err, llm.ErrUnavailable) {
			t.Fatalf("%d: wrong class: %v", code, err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Fatalf("%d: %d requests, want 1", code, n)
		}
	}
}

func TestRetriesExhausted(t *testing.T) {
	cases := []struct {
		name  string
		resp  llmtest.Response
		check func(error) bool
	}{
		{"5xx", llmtest.Response{Status: 503, Text: "overloaded"}, func(err error) bool {
			var se *llm.StatusError
			return errors.Is(err, llm.ErrUnavailable) && errors.As(err, &se) && se.Code == 503
		}},
		{"429", llmtest.Response{Status: 429, RetryAfter: "0"}, func(err error) bool {
			var rl *llm.RateLimitError
			return errors.As(err, &rl) && !errors.Is(err, llm.ErrUnavailable)
		}},
		{"garbage", llmtest.Response{Garbage: true}, func(err error) bool {
			return errors.Is(err, llm.ErrBadResponse)
		}},
		{"502", llmtest.Response{Status: 502}, func(err error) bool {
			return errors.Is(err, llm.ErrUnavailable)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response { return tc.resp })
			c := newClient(t, srv.URL, func(o *llm.Options) { o.MaxRetries = 2 })
			_, err := c.Chat(t.Context(), hello)
			if !tc.check(err) {
				t.Fatalf("err = %v (%T)", err, err)
			}
			assertNoKey(t, err)
			if n := len(srv.Requests()); n != 3 {
				t.Fatalf("%d requests, want 3", n)
			}
		})
	}
}

func TestEmptyChoicesIsBadResponse(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","model":"m","choices":[]}`))
	}))
	defer srv.Close()
	c := newClient(t, srv.URL+"/v1", func(o *llm.Options) { o.MaxRetries = 1 })
	_, err := c.Chat(t.Context(), hello)
	if !errors.Is(err, llm.ErrBadResponse) {
		t.Fatalf("err = %v, want ErrBadResponse", err)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d calls, want 2", n)
	}
}

func TestTimeoutsExhausted(t *testing.T) {
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response { return llmtest.Response{Hang: true} })
	c := newClient(t, srv.URL, func(o *llm.Options) { o.RequestTimeout = 50 * time.Millisecond; o.MaxRetries = 1 })
	_, err := c.Chat(t.Context(), hello)
	if !errors.Is(err, llm.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := newClient(t, "http://"+addr+"/v1", func(o *llm.Options) { o.MaxRetries = 2 })
	sleeps := recordSleeps(c)
	_, err = c.Chat(t.Context(), hello)
	if !errors.Is(err, llm.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if n := len(sleeps()); n != 2 {
		t.Fatalf("%d retries, want 2", n)
	}
	if !errors.Is(err, llm.ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
	if got := llm.UserMessage(err); got != "The model server is unreachable right now. Your message is saved; please try again later." {
		t.Fatalf("UserMessage = %q", got)
	}
}

func TestParentCancelStopsPromptly(t *testing.T) {
	t.Run("during request", func(t *testing.T) {
		got := make(chan struct{}, 1)
		srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
			got <- struct{}{}
			return llmtest.Response{Hang: true}
		})
		c := newClient(t, srv.URL, func(o *llm.Options) { o.Timeout = time.Minute })
		ctx, cancel := context.WithCancel(t.Context())
		var start time.Time
		go func() { <-got; start = time.Now(); cancel() }()
		_, err := c.Chat(ctx, hello)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("took %v after cancel", d)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Fatalf("%d requests, want 1", n)
		}
	})
	t.Run("during backoff", func(t *testing.T) {
		got := make(chan struct{}, 1)
		srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
			got <- struct{}{}
			return llmtest.Response{Status: 500}
		})
		c := newClient(t, srv.URL, func(o *llm.Options) { o.BaseDelay, o.MaxDelay = time.Hour, time.Hour })
		llm.SetJitter(c, func(limit time.Duration) time.Duration { return limit })
		ctx, cancel := context.WithCancel(t.Context())
		var start time.Time
		go func() { <-got; start = time.Now(); cancel() }()
		_, err := c.Stream(ctx, hello, nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("took %v after cancel", d)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Fatalf("%d requests, want 1", n)
		}
	})
}

func TestStreamCut(t *testing.T) {
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
		return llmtest.Response{Text: "one two three four five six", StreamCut: true}
	})
	c := newClient(t, srv.URL, nil)
	var deltas strings.Builder
	rep, err := c.Stream(t.Context(), hello, func(d string) { deltas.WriteString(d) })
	var se *llm.StreamError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want StreamError", err)
	}
	if se.Partial != "one two three" || rep.Text != se.Partial || deltas.String() != se.Partial {
		t.Fatalf("partial = %q, reply %q, deltas %q", se.Partial, rep.Text, deltas.String())
	}
	if !errors.Is(err, llm.ErrUnavailable) {
		t.Fatalf("err = %v, want it to match ErrUnavailable", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests, want 1 (no retry after text was streamed)", n)
	}
	assertNoKey(t, err)
}

func TestStreamRetriedBeforeText(t *testing.T) {
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		switch r.N {
		case 1:
			return llmtest.Response{Status: 502}
		case 2:
			return llmtest.Response{StreamCut: true} // dropped before any text
		}
		return llmtest.Response{Text: "third time lucky"}
	})
	c := newClient(t, srv.URL, nil)
	var deltas strings.Builder
	rep, err := c.Stream(t.Context(), hello, func(d string) { deltas.WriteString(d) })
	if err != nil || rep.Text != "third time lucky" || deltas.String() != rep.Text {
		t.Fatalf("rep=%+v err=%v deltas=%q", rep, err, deltas.String())
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
}

func TestAPIKeyNeverInErrors(t *testing.T) {
	// The key echoed back in an OpenAI-style error body.
	for _, code := range []int{400, 401, 404, 429, 500} {
		srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
			return llmtest.Response{Status: code, Text: "bad key " + testKey + " (Bearer " + testKey + ")"}
		})
		c := newClient(t, srv.URL, func(o *llm.Options) { o.MaxRetries = -1 })
		_, err := c.Chat(t.Context(), hello)
		if err == nil {
			t.Fatalf("%d: no error", code)
		}
		assertNoKey(t, err)
		_, err = c.Stream(t.Context(), hello, nil)
		assertNoKey(t, err)
	}
	// A proxy answering with a non-JSON page that contains the key.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html>upstream said: " + r.Header.Get("Authorization") + "</html>"))
	}))
	defer proxy.Close()
	c := newClient(t, proxy.URL+"/v1", func(o *llm.Options) { o.MaxRetries = -1 })
	_, err := c.Chat(t.Context(), hello)
	var se *llm.StatusError
	if !errors.As(err, &se) || se.Code != 502 || !strings.Contains(se.Message, "upstream said") {
		t.Fatalf("err = %v", err)
	}
	assertNoKey(t, err)
	if strings.Contains(se.Message, testKey) {
		t.Fatalf("StatusError.Message leaks the key: %q", se.Message)
	}
}

func TestConcurrencyLimit(t *testing.T) {
	const calls, limit = 6, 2
	var inflight, peak atomic.Int32
	entered := make(chan struct{})
	release := make(chan struct{})
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
		n := inflight.Add(1)
		for m := peak.Load(); n > m && !peak.CompareAndSwap(m, n); m = peak.Load() {
		}
		entered <- struct{}{}
		<-release
		inflight.Add(-1)
		return llmtest.Response{Text: "ok"}
	})
	c := newClient(t, srv.URL, func(o *llm.Options) { o.Concurrency = limit })
	errs := make(chan error, calls)
	for i := range calls {
		go func() {
			var err error
			if i%2 == 0 {
				_, err = c.Chat(t.Context(), hello)
			} else {
				_, err = c.Stream(t.Context(), hello, nil)
			}
			errs <- err
		}()
	}
	for range limit { // both slots taken at once
		<-entered
	}
	for range calls - limit { // each release lets exactly one more in
		release <- struct{}{}
		<-entered
	}
	for range limit {
		release <- struct{}{}
	}
	for range calls {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if p := peak.Load(); p != limit {
		t.Fatalf("peak in flight = %d, want %d", p, limit)
	}
}

func TestNotConfigured(t *testing.T) {
	for name, o := range map[string]llm.Options{
		"no model":       {BaseURL: "http://127.0.0.1:1/v1", APIKey: testKey},
		"nothing":        {Model: "gpt-4o"},
		"bad url":        {BaseURL: "localhost:11434", Model: "llama3", APIKey: testKey},
		"bad url scheme": {BaseURL: "ftp://example.com/" + testKey, Model: "llama3", APIKey: testKey},
	} {
		c := llm.New(o)
		_, err := c.Chat(t.Context(), hello)
		if !errors.Is(err, llm.ErrNotConfigured) {
			t.Fatalf("%s: err = %v", name, err)
		}
		_, err = c.Stream(t.Context(), hello, nil)
		if !errors.Is(err, llm.ErrNotConfigured) {
			t.Fatalf("%s: stream err = %v", name, err)
		}
		assertNoKey(t, err)
		if got := llm.UserMessage(err); !strings.Contains(got, "llm.base_url") {
			t.Fatalf("%s: UserMessage = %q", name, got)
		}
	}
}

func TestUserMessage(t *testing.T) {
	cases := map[string]error{
		"":                     nil,
		"rate limited":         &llm.RateLimitError{RetryAfter: time.Second},
		"model server failed.": llm.ErrUnavailable,
		"failed (HTTP 502)":    &llm.StatusError{Code: 502},
		"unreachable":          llm.ErrUnreachable,
		"took too long":        llm.ErrTimeout,
		"refused the bot's API key (operator: check llm.api_key": &llm.StatusError{Code: 403},
		"No language model":       llm.ErrNotConfigured,
		"couldn't read":           llm.ErrBadResponse,
		"cut off":                 &llm.StreamError{Partial: "x", Err: llm.ErrUnavailable},
		"check llm.model":         &llm.StatusError{Code: 404},
		"refused the request":     &llm.StatusError{Code: 400, Message: "secret detail"},
		"cancelled":               context.Canceled,
		"Something went wrong":    errors.New("llm: weird"),
		"stopped before it was f": &llm.StreamError{Partial: "x", Err: context.Canceled},
	}
	for want, err := range cases {
		got := llm.UserMessage(err)
		if !strings.Contains(got, want) || (err != nil && strings.Contains(got, err.Error())) {
			t.Errorf("UserMessage(%v) = %q, want it to contain %q", err, got, want)
		}
	}
}

// stallingServer streams one chunk ("partial ") and then stalls until the
// client goes away; it reports on started when the chunk has been sent.
func stallingServer(t *testing.T, started chan<- struct{}) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(`data: {"id":"1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"partial "}}]}` + "\n\n"))
		w.(http.Flusher).Flush()
		started <- struct{}{}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func TestStreamStallsMidway(t *testing.T) {
	t.Run("idle timeout", func(t *testing.T) {
		started := make(chan struct{}, 4)
		c := newClient(t, stallingServer(t, started), func(o *llm.Options) { o.Timeout = 100 * time.Millisecond })
		rep, err := c.Stream(t.Context(), hello, nil)
		var se *llm.StreamError
		if !errors.As(err, &se) || se.Partial != "partial " || rep.Text != "partial " {
			t.Fatalf("err = %v, reply %+v", err, rep)
		}
		if !errors.Is(err, llm.ErrTimeout) {
			t.Fatalf("err = %v, want it to match ErrTimeout", err)
		}
		if len(started) != 1 {
			t.Fatalf("%d attempts, want 1", len(started))
		}
	})
	t.Run("caller cancels", func(t *testing.T) {
		started := make(chan struct{}, 4)
		c := newClient(t, stallingServer(t, started), nil)
		ctx, cancel := context.WithCancel(t.Context())
		var deltas []string
		_, err := c.Stream(ctx, hello, func(d string) { deltas = append(deltas, d); cancel() })
		var se *llm.StreamError
		if !errors.As(err, &se) || se.Partial != "partial " || !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		if len(deltas) != 1 || deltas[0] != "partial " {
			t.Fatalf("deltas = %q", deltas)
		}
		if got := llm.UserMessage(err); !strings.Contains(got, "stopped") {
			t.Fatalf("UserMessage = %q", got)
		}
	})
}
