package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/recallbot/recall/backoff"
)

// Role is a chat message role: "system", "user" or "assistant".
type Role = string

// Message roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one chat message.
type Message struct {
	Role    Role
	Content string
	// ToolCalls are the calls an assistant message asked for (function
	// calling); ToolCallID names the call a RoleTool message answers.
	ToolCalls  []ToolCall
	ToolCallID string
	// Images are pictures a user message shows the model (vision): sent
	// as image parts after Content (OpenAI's content array).
	Images []Image
}

// Options configures a Client. The zero value of every field except Model
// (and BaseURL or APIKey) means "use the default".
type Options struct {
	// BaseURL of the OpenAI-compatible API, e.g. "https://api.openai.com/v1",
	// "https://openrouter.ai/api/v1", "http://localhost:11434/v1" (Ollama),
	// "http://localhost:8000/v1" (vLLM). A URL with no path gets "/v1"
	// appended; any other path is used as given. Empty means OpenAI's API,
	// which then requires APIKey.
	BaseURL string
	// APIKey is sent as a bearer token when non-empty. It never appears in
	// errors returned by this package.
	APIKey string
	// Model is used by Chat and Stream; required.
	Model string
	// SummaryModel is used by Summarize; empty means Model.
	SummaryModel string
	// Temperature for Chat and Stream; 0 leaves it to the server's default.
	Temperature float64
	// MaxTokens caps the completion length; 0 leaves it to the server.
	MaxTokens int
	// Timeout bounds the silence of a streamed attempt (default 2m): the
	// wait for its first chunk, then every gap between two chunks. An
	// answer that keeps coming is never cut, however long it takes.
	Timeout time.Duration
	// RequestTimeout bounds a non-streamed attempt as a whole (Chat,
	// ChatTools, Summarize; default 5m): it shows nothing until it ends, so
	// it gets room for a slow model's whole answer.
	RequestTimeout time.Duration
	// TurnTimeout bounds Chat and Stream as a whole, retries and backoff
	// included: the user waits at most this long for an answer to start.
	// For Stream it ends at the first chunk (the model is producing; the
	// silence Timeout then applies). Summarize is not bound by it. 0 means
	// no overall bound.
	TurnTimeout time.Duration
	// MaxRetries is the number of attempts after the first one (default 3;
	// negative means no retries). An attempt that timed out is retried at
	// most once per call.
	MaxRetries int
	// UnhealthyAfter is the number of consecutive failed calls after which
	// Health reports the model unhealthy (default 3).
	UnhealthyAfter int
	// Concurrency caps the calls in flight through this Client (share one
	// Client across the process); <= 0 means unlimited. A call holds a slot
	// during an attempt, not while backing off.
	Concurrency int
	// BaseDelay and MaxDelay shape the exponential backoff with full jitter
	// (defaults 500ms and 20s).
	BaseDelay, MaxDelay time.Duration
	// HTTPClient is optional. It is copied, never modified; its Transport (or
	// http.DefaultTransport) is wrapped to read Retry-After headers.
	HTTPClient *http.Client
}

// Reply is a completed answer.
type Reply struct {
	Text  string
	Model string // model name reported by the server (or the one requested)
	// Token usage as reported by the server; 0 when it reports none.
	PromptTokens, CompletionTokens int
	// FinishReason is e.g. "stop" or "length" ("length": cut by MaxTokens).
	FinishReason string
	// ToolCalls are the tools the model asked to call (only when tools were
	// offered); Text is then often empty.
	ToolCalls []ToolCall
}

// Defaults applied by New.
const (
	DefaultTimeout        = 2 * time.Minute
	DefaultRequestTimeout = 5 * time.Minute
	DefaultMaxRetries     = 3
	DefaultBaseDelay      = 500 * time.Millisecond
	DefaultMaxDelay       = 20 * time.Second

	DefaultUnhealthyAfter = 3

	summaryTemperature = 0.2
	openAIBaseURL      = "https://api.openai.com/v1"
)

// Client talks to one OpenAI-compatible API. It is safe for concurrent use;
// create one per configuration and share it.
type Client struct {
	api          *openai.Client
	model        string
	summaryModel string
	temperature  float64
	maxTokens    int
	timeout      time.Duration // silence in a stream
	reqTimeout   time.Duration // a non-streamed attempt
	turnTimeout  time.Duration
	maxRetries   int
	baseDelay    time.Duration
	maxDelay     time.Duration
	sem          chan struct{}
	apiKey       string // kept only to redact it from errors
	confErr      error  // non-nil: every call fails with it
	baseURL      string // normalized, for messages
	health       *health

	// Replaceable in tests.
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func(limit time.Duration) time.Duration
}

// New builds a Client. It never fails: a missing or invalid configuration
// makes every call return an error matching ErrNotConfigured.
func New(o Options) *Client {
	c := &Client{
		model:        strings.TrimSpace(o.Model),
		summaryModel: strings.TrimSpace(o.SummaryModel),
		temperature:  o.Temperature,
		maxTokens:    o.MaxTokens,
		timeout:      o.Timeout,
		reqTimeout:   o.RequestTimeout,
		turnTimeout:  o.TurnTimeout,
		maxRetries:   o.MaxRetries,
		baseDelay:    o.BaseDelay,
		maxDelay:     o.MaxDelay,
		apiKey:       o.APIKey,
		sleep:        sleepCtx,
		jitter:       backoff.FullJitter,
	}
	if c.summaryModel == "" {
		c.summaryModel = c.model
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.reqTimeout <= 0 {
		c.reqTimeout = DefaultRequestTimeout
	}
	switch {
	case c.maxRetries == 0:
		c.maxRetries = DefaultMaxRetries
	case c.maxRetries < 0:
		c.maxRetries = 0
	}
	if c.baseDelay <= 0 {
		c.baseDelay = DefaultBaseDelay
	}
	if c.maxDelay <= 0 {
		c.maxDelay = DefaultMaxDelay
	}
	if o.UnhealthyAfter <= 0 {
		o.UnhealthyAfter = DefaultUnhealthyAfter
	}
	c.health = &health{after: o.UnhealthyAfter}
	if o.Concurrency > 0 {
		c.sem = make(chan struct{}, o.Concurrency)
	}

	base, err := normalizeBaseURL(o.BaseURL, o.APIKey)
	switch {
	case err != nil:
		c.confErr = fmt.Errorf("%w: %s", ErrNotConfigured, c.redact(err.Error()))
	case c.model == "":
		c.confErr = fmt.Errorf("%w: no model set", ErrNotConfigured)
	}
	c.baseURL = base
	cfg := openai.DefaultConfig(o.APIKey)
	cfg.BaseURL = base
	cfg.HTTPClient = wrapHTTPClient(o.HTTPClient)
	c.api = openai.NewClientWithConfig(cfg)
	return c
}

// normalizeBaseURL validates the base URL and makes it end in /v1 when it
// has no path (go-openai appends "/chat/completions" to it).
func normalizeBaseURL(raw, apiKey string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		if apiKey == "" {
			return "", errors.New("no base URL and no API key set")
		}
		return openAIBaseURL, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("base URL %q is not an http(s) URL", raw)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	if u.Path == "" {
		u.Path = "/v1"
	}
	return u.String(), nil
}

// Model returns the model used by Chat and Stream.
func (c *Client) Model() string { return c.model }

// Chat sends msgs to Model and returns the whole answer, retrying transient
// failures (see package doc), all within TurnTimeout.
func (c *Client) Chat(ctx context.Context, msgs []Message) (Reply, error) {
	ctx, turnEnd, _, done := c.turn(ctx)
	defer done()
	return c.complete(ctx, turnEnd, c.request(c.model, c.temperature, msgs, false))
}

// ChatTools is Chat offering tools: the reply may hold ToolCalls instead of
// (or beside) text. A server that does not support tools answers an error
// that IsToolsRejected recognizes.
func (c *Client) ChatTools(ctx context.Context, msgs []Message, tools []Tool) (Reply, error) {
	ctx, turnEnd, _, done := c.turn(ctx)
	defer done()
	req := c.request(c.model, c.temperature, msgs, false)
	req.Tools = toolsParam(tools)
	return c.complete(ctx, turnEnd, req)
}

// Summarize is Chat with SummaryModel (or Model) at temperature 0.2, meant
// for condensing conversation history into memories. TurnTimeout does not
// bound it (the caller's context does).
func (c *Client) Summarize(ctx context.Context, msgs []Message) (Reply, error) {
	return c.complete(ctx, time.Time{}, c.request(c.summaryModel, summaryTemperature, msgs, false))
}

// Stream is Chat with streaming: onDelta (may be nil) is called, in the
// caller's goroutine, with each new piece of text as it arrives; the
// returned Reply.Text is the full text. A failure before any text arrived is
// retried like Chat; once text has been delivered nothing is retried, and a
// broken stream returns a *StreamError carrying the partial text (also in
// Reply.Text). TurnTimeout bounds the wait for the first chunk only;
// Timeout then bounds each silence.
func (c *Client) Stream(ctx context.Context, msgs []Message, onDelta func(text string)) (Reply, error) {
	return c.StreamTools(ctx, msgs, nil, onDelta)
}

// StreamTools is Stream offering tools (see ChatTools); tool calls are
// assembled from the stream's deltas into Reply.ToolCalls.
func (c *Client) StreamTools(ctx context.Context, msgs []Message, tools []Tool, onDelta func(text string)) (Reply, error) {
	ctx, turnEnd, flowing, done := c.turn(ctx)
	defer done()
	req := c.request(c.model, c.temperature, msgs, true)
	req.Tools = toolsParam(tools)
	var rep Reply
	first := true
	started := func() {
		// The model is producing (text, reasoning or a tool call): from
		// now on only silence (Timeout) cuts it.
		if first {
			first = false
			flowing()
		}
	}
	deltas := func(d string) {
		if onDelta != nil {
			onDelta(d)
		}
	}
	err := c.run(ctx, true, turnEnd, func(actx context.Context, info *attemptInfo, touch func(bool)) error {
		var err error
		rep, err = c.streamOnce(actx, req, info, touch, started, deltas)
		return err
	})
	var se *StreamError
	if err != nil && !errors.As(err, &se) {
		return Reply{}, err
	}
	return rep, err
}

// turn derives the context of one call bound by TurnTimeout: it is
// cancelled with errTurnTimeout at turnEnd unless flowing was called first
// (a stream's first chunk came). done releases it. Without TurnTimeout, ctx is
// returned as is and turnEnd is zero.
func (c *Client) turn(ctx context.Context) (tctx context.Context, turnEnd time.Time, flowing, done func()) {
	if c.turnTimeout <= 0 {
		return ctx, time.Time{}, func() {}, func() {}
	}
	tctx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(c.turnTimeout, func() { cancel(errTurnTimeout) })
	return tctx, time.Now().Add(c.turnTimeout), func() { timer.Stop() }, func() {
		timer.Stop()
		cancel(nil)
	}
}

func (c *Client) request(model string, temp float64, msgs []Message, stream bool) openai.ChatCompletionRequest {
	req := openai.ChatCompletionRequest{
		Model:    model,
		Messages: make([]openai.ChatCompletionMessage, len(msgs)),
		Stream:   stream,
	}
	for i, m := range msgs {
		req.Messages[i] = wireMessage(m)
	}
	if isReasoningModel(model) {
		// OpenAI reasoning models reject max_tokens and any temperature but 1
		// (go-openai refuses to send such requests).
		req.MaxCompletionTokens = c.maxTokens
	} else {
		//lint:ignore SA1019 max_tokens is what other OpenAI-compatible servers (Ollama, vLLM, llama.cpp) know
		req.MaxTokens = c.maxTokens
		req.Temperature = float32(temp)
	}
	if stream {
		req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	return req
}

// isReasoningModel mirrors go-openai's checks for OpenAI reasoning models.
func isReasoningModel(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

func (c *Client) complete(ctx context.Context, turnEnd time.Time, req openai.ChatCompletionRequest) (Reply, error) {
	var rep Reply
	err := c.run(ctx, false, turnEnd, func(actx context.Context, _ *attemptInfo, _ func(bool)) error {
		resp, err := c.api.CreateChatCompletion(actx, req)
		if err != nil {
			return err
		}
		if len(resp.Choices) == 0 {
			return errNoChoices
		}
		ch := resp.Choices[0]
		rep = Reply{
			Text:             ch.Message.Content,
			Model:            resp.Model,
			PromptTokens:     resp.Usage.PromptTokens,
			CompletionTokens: resp.Usage.CompletionTokens,
			FinishReason:     string(ch.FinishReason),
			ToolCalls:        toolCallsOf(ch.Message.ToolCalls),
		}
		if rep.Model == "" {
			rep.Model = req.Model
		}
		return nil
	})
	if err != nil {
		return Reply{}, err
	}
	return rep, nil
}

var (
	errNoChoices   = errors.New("response has no choices")
	errStreamEnded = errors.New("stream ended before completion")
	errStreamEmpty = errors.New("stream ended without any data")
)

// streamOnce runs one streaming attempt. If text was already delivered to
// onDelta, a failure is returned as *streamBroken so that run does not retry.
func (c *Client) streamOnce(ctx context.Context, req openai.ChatCompletionRequest, info *attemptInfo,
	touch func(bool), onChunk func(), onDelta func(string)) (Reply, error) {
	st, err := c.api.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return Reply{}, err
	}
	defer func() { _ = st.Close() }() // the answer is read; closing only releases the connection

	var (
		sb     strings.Builder
		rep    = Reply{Model: req.Model}
		chunks int
		calls  toolCallAccumulator
	)
	for {
		touch(true)
		chunk, err := st.Recv()
		touch(false)
		if errors.Is(err, io.EOF) {
			switch {
			case rep.FinishReason != "" || info.sawDone():
				err = nil
			case chunks == 0:
				err = errStreamEmpty
			default:
				err = errStreamEnded
			}
			if err == nil {
				break
			}
		}
		if err != nil {
			rep.Text = sb.String()
			if sb.Len() > 0 {
				return rep, &streamBroken{partial: rep.Text, err: err}
			}
			return rep, err
		}
		chunks++
		onChunk()
		if chunk.Model != "" {
			rep.Model = chunk.Model
		}
		if chunk.Usage != nil {
			rep.PromptTokens = chunk.Usage.PromptTokens
			rep.CompletionTokens = chunk.Usage.CompletionTokens
		}
		if len(chunk.Choices) == 0 {
			continue
		}
		ch := chunk.Choices[0]
		if ch.FinishReason != "" {
			rep.FinishReason = string(ch.FinishReason)
		}
		if d := ch.Delta.Content; d != "" {
			sb.WriteString(d)
			onDelta(d)
		}
		calls.add(ch.Delta.ToolCalls)
	}
	rep.Text = sb.String()
	rep.ToolCalls = calls.result()
	return rep, nil
}

// streamBroken marks a stream failure after text was delivered; run turns
// it into a *StreamError without retrying.
type streamBroken struct {
	partial string
	err     error
}

func (e *streamBroken) Error() string { return e.err.Error() }
