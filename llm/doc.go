// Package llm is Recall's only door to the language model. It talks to any
// OpenAI-compatible chat-completions API (OpenAI, OpenRouter, Ollama, vLLM,
// …) through github.com/sashabaranov/go-openai.
//
// It owns:
//
//   - sending a conversation ([]Message) and getting a Reply, whole (Chat,
//     Summarize) or streamed (Stream);
//   - the resilience around that: per-attempt timeouts (go-openai's client
//     has none), retries with full-jitter exponential backoff (go-openai has
//     none), honouring Retry-After, one deadline per answer shared by its
//     retries (TurnTimeout), and a per-Client concurrency limit;
//   - whether the model is usable: a start-up Check (CheckAtStart) and
//     Health from the outcome of the last calls (for /healthz);
//   - turning failures into typed errors (errors.go) and into a short
//     sentence fit for the chat user (UserMessage), never leaking the API key;
//   - counting tokens (Counter, CountMessages) so callers can fit history
//     into the model's context window.
//
// It does not build prompts, store conversations or manage memories; the
// callers do. Package llmtest provides a fake OpenAI-compatible server for
// tests.
//
// Retries: an attempt is retried on HTTP 408, 429 and 5xx, on per-attempt
// timeouts, connection errors and undecodable/empty responses. Other 4xx
// answers (400, 401, 403, 404, …) and the caller's own context ending are
// never retried; an attempt that timed out is retried once at most. The
// wait before retry n (from 0) is a uniform random
// duration in [0, min(MaxDelay, BaseDelay·2ⁿ)], raised to the server's
// Retry-After when it sent one and capped at two minutes; if the caller's
// deadline would pass during the wait, the call fails at once with the last
// error instead. A stream is retried only while no text has been delivered.
//
// Errors, all matchable with errors.Is / errors.As:
//
//	ErrNotConfigured  no model / base URL / key (nothing sent)
//	*RateLimitError   HTTP 429 until retries ran out
//	*StatusError      other HTTP status; 401/403 also match ErrAuth,
//	                  408/504 ErrTimeout, other 5xx ErrUnavailable
//	ErrTimeout        attempts timed out (or the caller's deadline passed)
//	ErrUnavailable    connection failures / 5xx after retries
//	ErrUnreachable    no answer at all (refused, no route); also ErrUnavailable
//	ErrUnknownModel   Check: the server does not list the configured model
//	ErrBadResponse    garbage JSON, no choices, empty stream
//	*StreamError      a stream broke after text was delivered (has Partial)
//	context.Canceled  the caller cancelled
package llm
