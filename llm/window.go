package llm

import "strings"

// DefaultContextWindow is assumed for a model the table does not know.
const DefaultContextWindow = 8192

// contextWindows holds the context windows (tokens) of common models, by
// model-name prefix; the longest matching prefix wins. Names are compared
// lower-case, after any "provider/" part (OpenRouter's "openai/gpt-4o").
var contextWindows = []struct {
	prefix string
	tokens int
}{
	{"gpt-4.1", 1_047_576}, {"gpt-4o", 128_000}, {"gpt-4-turbo", 128_000}, {"gpt-4-32k", 32_768}, {"gpt-4", 8_192},
	{"gpt-3.5-turbo", 16_385}, {"gpt-5", 400_000}, {"o1", 200_000}, {"o3", 200_000}, {"o4", 200_000},
	{"claude", 200_000}, {"gemini", 1_000_000},
	{"llama3.1", 131_072}, {"llama3.2", 131_072}, {"llama3.3", 131_072}, {"llama-3.1", 131_072}, {"llama-3.3", 131_072}, {"llama3", 8_192},
	{"mistral-nemo", 128_000}, {"mistral", 32_768}, {"mixtral", 32_768}, {"qwen2.5", 32_768}, {"qwen3", 40_960}, {"qwen2", 32_768},
	{"gemma3", 131_072}, {"gemma2", 8_192}, {"gemma", 8_192}, {"phi3", 4_096}, {"phi4", 16_384}, {"deepseek", 65_536},
}

// ContextWindow returns the context window of a model from a small built-in
// table of common models, or DefaultContextWindow.
func ContextWindow(model string) int {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	best, tokens := 0, DefaultContextWindow
	for _, w := range contextWindows {
		if strings.HasPrefix(m, w.prefix) && len(w.prefix) > best {
			best, tokens = len(w.prefix), w.tokens
		}
	}
	return tokens
}
