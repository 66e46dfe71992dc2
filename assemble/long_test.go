package assemble_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/llm"
)

// BenchmarkBuildLongMessage assembles the prompt for one message without
// spaces of growing length, with the real tokenizer of the default model,
// under the default budgets. Past the budget (from 65,536 characters) the
// message is cut by counting prefixes (a binary search: log n counts of the
// kept part), so ns/char grows by that log factor, not with the length: a
// 65,536-character message cost ~20 s of CPU when tokenizing a run was
// quadratic.
//
//	go test ./assemble -run '^$' -bench BuildLongMessage -benchtime 5x
func BenchmarkBuildLongMessage(b *testing.B) {
	budget := assemble.Budget{Total: 8000, System: 1500, Memories: 500, Summaries: 2000, Snippets: 1500, Recent: 3000}
	for _, n := range []int{4096, 16384, 65536, 262144} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			count := llm.NewCounter("gpt-4o-mini")
			count.Count("load the tables before the clock starts")
			asm := assemble.New(fixture(), count, budget)
			i := 0
			for b.Loop() {
				i++
				req := request()
				req.Text = strings.Repeat(string(rune('a'+i%26)), n) // a new text each time: no cached counts
				if _, err := asm.Build(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/char")
		})
	}
}
