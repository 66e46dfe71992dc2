package llmtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer k1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const body = `{"model":"m1","temperature":0.5,"max_tokens":7,"messages":[` +
	`{"role":"system","content":"sys"},` +
	`{"role":"user","content":[{"type":"text","text":"hi "},{"type":"text","text":"there"}]}]`

func TestJSONCompletion(t *testing.T) {
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		resp := llmtest.Echo("> ")(r)
		resp.PromptTokens, resp.CompletionTokens = 5, 2
		return resp
	})
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") || !strings.HasSuffix(srv.URL, "/v1") {
		t.Fatalf("URL = %q", srv.URL)
	}
	resp := post(t, srv.URL+"/chat/completions", body+`}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var out struct {
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message      struct{ Role, Content string } `json:"message"`
			FinishReason string                         `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Object != "chat.completion" || out.Model != "m1" || len(out.Choices) != 1 ||
		out.Choices[0].Message.Role != "assistant" || out.Choices[0].Message.Content != "> hi there" ||
		out.Choices[0].FinishReason != "stop" || out.Usage.TotalTokens != 7 {
		t.Fatalf("response = %+v", out)
	}
	reqs := srv.Requests()
	want := llmtest.Request{Model: "m1", N: 1, Temperature: 0.5, MaxTokens: 7, APIKey: "k1",
		Messages: []llm.Message{{Role: "system", Content: "sys"}, {Role: "user", Content: "hi there"}}}
	if len(reqs) != 1 || reqs[0].Model != want.Model || reqs[0].N != 1 || reqs[0].Temperature != 0.5 ||
		reqs[0].MaxTokens != 7 || reqs[0].APIKey != "k1" || len(reqs[0].Messages) != 2 ||
		!reflect.DeepEqual(reqs[0].Messages[1], want.Messages[1]) {
		t.Fatalf("requests = %+v", reqs)
	}
}

func TestEventStream(t *testing.T) {
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
		return llmtest.Response{Text: "a b c", PromptTokens: 1, CompletionTokens: 3}
	})
	resp := post(t, srv.URL+"/chat/completions", body+`,"stream":true,"stream_options":{"include_usage":true}}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	var (
		text   strings.Builder
		finish string
		usage  int
		done   bool
	)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("unexpected line %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var ch struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta        struct{ Content string } `json:"delta"`
				FinishReason *string                  `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				TotalTokens int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatalf("bad chunk %q: %v", data, err)
		}
		if ch.Object != "chat.completion.chunk" {
			t.Fatalf("object %q", ch.Object)
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Delta.Content)
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
		if ch.Usage != nil {
			usage = ch.Usage.TotalTokens
		}
	}
	if text.String() != "a b c" || finish != "stop" || usage != 4 || !done {
		t.Fatalf("text %q finish %q usage %d done %v", text.String(), finish, usage, done)
	}
}

func TestStreamCutDropsConnection(t *testing.T) {
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
		return llmtest.Response{Text: "one two three four", StreamCut: true}
	})
	resp := post(t, srv.URL+"/chat/completions", body+`,"stream":true}`)
	b, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read err = %v, want unexpected EOF", err)
	}
	if s := string(b); !strings.Contains(s, `"one"`) || strings.Contains(s, "three") || strings.Contains(s, "[DONE]") {
		t.Fatalf("body = %q", s)
	}
}

func TestCutDropsConnectionMidAnswer(t *testing.T) {
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
		return llmtest.Response{Text: "one two three four", StreamCut: true}
	})
	resp := post(t, srv.URL+"/chat/completions", body+`}`)
	b, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read err = %v, want unexpected EOF", err)
	}
	if s := string(b); !strings.HasPrefix(s, `{"id":`) || strings.Contains(s, "four") {
		t.Fatalf("body = %q, want the first half of the answer", s)
	}
}

func TestErrorFormat(t *testing.T) {
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
		return llmtest.Response{Status: 429, RetryAfter: "3"}
	})
	resp := post(t, srv.URL+"/chat/completions", body+`}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" {
		t.Fatalf("status %d retry-after %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if e.Error.Message != "Too Many Requests" || e.Error.Code == nil || *e.Error.Code != "rate_limit_exceeded" {
		t.Fatalf("error = %+v", e)
	}

	// Unknown paths and bad bodies are OpenAI-style errors too.
	if r := post(t, srv.URL+"/moderations", `{}`); r.StatusCode != 404 {
		t.Fatalf("unknown path: %d", r.StatusCode)
	}
	if r := post(t, srv.URL+"/chat/completions", `{`); r.StatusCode != 400 {
		t.Fatalf("bad body: %d", r.StatusCode)
	}
}

func TestGarbage(t *testing.T) {
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response { return llmtest.Response{Garbage: true} })
	resp := post(t, srv.URL+"/chat/completions", body+`}`)
	var v any
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&v) == nil {
		t.Fatalf("status %d, body decoded fine", resp.StatusCode)
	}
}

func TestHangAndDelayEndWhenClientLeaves(t *testing.T) {
	got := make(chan struct{}, 2)
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		got <- struct{}{}
		if r.N == 1 {
			return llmtest.Response{Hang: true}
		}
		return llmtest.Response{Text: "x", Delay: time.Hour}
	})
	for range 2 {
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/chat/completions", strings.NewReader(body+`}`))
		errc := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		<-got
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	}
	// t.Cleanup closing the server must not block on the handlers.
}

// A stream paced by Step sends one piece per receive: the client sees each
// piece only after the test released it.
func TestStreamStep(t *testing.T) {
	step := make(chan struct{})
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
		return llmtest.Response{Pieces: []string{"one", " two", " three"}, Step: step}
	})
	c := llm.New(llm.Options{BaseURL: srv.URL, Model: "m", MaxRetries: -1})
	deltas := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		rep, err := c.Stream(t.Context(), []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, func(d string) { deltas <- d })
		if err == nil && rep.Text != "one two three" {
			err = errors.New("text " + rep.Text)
		}
		done <- err
	}()
	for _, want := range []string{"one", " two", " three"} {
		select {
		case d := <-deltas:
			t.Fatalf("delta %q arrived before it was released", d)
		case <-time.After(20 * time.Millisecond):
		}
		step <- struct{}{}
		if got := <-deltas; got != want {
			t.Fatalf("delta %q, want %q", got, want)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// PieceDelay spaces the pieces of a stream.
func TestStreamPieceDelay(t *testing.T) {
	srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
		return llmtest.Response{Text: "a b c", PieceDelay: 30 * time.Millisecond}
	})
	c := llm.New(llm.Options{BaseURL: srv.URL, Model: "m", MaxRetries: -1})
	var at []time.Time
	rep, err := c.Stream(t.Context(), []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, func(string) { at = append(at, time.Now()) })
	if err != nil || rep.Text != "a b c" || len(at) != 3 {
		t.Fatalf("Stream = %q, %v, %d deltas", rep.Text, err, len(at))
	}
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < 25*time.Millisecond {
			t.Errorf("gap %d = %s, want about 30ms", i, gap)
		}
	}
}

// The fake embeddings endpoint refuses what OpenAI's refuses: no model, an
// input that is neither a string nor strings, base64 (not spoken here).
func TestEmbeddingsRefusesBadRequests(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Echo(""))
	for _, body := range []string{`{"input":"x"}`, `{"model":"m","input":3}`, `{"model":"m","input":"x","encoding_format":"base64"}`, `{`} {
		if r := post(t, srv.URL+"/embeddings", body); r.StatusCode != 400 {
			t.Errorf("%s: status %d, want 400", body, r.StatusCode)
		}
	}
	if r := post(t, srv.URL+"/embeddings", `{"model":"m","input":"one text"}`); r.StatusCode != 200 {
		t.Errorf("a single string: status %d", r.StatusCode)
	}
}
