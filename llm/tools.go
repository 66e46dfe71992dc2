package llm

import (
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// RoleTool is the role of a message that carries a tool's result back to the
// model (OpenAI's function calling).
const RoleTool Role = "tool"

// Tool is a function the model may call: a name, what it does, and the JSON
// Schema of its arguments.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // a JSON Schema object
}

// ToolCall is the model's request to call a tool. Arguments is the JSON the
// model wrote: it may be invalid, and is checked by whoever runs the tool.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// toolsParam converts tools to go-openai's request field.
func toolsParam(tools []Tool) []openai.Tool {
	if len(tools) == 0 {
		return nil
	}
	out := make([]openai.Tool, len(tools))
	for i, t := range tools {
		out[i] = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters,
		}}
	}
	return out
}

// wireMessage converts one message to go-openai's form.
func wireMessage(m Message) openai.ChatCompletionMessage {
	w := openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
	if len(m.Images) > 0 {
		w.Content, w.MultiContent = "", imageParts(m.Content, m.Images)
	}
	for _, tc := range m.ToolCalls {
		w.ToolCalls = append(w.ToolCalls, openai.ToolCall{
			ID: tc.ID, Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
		})
	}
	return w
}

// toolCallsOf converts the tool calls of a complete answer.
func toolCallsOf(calls []openai.ToolCall) []ToolCall {
	var out []ToolCall
	for _, c := range calls {
		out = append(out, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return out
}

// toolCallAccumulator assembles tool calls from stream deltas: the first
// delta of a call carries its index, id and name, later ones pieces of its
// arguments.
type toolCallAccumulator struct{ calls []ToolCall }

func (a *toolCallAccumulator) add(deltas []openai.ToolCall) {
	for _, d := range deltas {
		i := len(a.calls)
		if d.Index != nil {
			i = *d.Index
		} else if d.ID == "" && i > 0 {
			i-- // a continuation without an index belongs to the last call
		}
		if i < 0 || i > 64 {
			continue
		}
		for len(a.calls) <= i {
			a.calls = append(a.calls, ToolCall{})
		}
		c := &a.calls[i]
		if d.ID != "" {
			c.ID = d.ID
		}
		if d.Function.Name != "" {
			c.Name += d.Function.Name
		}
		c.Arguments += d.Function.Arguments
	}
}

func (a *toolCallAccumulator) result() []ToolCall {
	var out []ToolCall
	for _, c := range a.calls {
		if c.Name != "" {
			out = append(out, c)
		}
	}
	return out
}

// IsToolsRejected reports whether err is a server refusing the request
// because it offered tools (a model or server without function calling).
func IsToolsRejected(err error) bool {
	var st *StatusError
	if !errors.As(err, &st) || (st.Code != http.StatusBadRequest && st.Code != http.StatusNotImplemented && st.Code != http.StatusUnprocessableEntity) {
		return false
	}
	m := strings.ToLower(st.Message)
	return strings.Contains(m, "tool") || strings.Contains(m, "function call")
}

// contextLengthRE finds the window a provider names in a context-length
// error: OpenAI "maximum context length is 8192 tokens" (or "Input tokens
// exceed the configured limit of 272000 tokens"), llama.cpp
// "exceeds the available context size (4096 tokens)", Ollama/vLLM
// "context length of 2048".
var contextLengthRE = regexp.MustCompile(`(?i)(?:maximum context length is|configured limit of|context size \(|context length of|context window of|n_ctx[ =:]+)\s*(\d{3,7})`)

// IsContextLength reports whether err is the provider saying the prompt does
// not fit the model's context window, and the window when it names one.
func IsContextLength(err error) (window int, ok bool) {
	var st *StatusError
	if !errors.As(err, &st) {
		return 0, false
	}
	if st.Code != http.StatusBadRequest && st.Code != http.StatusRequestEntityTooLarge && st.Code != http.StatusInternalServerError {
		return 0, false
	}
	m := strings.ToLower(st.Message)
	if st.ErrorCode != "context_length_exceeded" && !strings.Contains(m, "context_length_exceeded") && !strings.Contains(m, "context length") &&
		!strings.Contains(m, "context size") && !strings.Contains(m, "context window") &&
		!strings.Contains(m, "too many tokens") && !strings.Contains(m, "prompt is too long") &&
		st.Code != http.StatusRequestEntityTooLarge {
		return 0, false
	}
	if sm := contextLengthRE.FindStringSubmatch(st.Message); sm != nil {
		window, _ = strconv.Atoi(sm[1])
	}
	return window, true
}
