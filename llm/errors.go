package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Sentinel errors. Match them with errors.Is; the errors returned by Client
// wrap them together with a short (redacted) detail.
var (
	// ErrNotConfigured means the client has no usable model, base URL or key.
	// It is returned before anything is sent.
	ErrNotConfigured = errors.New("llm: not configured")

	// ErrTimeout means the attempts ran past Options.Timeout, the server
	// answered 408/504, or the caller's context deadline expired.
	ErrTimeout = errors.New("llm: timed out")

	// ErrUnavailable means the API could not be reached or kept failing with
	// 5xx responses, and retries are exhausted. *StatusError for a 5xx code
	// (but 504, which matches ErrTimeout) also matches it.
	ErrUnavailable = errors.New("llm: service unavailable")

	// ErrUnreachable means no answer came at all: the connection was
	// refused, the name did not resolve, or it broke before any response.
	// It also matches ErrUnavailable.
	ErrUnreachable = errors.New("llm: model server unreachable")

	// ErrAuth means the API rejected the key (HTTP 401 or 403). It is never
	// retried. The *StatusError carrying the code also matches it.
	ErrAuth = errors.New("llm: authentication failed")

	// ErrBadResponse means the API answered with something that is not a
	// valid chat completion (undecodable JSON, no choices, an empty stream).
	ErrBadResponse = errors.New("llm: bad response from API")
)

// RateLimitError is returned when the API kept answering HTTP 429 until the
// retries ran out (or the next wait would not fit in the caller's deadline).
type RateLimitError struct {
	// RetryAfter is the server's last Retry-After hint, 0 if it sent none.
	RetryAfter time.Duration
	// Message is the server's error message (redacted, truncated).
	Message string
}

func (e *RateLimitError) Error() string {
	s := "llm: rate limited (HTTP 429)"
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(", retry after %s", e.RetryAfter)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// StatusError is a non-2xx HTTP answer from the API, other than 429.
// Codes 401/403 also match ErrAuth, 408/504 match ErrTimeout and other 5xx
// codes match ErrUnavailable.
type StatusError struct {
	Code int
	// Message is the server's error message (redacted, truncated).
	Message string
	// ErrorCode is the provider's error code when its body names one
	// (OpenAI's "code", e.g. "context_length_exceeded").
	ErrorCode string
}

func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Code)
	}
	return fmt.Sprintf("llm: HTTP %d: %s", e.Code, msg)
}

// Unwrap lets errors.Is(err, ErrAuth) / errors.Is(err, ErrUnavailable) match.
func (e *StatusError) Unwrap() error {
	switch {
	case e.Code == http.StatusUnauthorized || e.Code == http.StatusForbidden:
		return ErrAuth
	case e.Code == http.StatusRequestTimeout || e.Code == http.StatusGatewayTimeout:
		return ErrTimeout
	case e.Code >= 500:
		return ErrUnavailable
	}
	return nil
}

// StreamError is returned by Client.Stream when the stream broke after some
// text had already been delivered to onDelta (so it was not retried).
// Partial holds the text received so far; Err says why it stopped (it can
// match ErrUnavailable, ErrTimeout, ErrBadResponse or context.Canceled).
type StreamError struct {
	Partial string
	Err     error
}

func (e *StreamError) Error() string {
	msg := "<nil>"
	if e.Err != nil {
		msg = strings.TrimPrefix(e.Err.Error(), "llm: ")
	}
	return fmt.Sprintf("llm: stream interrupted after %d bytes: %s", len(e.Partial), msg)
}

func (e *StreamError) Unwrap() error { return e.Err }

// unreachableError is a failure to get any answer from the server; it
// matches ErrUnreachable and ErrUnavailable.
type unreachableError struct{ msg string }

func (e *unreachableError) Error() string { return "llm: model server unreachable: " + e.msg }

func (e *unreachableError) Is(target error) bool {
	return target == ErrUnreachable || target == ErrUnavailable
}

// UserMessage turns an error from this package into a short plain sentence
// that can be shown to the chat user. It never includes the raw error.
// It returns "" for a nil error.
func UserMessage(err error) string {
	var (
		rl *RateLimitError
		se *StreamError
		st *StatusError
	)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrNotConfigured):
		return "No language model is configured yet. The operator should set RECALL_LLM_API_KEY (in the environment or .env) and, for a server other than OpenAI, llm.base_url."
	case errors.As(err, &se):
		if errors.Is(err, context.Canceled) {
			return "The answer was stopped before it was finished."
		}
		return "The answer was cut off because the connection to the model server broke. Please try again."
	case errors.As(err, &rl):
		return "The model server is busy right now (rate limited). Please try again in a minute."
	case errors.Is(err, ErrAuth):
		return "The model server refused the bot's API key (operator: check llm.api_key, or RECALL_LLM_API_KEY)."
	case errors.Is(err, context.Canceled):
		return "The request was cancelled."
	case errors.Is(err, ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return "The model server took too long to answer. Your message is saved; please try again later."
	case errors.Is(err, ErrUnreachable):
		return "The model server is unreachable right now. Your message is saved; please try again later."
	case errors.As(err, &st) && st.Code >= 500:
		return fmt.Sprintf("The model server failed (HTTP %d). Your message is saved; please try again later.", st.Code)
	case errors.Is(err, ErrUnavailable):
		return "The model server failed. Your message is saved; please try again later."
	case errors.Is(err, ErrBadResponse):
		return "The model server sent an answer I couldn't read. Please try again."
	case errors.As(err, &st):
		switch st.Code {
		case http.StatusNotFound:
			return "The model server doesn't know the configured model (operator: check llm.model and llm.base_url)."
		case http.StatusRequestEntityTooLarge:
			return "The conversation is too long for the language model. Please start a shorter one."
		}
		return fmt.Sprintf("The model server refused the request (HTTP %d) — tell the operator.", st.Code)
	}
	return "Something went wrong while talking to the language model. Please try again later."
}
