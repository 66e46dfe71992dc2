package memtools_test

import (
	"encoding/json"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memtools"
)

// BenchmarkOfferingTools is what offering the memory tools adds to each
// LLM call on the bot's side: declaring the five tools and encoding them
// into the request, beside the same request without them (a 4,000-token
// prompt of 12 messages). Run: go test -run='^$' -bench=OfferingTools ./memtools/
func BenchmarkOfferingTools(b *testing.B) {
	box := memtools.New(nil, llm.NewCounter("gpt-4o-mini"), memtools.Options{})
	msgs := make([]openai.ChatCompletionMessage, 12)
	for i := range msgs {
		msgs[i] = openai.ChatCompletionMessage{Role: "user", Content: strings.Repeat("we talked about the lease ", 50)}
	}
	encode := func(b *testing.B, withTools bool) {
		for b.Loop() {
			req := openai.ChatCompletionRequest{Model: "gpt-4o-mini", Messages: msgs}
			if withTools {
				for _, t := range box.Tools() {
					req.Tools = append(req.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
						Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
				}
			}
			if _, err := json.Marshal(req); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("without", func(b *testing.B) { encode(b, false) })
	b.Run("with", func(b *testing.B) { encode(b, true) })
}
