package llm_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/recallbot/recall/llm"
)

func TestCounterOpenAI(t *testing.T) {
	for _, tc := range []struct {
		model, text string
		want        int
	}{
		{"gpt-4o", "hello world", 2},
		{"gpt-4o-mini", "", 0},
		{"openai/gpt-4.1", "hello world", 2},
		{"gpt-4", "hello world", 2},
		{"gpt-3.5-turbo", "hello world", 2},
		{"o3-mini", "hello world", 2},
		{"gpt-5", "hello world", 2},
		// Special tokens are counted as plain text, never rejected.
		{"gpt-4o", "<|endoftext|>", 7},
	} {
		if got := llm.NewCounter(tc.model).Count(tc.text); got != tc.want {
			t.Errorf("%s: Count(%q) = %d, want %d", tc.model, tc.text, got, tc.want)
		}
	}
}

func TestCounterPicksEncoding(t *testing.T) {
	// o200k_base and cl100k_base split this text differently, so the counts
	// tell which encoding a model name got.
	const text = "Привет, как дела? 東京は晴れです。"
	o200k := llm.NewCounter("gpt-4o").Count(text)
	cl100k := llm.NewCounter("gpt-4").Count(text)
	if o200k == cl100k {
		t.Fatalf("test text does not separate the encodings (%d)", o200k)
	}
	for model, want := range map[string]int{
		"gpt-4o": o200k, "gpt-4.1-mini": o200k, "o1": o200k, "o4-mini": o200k, "gpt-5-nano": o200k,
		"gpt-oss-20b": o200k, "gpt-4.5-preview": o200k, "chatgpt-4o-latest": o200k,
		"gpt-4": cl100k, "gpt-4-0613": cl100k, "gpt-35-turbo": cl100k, "gpt-3.5-turbo-16k": cl100k, "GPT-4-Turbo": cl100k,
	} {
		if got := llm.NewCounter(model).Count(text); got != want {
			t.Errorf("%s: Count = %d, want %d", model, got, want)
		}
	}
}

func TestCounterEstimate(t *testing.T) {
	for _, tc := range []struct {
		model, text string
		want        int
	}{
		{"llama3", "hello world", 3}, // 11 runes
		{"mistral", "", 0},
		{"qwen2.5:7b", "abcd", 1},
		{"meta-llama/llama-3.1-8b-instruct", "abcde", 2},
		{"llama3", "héllo", 2}, // runes, not bytes
		{"llama3", "日本語のテキスト", 2},
	} {
		if got := llm.NewCounter(tc.model).Count(tc.text); got != tc.want {
			t.Errorf("%s: Count(%q) = %d, want %d", tc.model, tc.text, got, tc.want)
		}
	}
}

func TestCountMessages(t *testing.T) {
	c := llm.NewCounter("gpt-4o")
	msgs := []llm.Message{{Role: "system", Content: "hello world"}, {Role: "user", Content: "hello world"}}
	if got, want := llm.CountMessages(c, msgs), 3+2*(4+2); got != want {
		t.Fatalf("CountMessages = %d, want %d", got, want)
	}
	if got := llm.CountMessages(c, nil); got != 3 {
		t.Fatalf("CountMessages(nil) = %d", got)
	}
}

func TestCounterConcurrentAndCached(t *testing.T) {
	c := llm.NewCounter("gpt-4o")
	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20)
	want := c.Count(long)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				text := long
				if j%2 == 0 {
					text = long[:len(long)-i-1]
				}
				got := c.Count(text)
				if text == long && got != want {
					t.Errorf("concurrent Count = %d, want %d", got, want)
				}
			}
		})
	}
	wg.Wait()
	if again := llm.NewCounter("gpt-4o").Count(long); again != want {
		t.Fatalf("cached count = %d, want %d", again, want)
	}
}

var sink int

func benchText() string {
	return strings.Repeat("Recall remembers what you told it last week, so it can answer in context. ", 8)
}

func BenchmarkCountTiktokenShort(b *testing.B) {
	c := llm.NewCounter("gpt-4o")
	for b.Loop() {
		sink = c.Count("hello there, how are you?")
	}
}

func BenchmarkCountTiktokenCached(b *testing.B) {
	c := llm.NewCounter("gpt-4o")
	text := benchText()
	for b.Loop() {
		sink = c.Count(text)
	}
}

func BenchmarkCountTiktokenUncached(b *testing.B) {
	c := llm.NewCounter("gpt-4o")
	// More distinct texts than the cache holds, so every Count misses.
	texts := make([]string, 20000)
	for i := range texts {
		texts[i] = fmt.Sprintf("%d: Recall remembers what you told it last week (%d), so it can answer in context.", i, i*7)
	}
	i := 0
	for b.Loop() {
		i++
		sink = c.Count(texts[i%len(texts)])
	}
}

func BenchmarkCountEstimate(b *testing.B) {
	c := llm.NewCounter("llama3")
	text := benchText()
	for b.Loop() {
		sink = c.Count(text)
	}
}

func BenchmarkCountParallel(b *testing.B) {
	c := llm.NewCounter("gpt-4o")
	text := benchText()
	b.RunParallel(func(pb *testing.PB) {
		n := 0
		for pb.Next() {
			n += c.Count(text)
		}
		_ = n
	})
}

// BenchmarkCountLongRun counts runs without spaces of growing length; the
// ns/char figure stays flat when counting is linear (it grew with the length
// when tiktoken encoded the run whole: 32,000 letters took 0.5 s).
func BenchmarkCountLongRun(b *testing.B) {
	for _, n := range []int{1024, 4096, 16384, 65536} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c := llm.NewCounter("gpt-4o")
			c.Count("load the tables before the clock starts")
			texts := []string{strings.Repeat("a", n), strings.Repeat("b", n)} // alternate: no cache hits
			i := 0
			for b.Loop() {
				i++
				sink = c.Count(texts[i%2] + "x")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/char")
		})
	}
}
