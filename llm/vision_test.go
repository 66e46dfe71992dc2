package llm_test

import (
	"testing"

	"github.com/recallbot/recall/llm"
)

// Image tokens follow each provider's published rule (OpenAI's examples:
// 1024×1024 is 765 tokens, 2048×4096 is 1,105).
func TestImageTokens(t *testing.T) {
	for _, tc := range []struct {
		model string
		w, h  int
		want  int
	}{
		{"gpt-4o", 1024, 1024, 765},
		{"gpt-4o", 2048, 4096, 1105},
		{"gpt-4.1-mini", 512, 512, 255},
		{"gpt-4o", 1568, 1045, 1105},
		{"llava:13b", 1024, 1024, 765}, // no published rule: OpenAI's as the estimate
		{"claude-3-5-sonnet", 1000, 750, 1000},
		{"anthropic/claude-sonnet-4", 1568, 1568, 1600},
		{"gemini-2.0-flash", 300, 300, 258},
		{"gemini-2.0-flash", 1568, 1045, 258 * 3 * 2},
		{"gpt-4o", 0, 10, 0},
	} {
		if got := llm.ImageTokens(tc.model, tc.w, tc.h); got != tc.want {
			t.Errorf("%s %d×%d: %d tokens, want %d", tc.model, tc.w, tc.h, got, tc.want)
		}
	}
}
