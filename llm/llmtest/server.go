// Package llmtest provides a fake OpenAI-compatible chat-completions server
// for tests. It speaks the real wire protocol (JSON and server-sent events),
// listens on 127.0.0.1 only, and lets a test script each answer: errors,
// Retry-After, garbage, delays, hangs and streams cut midway.
//
//	srv := llmtest.NewServer(t, llmtest.Echo("echo: "))
//	c := llm.New(llm.Options{BaseURL: srv.URL, Model: "test-model"})
package llmtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
)

// Request is what the server received in one call.
type Request struct {
	Model    string
	Messages []llm.Message
	Stream   bool
	N        int // 1-based number of this call on the server

	Temperature float64  // 0 when not sent
	MaxTokens   int      // max_tokens or max_completion_tokens; 0 when not sent
	APIKey      string   // bearer token from the Authorization header
	Tools       []string // names of the tools offered, in order
	Images      int      // image parts in the messages (vision); each message's are in its Images
}

// Response scripts the answer to one Request. The zero value is an empty
// successful answer.
type Response struct {
	// Text is the assistant's answer, or the error message when Status is
	// an error code.
	Text string
	// Status is the HTTP status; 0 means 200. A status >= 400 is answered
	// with an OpenAI-style {"error":{"message","type","code"}} body.
	Status int
	// RetryAfter, if set, is sent as the Retry-After header.
	RetryAfter string
	// Garbage answers 200 with a body that is not valid JSON (for streams:
	// an event whose data is not valid JSON).
	Garbage bool
	// Delay waits this long before answering (ends early if the client goes
	// away).
	Delay time.Duration
	// Hang never answers; the handler returns when the client goes away.
	Hang bool
	// StreamCut, for stream requests, sends about half of Text and then
	// drops the connection without finishing the stream; for other requests
	// it sends the first half of the JSON answer and drops the connection.
	StreamCut bool
	// PieceDelay, for stream requests, waits this long before each piece
	// of text (a model that writes slowly).
	PieceDelay time.Duration
	// Step, for stream requests, is received from before each piece of
	// text is sent, so a test releases the stream piece by piece. A closed
	// Step releases the rest at once.
	Step <-chan struct{}
	// Pieces, for stream requests, are the deltas to stream instead of Text
	// cut into words (Text is then ignored).
	Pieces []string
	// ToolCalls, when set, are the tool calls of the answer (finish reason
	// "tool_calls"); Text may be empty. In a stream each call is sent as a
	// delta naming it, then its arguments in two pieces.
	ToolCalls []llm.ToolCall
	// ErrorCode, with an error Status, is the "code" of the error body
	// (e.g. "context_length_exceeded"); "" sends the usual code for the
	// status.
	ErrorCode string
	// Usage to report.
	PromptTokens, CompletionTokens int
}

// Handler decides the Response to each Request. It is called concurrently
// when requests overlap.
type Handler func(Request) Response

// Server is a running fake API. It is closed by t.Cleanup.
type Server struct {
	// URL is the base URL to give the client; it ends in /v1.
	URL string

	h         Handler
	srv       *httptest.Server
	done      chan struct{}
	closeOnce sync.Once

	mu     sync.Mutex
	reqs   []Request
	models func(apiKey string) Models
	listed int // GET /models requests

	transcribe TranscribeFunc // nil: /v1/audio/transcriptions answers 404
	heard      []Transcription

	embed embedState // /v1/embeddings (embeddings.go)
}

// Models scripts the answer to GET /v1/models.
type Models struct {
	IDs    []string // the models listed
	Status int      // HTTP status; 0 means 200
}

// OnModels sets how GET /v1/models is answered, given the request's bearer
// token. By default it answers 200 with an empty list.
func (s *Server) OnModels(h func(apiKey string) Models) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = h
}

// ModelRequests is the number of GET /v1/models requests received.
func (s *Server) ModelRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listed
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, http.StatusMethodNotAllowed, "Use GET for /v1/models")
		return
	}
	s.mu.Lock()
	s.listed++
	h := s.models
	s.mu.Unlock()
	var m Models
	if h != nil {
		m = h(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}
	if m.Status != 0 && m.Status != http.StatusOK {
		writeError(w, m.Status, http.StatusText(m.Status))
		return
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		OwnedBy string `json:"owned_by"`
	}
	out := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, id := range m.IDs {
		out.Data = append(out.Data, model{ID: id, Object: "model", OwnedBy: "llmtest"})
	}
	writeJSON(w, http.StatusOK, out)
}

// NewServer starts a fake API on 127.0.0.1 answering with h, closed when
// the test ends.
func NewServer(t testing.TB, h Handler) *Server {
	t.Helper()
	s := Start(h)
	t.Cleanup(s.Close)
	return s
}

// Start starts a fake API on 127.0.0.1 answering with h, for a program (the
// benchmark program) that has no testing.TB: the caller must Close it.
func Start(h Handler) *Server {
	s := &Server{h: h, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.chat)
	mux.HandleFunc("/v1/models", s.listModels)
	mux.HandleFunc("/v1/audio/transcriptions", s.transcription)
	mux.HandleFunc("/v1/embeddings", s.embeddings)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "Unknown request URL: "+r.Method+" "+r.URL.Path)
	})
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL + "/v1"
	return s
}

// Close releases hanging handlers, then stops the server. It may be called
// more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done) // release hanging handlers before Close waits for them
		s.srv.Close()
	})
}

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Echo answers with prefix followed by the content of the last user message.
func Echo(prefix string) Handler {
	return func(r Request) Response {
		for i := len(r.Messages) - 1; i >= 0; i-- {
			if r.Messages[i].Role == llm.RoleUser {
				return Response{Text: prefix + r.Messages[i].Content}
			}
		}
		return Response{Text: prefix}
	}
}

// wire formats

type wireRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCalls  []wireToolCall  `json:"tool_calls"`
		ToolCallID string          `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Stream              bool     `json:"stream"`
	Temperature         *float64 `json:"temperature"`
	MaxTokens           int      `json:"max_tokens"`
	MaxCompletionTokens int      `json:"max_completion_tokens"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type message struct {
	Role      string         `json:"role,omitempty"`
	Content   string         `json:"content,omitempty"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type wireToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func toWire(calls []llm.ToolCall) []wireToolCall {
	var out []wireToolCall
	for _, c := range calls {
		w := wireToolCall{ID: c.ID, Type: "function"}
		w.Function.Name, w.Function.Arguments = c.Name, c.Arguments
		out = append(out, w)
	}
	return out
}

func fromWire(calls []wireToolCall) []llm.ToolCall {
	var out []llm.ToolCall
	for _, c := range calls {
		out = append(out, llm.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return out
}

type completion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	} `json:"choices"`
	Usage usage `json:"usage"`
}

type chunkChoice struct {
	Index        int     `json:"index"`
	Delta        message `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *usage        `json:"usage"`
}

// content accepts both a string and an array of {"type":"text","text":…}.
func content(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

// images returns the image_url parts of a message's content: a data: URL
// holding a JPEG becomes the image's bytes and size; any other URL an
// image with no bytes.
func images(raw json.RawMessage) []llm.Image {
	var parts []struct {
		Type     string `json:"type"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	var out []llm.Image
	if json.Unmarshal(raw, &parts) != nil {
		return nil
	}
	for _, p := range parts {
		if p.Type != "image_url" {
			continue
		}
		var im llm.Image
		if b64, ok := strings.CutPrefix(p.ImageURL.URL, "data:image/jpeg;base64,"); ok {
			if data, err := base64.StdEncoding.DecodeString(b64); err == nil {
				im.JPEG = data
				if cfg, err := jpeg.DecodeConfig(bytes.NewReader(data)); err == nil {
					im.Width, im.Height = cfg.Width, cfg.Height
				}
			}
		}
		out = append(out, im)
	}
	return out
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "Use POST for /v1/chat/completions")
		return
	}
	var wr wireRequest
	if err := json.NewDecoder(r.Body).Decode(&wr); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	req := Request{
		Model:     wr.Model,
		Stream:    wr.Stream,
		MaxTokens: max(wr.MaxTokens, wr.MaxCompletionTokens),
		APIKey:    strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "),
	}
	if wr.Temperature != nil {
		req.Temperature = *wr.Temperature
	}
	for _, m := range wr.Messages {
		ims := images(m.Content)
		req.Images += len(ims)
		req.Messages = append(req.Messages, llm.Message{Role: m.Role, Content: content(m.Content),
			ToolCalls: fromWire(m.ToolCalls), ToolCallID: m.ToolCallID, Images: ims})
	}
	for _, t := range wr.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	s.mu.Lock()
	req.N = len(s.reqs) + 1
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()

	resp := s.h(req)

	if !s.stall(r, resp.Hang, resp.Delay) {
		return
	}
	if resp.RetryAfter != "" {
		w.Header().Set("Retry-After", resp.RetryAfter)
	}
	if resp.Status != 0 && resp.Status != http.StatusOK {
		msg := resp.Text
		if msg == "" {
			msg = http.StatusText(resp.Status)
		}
		writeErrorCode(w, resp.Status, msg, resp.ErrorCode)
		return
	}
	id := fmt.Sprintf("chatcmpl-llmtest-%d", req.N)
	model := req.Model
	u := usage{resp.PromptTokens, resp.CompletionTokens, resp.PromptTokens + resp.CompletionTokens}
	if req.Stream {
		includeUsage := wr.StreamOptions != nil && wr.StreamOptions.IncludeUsage
		s.stream(w, r, id, model, resp, u, includeUsage)
		return
	}
	if resp.Garbage {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"` + id + `","choices":[{"message": <html>Bad Gateway`))
		return
	}
	out := completion{ID: id, Object: "chat.completion", Created: time.Now().Unix(), Model: model, Usage: u}
	out.Choices = append(out.Choices, struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	}{0, message{Role: "assistant", Content: resp.Text, ToolCalls: toWire(resp.ToolCalls)}, finishOf(resp)})
	if resp.StreamCut {
		body, _ := json.Marshal(out)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body[:len(body)/2])
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, id, model string, resp Response, u usage, includeUsage bool) {
	fl, _ := w.(http.Flusher)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	created := time.Now().Unix()
	send := func(c chunk) {
		b, _ := json.Marshal(c)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	delta := func(d message, finish *string) chunk {
		return chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []chunkChoice{{Delta: d, FinishReason: finish}}}
	}

	send(delta(message{Role: "assistant"}, nil))
	if resp.Garbage {
		_, _ = fmt.Fprintf(w, "data: {\"id\":\"%s\",\"choices\":[{\"delta\":<html>\n\n", id)
		return
	}
	pieces := resp.Pieces
	if pieces == nil {
		pieces = splitPieces(resp.Text)
	}
	// pace waits before a piece as the response asks; false when the
	// client went away or the server is closing.
	pace := func() bool {
		if resp.Step != nil {
			select {
			case <-resp.Step:
			case <-r.Context().Done():
				return false
			case <-s.done:
				return false
			}
		}
		if resp.PieceDelay > 0 {
			t := time.NewTimer(resp.PieceDelay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
				return false
			case <-s.done:
				return false
			}
		}
		return true
	}
	if resp.StreamCut {
		half := (len(pieces) + 1) / 2
		for _, p := range pieces[:half] {
			if !pace() {
				return
			}
			send(delta(message{Content: p}, nil))
		}
		// Abort: the server drops the connection mid-response, so the
		// client sees the chunked body end unexpectedly.
		panic(http.ErrAbortHandler)
	}
	for _, p := range pieces {
		if !pace() {
			return
		}
		send(delta(message{Content: p}, nil))
	}
	for i, c := range toWire(resp.ToolCalls) {
		half := len(c.Function.Arguments) / 2
		args := c.Function.Arguments
		c.Index = &i
		c.Function.Arguments = args[:half]
		send(delta(message{ToolCalls: []wireToolCall{c}}, nil))
		rest := wireToolCall{Index: &i}
		rest.Function.Arguments = args[half:]
		send(delta(message{ToolCalls: []wireToolCall{rest}}, nil))
	}
	stop := finishOf(resp)
	send(delta(message{}, &stop))
	if includeUsage {
		send(chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []chunkChoice{}, Usage: &u})
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

// splitPieces cuts text into word-sized deltas ("Hello", " world", "!") the
// way real servers stream tokens. Text without spaces is cut in two so a
// stream always has at least two pieces when it has two runes.
func splitPieces(text string) []string {
	var out []string
	start := 0
	for i, r := range text {
		if r == ' ' && i > start {
			out = append(out, text[start:i])
			start = i
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	if len(out) == 1 {
		if r := []rune(text); len(r) >= 2 {
			out = []string{string(r[:len(r)/2]), string(r[len(r)/2:])}
		}
	}
	return out
}

// finishOf is the finish reason of a scripted answer.
func finishOf(resp Response) string {
	if len(resp.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers in OpenAI's error format.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeErrorCode(w, status, msg, "")
}

// writeErrorCode is writeError with the error's "code" (when not "", the
// status's usual code otherwise).
func writeErrorCode(w http.ResponseWriter, status int, msg, code string) {
	typ := "invalid_request_error"
	switch {
	case code != "":
	case status == http.StatusUnauthorized:
		code = "invalid_api_key"
	case status == http.StatusForbidden:
		typ = "permission_error"
	case status == http.StatusNotFound:
		code = "model_not_found"
	case status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case status >= 500:
		typ, code = "server_error", "server_error"
	}
	body := map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": nilIfEmpty(code),
	}}
	writeJSON(w, status, body)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// stall holds a request as its scripted answer says: hang (until the client
// or the server goes away) or wait delay first. It reports whether to
// answer.
func (s *Server) stall(r *http.Request, hang bool, delay time.Duration) bool {
	if hang {
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return false
	}
	if delay <= 0 {
		return true
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.done:
	}
	return false
}
