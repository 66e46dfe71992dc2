package chat

import (
	"context"
	"sync"
	"testing"

	"github.com/recallbot/recall/llm/llmtest"
)

// usageLog is a stateful Usage.
type usageLog struct {
	mu     sync.Mutex
	tokens map[string]int
	calls  int
}

func (u *usageLog) Add(_ context.Context, userID string, tokens int) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.tokens == nil {
		u.tokens = map[string]int{}
	}
	u.tokens[userID] += tokens
	u.calls++
	return nil
}

func TestUsageIsRecordedPerUser(t *testing.T) {
	tests := []struct {
		name     string
		reported bool
	}{{"reported by the server", true}, {"estimated when the server reports none", false}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(r llmtest.Request) llmtest.Response {
				resp := llmtest.Echo("echo: ")(r)
				if tt.reported {
					resp.PromptTokens, resp.CompletionTokens = 120, 30
				}
				return resp
			}, Options{})
			u := &usageLog{}
			f.respond(Options{Usage: u})
			if err := f.turn(t, inbound("m1", "hello there"), &recorder{}); err != nil {
				t.Fatal(err)
			}
			got := u.tokens["telegram:555"]
			switch {
			case u.calls != 1:
				t.Errorf("%d calls, want 1", u.calls)
			case tt.reported && got != 150:
				t.Errorf("recorded %d tokens, want 150 (120 + 30)", got)
			case !tt.reported && got <= 0:
				t.Errorf("recorded %d tokens, want an estimate", got)
			}
		})
	}
}

func TestUsageNotRecordedWithoutAnAnswer(t *testing.T) {
	f := newFixture(t, func(llmtest.Request) llmtest.Response { return llmtest.Response{Status: 500} }, Options{})
	u := &usageLog{}
	f.respond(Options{Usage: u})
	_ = f.turn(t, inbound("m1", "hello"), &recorder{})
	if u.calls != 0 {
		t.Errorf("a failed LLM call recorded usage: %v", u.tokens)
	}
}
