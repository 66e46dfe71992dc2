package main

import (
	"context"
	"encoding/json"

	"github.com/go-telegram/bot/models"
	"github.com/sashabaranov/go-openai"

	"github.com/recallbot/recall/app"
	"github.com/recallbot/recall/pipeline"
)

// warmUpKey is a conversation no platform has: assembling its prompt reads
// nothing and writes nothing.
var warmUpKey = pipeline.Key{Channel: "warm-up", Chat: "0"}

// The JSON a first turn decodes and encodes: an update from Telegram, the
// LLM's answer (whole, and a streamed chunk).
const (
	warmUpdate   = `{"update_id":1,"message":{"message_id":1,"date":1,"chat":{"id":1,"type":"private","first_name":"A"},"from":{"id":1,"is_bot":false,"first_name":"A"},"text":"hi","entities":[{"type":"bold","offset":0,"length":2}]}}`
	warmResponse = `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	warmChunk    = `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"}}]}`
)

// warmUp does once at start, in the background, the work a first turn would
// otherwise pay for on its own (issue #21: it answered ~6 ms slower than
// the tenth): it assembles the prompt of an empty conversation (the readers'
// first connection and statements, the assembler's and the tokenizer's
// first use) and fills encoding/json's caches for the types a turn
// decodes and encodes. Nothing it does is kept or sent.
func warmUp(ctx context.Context, a *app.App) {
	if a.Responder != nil {
		_, _ = a.Responder.Prompt(ctx, warmUpKey, "warm up")
	}
	_ = json.Unmarshal([]byte(warmUpdate), new(models.Update))
	_ = json.Unmarshal([]byte(warmResponse), new(openai.ChatCompletionResponse))
	_ = json.Unmarshal([]byte(warmChunk), new(openai.ChatCompletionStreamResponse))
	_, _ = json.Marshal(openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}, Stream: true})
}
