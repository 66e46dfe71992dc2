package llm_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
)

func TestToolCallsRoundTrip(t *testing.T) {
	calls := []llm.ToolCall{
		{ID: "call_1", Name: "search_memory", Arguments: `{"query":"lease March"}`},
		{ID: "call_2", Name: "list_memories", Arguments: `{}`},
	}
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		return llmtest.Response{ToolCalls: calls}
	})
	c := llm.New(llm.Options{BaseURL: srv.URL, Model: "m", MaxRetries: -1, Timeout: 5 * time.Second})
	tools := []llm.Tool{{Name: "search_memory", Description: "d", Parameters: []byte(`{"type":"object"}`)}}
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "hi"}}
	for _, stream := range []bool{false, true} {
		var rep llm.Reply
		var err error
		if stream {
			rep, err = c.StreamTools(t.Context(), msgs, tools, nil)
		} else {
			rep, err = c.ChatTools(t.Context(), msgs, tools)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(rep.ToolCalls, calls) || rep.FinishReason != "tool_calls" {
			t.Fatalf("stream=%v: calls = %+v, finish %q", stream, rep.ToolCalls, rep.FinishReason)
		}
	}
	// The calls and a result go back to the server intact.
	back := append(msgs, llm.Message{Role: llm.RoleAssistant, ToolCalls: calls},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Content: "nothing found"})
	if _, err := c.ChatTools(t.Context(), back, tools); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	if !reflect.DeepEqual(last.Messages[1].ToolCalls, calls) || last.Messages[2].ToolCallID != "call_1" || last.Tools[0] != "search_memory" {
		t.Fatalf("sent %+v", last)
	}
}

func TestRefusalsAreRecognized(t *testing.T) {
	cases := []struct {
		status         int
		msg            string
		tools, context bool
		window         int
		code           string // the error body's "code"
	}{
		{400, "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", false, true, 8192, ""},
		{400, "the request exceeds the available context size (4096 tokens), try increasing it", false, true, 4096, ""},
		{400, "registry.ollama.ai/library/llama2:latest does not support tools", true, false, 0, ""},
		{400, "tools are not supported for this model", true, false, 0, ""},
		{400, "invalid temperature", false, false, 0, ""},
		{413, "Request Entity Too Large", false, true, 0, ""},
		{401, "bad key mentioning tools", false, false, 0, ""},
		// OpenAI's newer wording: only the code says what it is.
		{400, "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 300000 tokens.", false, true, 272000, "context_length_exceeded"},
		{400, "Invalid value for 'messages'.", false, false, 0, "invalid_value"},
	}
	for _, tc := range cases {
		srv := llmtest.NewServer(t, func(llmtest.Request) llmtest.Response {
			return llmtest.Response{Status: tc.status, Text: tc.msg, ErrorCode: tc.code}
		})
		c := llm.New(llm.Options{BaseURL: srv.URL, Model: "m", MaxRetries: -1, Timeout: 5 * time.Second})
		_, err := c.Chat(t.Context(), []llm.Message{{Role: llm.RoleUser, Content: "x"}})
		if got := llm.IsToolsRejected(err); got != tc.tools {
			t.Errorf("%d %q: IsToolsRejected = %v", tc.status, tc.msg, got)
		}
		w, ok := llm.IsContextLength(err)
		if ok != tc.context || w != tc.window {
			t.Errorf("%d %q: IsContextLength = %d, %v", tc.status, tc.msg, w, ok)
		}
	}
}

func TestContextWindowTable(t *testing.T) {
	for model, want := range map[string]int{
		"gpt-4o-mini": 128_000, "openai/gpt-4o": 128_000, "gpt-4": 8_192, "llama3.1:8b": 131_072,
		"llama3:8b": 8_192, "my-finetune": llm.DefaultContextWindow, "": llm.DefaultContextWindow,
	} {
		if got := llm.ContextWindow(model); got != want {
			t.Errorf("ContextWindow(%q) = %d, want %d", model, got, want)
		}
	}
}
