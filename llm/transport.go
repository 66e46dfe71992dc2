package llm

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// attemptInfo is what the transport learns about one HTTP attempt. go-openai
// does not expose response headers on errors, so the transport records them
// here; the holder travels in the attempt's request context.
type attemptInfo struct {
	mu         sync.Mutex
	sent       bool          // the request reached the transport
	status     int           // HTTP status of the response, 0 if none
	retryAfter time.Duration // parsed Retry-After, 0 if absent
	done       bool          // an event stream carried "data: [DONE]"
}

type infoKey struct{}

func withAttemptInfo(ctx context.Context, info *attemptInfo) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

func (a *attemptInfo) snapshot() (sent bool, status int, retryAfter time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sent, a.status, a.retryAfter
}

func (a *attemptInfo) sawDone() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.done
}

// transport wraps the real RoundTripper and records per-attempt facts
// (status, Retry-After, end-of-stream marker) into the attemptInfo found in
// the request context. Requests without one pass through untouched.
type transport struct {
	base http.RoundTripper
	now  func() time.Time
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	info, _ := req.Context().Value(infoKey{}).(*attemptInfo)
	if info != nil {
		info.mu.Lock()
		info.sent = true
		info.mu.Unlock()
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || info == nil {
		return resp, err
	}
	ra, _ := parseRetryAfter(resp.Header, t.now())
	info.mu.Lock()
	info.status = resp.StatusCode
	info.retryAfter = ra
	info.mu.Unlock()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &doneWatcher{ReadCloser: resp.Body, info: info}
	}
	return resp, nil
}

// parseRetryAfter reads the Retry-After header (delta seconds or an HTTP
// date, RFC 9110 §10.2.3), falling back to the non-standard retry-after-ms
// header some OpenAI-compatible servers send. ok is false when no usable hint
// is present. Dates in the past give 0 with ok true.
func parseRetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if secs, err := strconv.ParseFloat(v, 64); err == nil {
			if secs < 0 || secs != secs { // negative or NaN
				return 0, false
			}
			if secs > maxRetryAfter.Seconds() {
				return maxRetryAfter, true
			}
			return time.Duration(secs * float64(time.Second)), true
		}
		if t, err := http.ParseTime(v); err == nil {
			d := t.Sub(now)
			if d < 0 {
				d = 0
			}
			return min(d, maxRetryAfter), true
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			if ms > float64(maxRetryAfter.Milliseconds()) {
				return maxRetryAfter, true
			}
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	return 0, false
}

// doneWatcher scans an event stream line by line (only the first bytes of
// each line are kept) and records whether the "data: [DONE]" terminator
// arrived, so a stream that merely stopped can be told from one that ended.
type doneWatcher struct {
	io.ReadCloser
	info *attemptInfo
	line [16]byte
	n    int // bytes of the current line seen so far (may exceed len(line))
}

func (w *doneWatcher) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	for _, b := range p[:n] {
		if b == '\n' || b == '\r' {
			w.endLine()
			continue
		}
		if w.n < len(w.line) {
			w.line[w.n] = b
		}
		w.n++
	}
	if err == io.EOF {
		w.endLine()
	}
	return n, err
}

func (w *doneWatcher) endLine() {
	if w.n > 0 && w.n <= len(w.line) {
		l := strings.TrimSpace(string(w.line[:w.n]))
		if rest, ok := strings.CutPrefix(l, "data:"); ok && strings.TrimSpace(rest) == "[DONE]" {
			w.info.mu.Lock()
			w.info.done = true
			w.info.mu.Unlock()
		}
	}
	w.n = 0
}

// wrapHTTPClient returns a copy of hc (or a fresh client) whose transport
// records attempt facts. The caller's client is not modified.
func wrapHTTPClient(hc *http.Client) *http.Client {
	var c http.Client
	if hc != nil {
		c = *hc
	}
	base := c.Transport
	if base == nil {
		if dt, ok := http.DefaultTransport.(*http.Transport); ok {
			t := dt.Clone()
			t.MaxIdleConnsPerHost = 32
			base = t
		} else {
			base = http.DefaultTransport
		}
	}
	c.Transport = &transport{base: base, now: time.Now}
	return &c
}
