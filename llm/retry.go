package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/recallbot/recall/backoff"
)

// maxRetryAfter caps how long a server's Retry-After can make us wait.
const maxRetryAfter = 2 * time.Minute

// errAttemptTimeout is the cancellation cause of an attempt that ran past
// Options.RequestTimeout or stayed silent for Options.Timeout (wrapped
// with which); errTurnTimeout that of a call that ran past
// Options.TurnTimeout.
var (
	errAttemptTimeout = errors.New("attempt timed out")
	errTurnTimeout    = errors.New("turn timed out")
)

// attemptFunc performs one attempt. actx carries the attempt deadline and
// info; touch (streams only) arms (true) or pauses (false) the idle timer.
type attemptFunc func(actx context.Context, info *attemptInfo, touch func(active bool)) error

// run executes attempt with per-attempt timeouts, the concurrency limit,
// and retries with backoff, and records the outcome for Health. turnEnd,
// when not zero, is when the turn's deadline (TurnTimeout) ends: no retry
// waits past it. The returned error is already classified.
func (c *Client) run(ctx context.Context, stream bool, turnEnd time.Time, attempt attemptFunc) error {
	if c.confErr != nil {
		return c.confErr
	}
	err := c.retry(ctx, stream, turnEnd, attempt)
	c.health.record(err)
	return err
}

func (c *Client) retry(ctx context.Context, stream bool, turnEnd time.Time, attempt attemptFunc) error {
	timeouts := 0
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return c.ctxError(ctx)
		}
		if err := c.acquire(ctx); err != nil {
			return c.ctxError(ctx)
		}
		f, broken := c.attemptOnce(ctx, stream, attempt)
		c.release()
		if f == nil {
			return nil
		}
		if f.kind == kindCanceled {
			if broken != nil {
				return &StreamError{Partial: broken.partial, Err: c.ctxError(ctx)}
			}
			return c.ctxError(ctx)
		}
		if broken != nil {
			return &StreamError{Partial: broken.partial, Err: f.final(n + 1)}
		}
		if f.kind == kindTimeout {
			timeouts++
		}
		// A model too slow once may be lucky the second time; a third wait
		// would only add silence.
		if !f.retryable() || n >= c.maxRetries || timeouts > 1 {
			return f.final(n + 1)
		}
		d := c.retryDelay(n, f.retryAfter)
		end, ok := ctx.Deadline()
		if !turnEnd.IsZero() && (!ok || turnEnd.Before(end)) {
			end, ok = turnEnd, true
		}
		if ok && time.Until(end) < d {
			// Waiting would outlive the caller: report the real problem now.
			return f.final(n + 1)
		}
		if err := c.sleep(ctx, d); err != nil {
			return c.ctxError(ctx)
		}
	}
}

// attemptOnce runs a single attempt under its own deadline and classifies
// the outcome (nil failure = success).
func (c *Client) attemptOnce(ctx context.Context, stream bool, attempt attemptFunc) (*failure, *streamBroken) {
	info := &attemptInfo{}
	var (
		actx   context.Context
		cancel context.CancelCauseFunc
		touch  = func(bool) {}
	)
	if stream {
		// Idle timeout: armed while waiting for the server, paused while
		// the caller's onDelta runs.
		actx, cancel = context.WithCancelCause(ctx)
		silent := fmt.Errorf("%w: the model sent nothing for %s (llm.timeout)", errAttemptTimeout, c.timeout)
		timer := time.AfterFunc(c.timeout, func() { cancel(silent) })
		defer timer.Stop()
		touch = func(active bool) {
			if active {
				timer.Reset(c.timeout)
			} else {
				timer.Stop()
			}
		}
	} else {
		var stop context.CancelFunc
		actx, stop = context.WithTimeoutCause(ctx, c.reqTimeout,
			fmt.Errorf("%w: no answer within %s", errAttemptTimeout, c.reqTimeout))
		cancel = func(error) { stop() }
	}
	defer cancel(nil)
	actx = withAttemptInfo(actx, info)

	err := attempt(actx, info, touch)
	if err == nil {
		return nil, nil
	}
	var broken *streamBroken
	if errors.As(err, &broken) {
		err = broken.err
	}
	f := c.classify(ctx, actx, err, info)
	return f, broken
}

type failureKind int

const (
	kindCanceled  failureKind = iota // the caller's context is done
	kindTimeout                      // the attempt ran past Options.Timeout
	kindRateLimit                    // HTTP 429
	kindStatus                       // other HTTP error status
	kindConn                         // no answer: could not connect, or the connection broke before any response
	kindServer                       // the server failed after answering (an error in a stream, a cut body)
	kindBad                          // undecodable or empty response
	kindLocal                        // rejected before anything was sent
)

// failure is a classified attempt error. Its text is already redacted.
type failure struct {
	kind       failureKind
	status     int
	msg        string
	code       string // the provider's error code (StatusError.ErrorCode)
	retryAfter time.Duration
}

func (f *failure) retryable() bool {
	switch f.kind {
	case kindTimeout, kindRateLimit, kindConn, kindServer, kindBad:
		return true
	case kindStatus:
		return f.status == http.StatusRequestTimeout || f.status >= 500
	}
	return false
}

// final builds the error returned to the caller after attempts attempts.
func (f *failure) final(attempts int) error {
	var base error
	switch f.kind {
	case kindRateLimit:
		base = &RateLimitError{RetryAfter: f.retryAfter, Message: f.msg}
	case kindStatus:
		base = &StatusError{Code: f.status, Message: f.msg, ErrorCode: f.code}
	case kindTimeout:
		base = fmt.Errorf("%w: %s", ErrTimeout, f.msg)
	case kindConn:
		base = &unreachableError{msg: f.msg}
	case kindServer:
		base = fmt.Errorf("%w: %s", ErrUnavailable, f.msg)
	case kindBad:
		base = fmt.Errorf("%w: %s", ErrBadResponse, f.msg)
	case kindCanceled:
		base = errors.New("llm: " + f.msg)
	default:
		return errors.New("llm: request not sent: " + f.msg)
	}
	if attempts > 1 {
		return fmt.Errorf("%w (gave up after %d attempts)", base, attempts)
	}
	return base
}

// ctxError reports the caller's context ending, or the turn's deadline
// (TurnTimeout). A deadline also matches ErrTimeout.
func (c *Client) ctxError(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), errTurnTimeout) {
		return fmt.Errorf("%w: no answer within the turn's %s (llm.turn_timeout)", ErrTimeout, c.turnTimeout)
	}
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("llm: %w (%w)", ErrTimeout, err)
	}
	return fmt.Errorf("llm: %w", err)
}

// classify maps an attempt error to a failure. parent is the caller's
// context, actx the attempt's.
func (c *Client) classify(parent, actx context.Context, err error, info *attemptInfo) *failure {
	sent, status, retryAfter := info.snapshot()
	var (
		apiErr *openai.APIError
		reqErr *openai.RequestError
	)
	switch {
	case parent.Err() != nil:
		return &failure{kind: kindCanceled, msg: parent.Err().Error()}
	case errors.Is(context.Cause(actx), errAttemptTimeout):
		msg := context.Cause(actx).Error()
		if _, m, ok := strings.Cut(msg, ": "); ok {
			msg = m // what ran out: "no answer within 5m0s"
		}
		return &failure{kind: kindTimeout, msg: msg}
	case errors.As(err, &apiErr) && apiErr.HTTPStatusCode != 0:
		f := c.statusFailure(apiErr.HTTPStatusCode, apiErr.Message, retryAfter)
		if code, ok := apiErr.Code.(string); ok && len(code) <= 64 {
			f.code = code
		}
		return f
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode != 0:
		msg := strings.TrimSpace(string(reqErr.Body))
		if msg == "" && reqErr.Err != nil {
			msg = reqErr.Err.Error()
		}
		return c.statusFailure(reqErr.HTTPStatusCode, msg, retryAfter)
	case errors.As(err, &apiErr):
		// An error object inside a 200 event stream.
		return &failure{kind: kindServer, msg: c.clean("error in stream: " + apiErr.Message)}
	case errors.Is(err, errNoChoices), errors.Is(err, errStreamEmpty),
		errors.Is(err, openai.ErrTooManyEmptyStreamMessages), isDecodeError(err):
		return &failure{kind: kindBad, msg: c.clean(err.Error())}
	case !sent:
		return &failure{kind: kindLocal, msg: c.clean(err.Error())}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &failure{kind: kindTimeout, msg: c.clean(err.Error())}
	}
	if status >= 200 && status < 300 && errors.Is(err, io.EOF) {
		// 2xx with an empty body.
		return &failure{kind: kindBad, msg: "empty response body"}
	}
	if status != 0 {
		// The server answered, then the connection broke.
		return &failure{kind: kindServer, msg: c.clean(err.Error())}
	}
	return &failure{kind: kindConn, msg: c.clean(err.Error())}
}

func (c *Client) statusFailure(code int, msg string, retryAfter time.Duration) *failure {
	msg = c.clean(msg)
	if code == http.StatusTooManyRequests {
		return &failure{kind: kindRateLimit, status: code, msg: msg, retryAfter: retryAfter}
	}
	return &failure{kind: kindStatus, status: code, msg: msg, retryAfter: retryAfter}
}

func isDecodeError(err error) bool {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	return errors.As(err, &syn) || errors.As(err, &typ)
}

// clean redacts the API key and keeps messages short and on one line.
func (c *Client) clean(s string) string {
	s = c.redact(s)
	s = strings.Join(strings.Fields(s), " ")
	const limit = 300
	if len(s) > limit {
		cut := limit
		for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func (c *Client) redact(s string) string {
	if c.apiKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.apiKey, "[redacted]")
}

// retryDelay is the wait before retry number n+1 (n counts from 0):
// full-jitter exponential backoff, raised to the server's Retry-After hint
// when there is one, capped at maxRetryAfter.
func (c *Client) retryDelay(n int, retryAfter time.Duration) time.Duration {
	d := c.jitter(backoff.Cap(c.baseDelay, c.maxDelay, n))
	d = max(d, retryAfter)
	return min(d, maxRetryAfter)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d > 0 {
		backoff.Sleep(ctx, d)
	}
	return ctx.Err()
}

func (c *Client) acquire(ctx context.Context) error {
	if c.sem == nil {
		return nil
	}
	select {
	case c.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Client) release() {
	if c.sem != nil {
		<-c.sem
	}
}
