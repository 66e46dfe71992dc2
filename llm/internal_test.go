package llm

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		header, value string
		want          time.Duration
		ok            bool
	}{
		{"Retry-After", "", 0, false},
		{"Retry-After", "0", 0, true},
		{"Retry-After", "7", 7 * time.Second, true},
		{"Retry-After", " 2.5 ", 2500 * time.Millisecond, true},
		{"Retry-After", "-3", 0, false},
		{"Retry-After", "99999999999", maxRetryAfter, true},
		{"Retry-After", "Sat, 01 Mar 2025 12:00:30 GMT", 30 * time.Second, true},
		{"Retry-After", "Saturday, 01-Mar-25 12:01:00 GMT", time.Minute, true},
		{"Retry-After", "Sat, 01 Mar 2025 11:00:00 GMT", 0, true},
		{"Retry-After", "Sun, 02 Mar 2025 12:00:00 GMT", maxRetryAfter, true},
		{"Retry-After", "soon", 0, false},
		{"retry-after-ms", "1500", 1500 * time.Millisecond, true},
	} {
		h := http.Header{}
		if tc.value != "" {
			h.Set(tc.header, tc.value)
		}
		got, ok := parseRetryAfter(h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %q → %v,%v want %v,%v", tc.header, tc.value, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRetryDelay(t *testing.T) {
	c := New(Options{Model: "m", APIKey: "k", BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second})
	c.jitter = func(limit time.Duration) time.Duration { return limit } // upper bound of the jitter
	for _, tc := range []struct {
		n          int
		retryAfter time.Duration
		want       time.Duration
	}{
		{0, 0, 100 * time.Millisecond},
		{1, 0, 200 * time.Millisecond},
		{3, 0, 800 * time.Millisecond},
		{4, 0, time.Second},  // capped by MaxDelay
		{80, 0, time.Second}, // no overflow
		{0, 7 * time.Second, 7 * time.Second},
		{4, 300 * time.Millisecond, time.Second}, // backoff larger than hint
		{0, time.Hour, maxRetryAfter},
	} {
		if got := c.retryDelay(tc.n, tc.retryAfter); got != tc.want {
			t.Errorf("retryDelay(%d, %v) = %v, want %v", tc.n, tc.retryAfter, got, tc.want)
		}
	}
	c.jitter = func(time.Duration) time.Duration { return 0 } // lower bound
	if got := c.retryDelay(2, 3*time.Second); got != 3*time.Second {
		t.Errorf("Retry-After not honoured with zero jitter: %v", got)
	}
}

func TestNormalizeBaseURL(t *testing.T) {
	for _, tc := range []struct{ in, key, want string }{
		{"", "k", openAIBaseURL},
		{"http://localhost:11434", "", "http://localhost:11434/v1"},
		{"http://localhost:11434/", "", "http://localhost:11434/v1"},
		{"http://localhost:11434/v1/", "", "http://localhost:11434/v1"},
		{"https://openrouter.ai/api/v1", "k", "https://openrouter.ai/api/v1"},
		{"https://generativelanguage.googleapis.com/v1beta/openai/", "k", "https://generativelanguage.googleapis.com/v1beta/openai"},
	} {
		got, err := normalizeBaseURL(tc.in, tc.key)
		if err != nil || got != tc.want {
			t.Errorf("normalizeBaseURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"localhost:11434", "ftp://x/v1", "http://"} {
		if _, err := normalizeBaseURL(bad, "k"); err == nil {
			t.Errorf("normalizeBaseURL(%q) accepted", bad)
		}
	}
	if _, err := normalizeBaseURL("", ""); err == nil {
		t.Error("empty URL without key accepted")
	}
}

func TestDoneWatcher(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{"data: {\"a\":1}\n\ndata: [DONE]\n\n", true},
		{"data:[DONE]", true},
		{"data: {\"a\":1}\r\n\r\ndata: [DONE]\r\n", true},
		{"data: {\"content\":\"data: [DONE]\"}\n\n", false},
		{"data: {\"a\":1}\n\n", false},
	} {
		info := &attemptInfo{}
		w := &doneWatcher{ReadCloser: io.NopCloser(iotestOneByte(tc.body)), info: info}
		if _, err := io.ReadAll(w); err != nil {
			t.Fatal(err)
		}
		if info.sawDone() != tc.want {
			t.Errorf("%q: done = %v, want %v", tc.body, info.sawDone(), tc.want)
		}
	}
}

// iotestOneByte returns a reader yielding one byte per Read, to exercise
// lines split across reads.
func iotestOneByte(s string) io.Reader { return &oneByte{r: strings.NewReader(s)} }

type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func TestRedactAndClean(t *testing.T) {
	c := New(Options{Model: "m", APIKey: "sk-abc"})
	got := c.clean("key sk-abc\n\tleaked " + strings.Repeat("é", 400))
	if strings.Contains(got, "sk-abc") || strings.Contains(got, "\n") || len(got) > 310 {
		t.Fatalf("clean = %q", got)
	}
	if !strings.HasPrefix(got, "key [redacted] leaked") {
		t.Fatalf("clean = %q", got)
	}
}
