package main

// Go benchmarks of the turn figures, on the code the bench program runs
// (package figures). Figures are printed with b.ReportMetric; comparisons are
// measured side by side in one run; nothing asserts on time.
//
//	go test -run='^$' -bench=. ./bench/                         # ~6 min on 2 cores
//	go test -run='^$' -bench=TurnOverhead ./bench/              # ~1 min; builds $TMPDIR/recall-bench-turn-v2 once (~1 min)
//	go test -run='^$' -bench=ConcurrentConversations ./bench/   # ~4 min: 4 × 10,000 turns at 200 ms each
//	go test -run='^$' -bench='ConcurrentConversations/C=100/idle=100' ./bench/ -heapprofile=/tmp/heap.pprof
//	                                                             # what stays on the heap after the load
//	go test -run='^$' -bench=PromptTokensPerTurn ./bench/       # ~20 s
//
// Each benchmark's op is a whole run (300 turn pairs, 10,000 turns, 1,000
// turns), so ns/op says little: read the reported metrics.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/recallbot/recall/bench/figures"
)

// BenchmarkTurnOverhead measures a turn without the LLM call in the big
// conversation of the turn fixture (100,000 archived messages) against a
// fresh conversation of the same store: see figures.TurnOverhead.
//
// Metrics (per turn, chain only): p50_ms, p99_ms, turns/s (1 / mean latency)
// and cpu_ms (mean CPU time the process used during a turn, background
// summaries and GC included: less sensitive to a busy machine than the wall
// clock) for the big conversation; fresh_* the same for the fresh one; asm_*
// the assembly alone and store_* the durable write of the reply, in the big
// conversation.
func BenchmarkTurnOverhead(b *testing.B) {
	ctx := context.Background()
	var big, fresh, bigCPU, freshCPU, asm, store []time.Duration
	var sums int64
	for b.Loop() {
		res, err := figures.TurnOverhead(ctx, figures.TurnOptions{Archived: 100_000, Turns: 300, Warmup: 20, Progress: os.Stderr})
		if err != nil {
			b.Fatal(err)
		}
		big, fresh = append(big, res.Big...), append(fresh, res.Fresh...)
		bigCPU, freshCPU = append(bigCPU, res.BigCPU...), append(freshCPU, res.FreshCPU...)
		asm, store = append(asm, res.Asm...), append(store, res.Store...)
		sums += res.SummaryCalls
	}
	ms, pct, sum := figures.MS, figures.Pct, figures.Sum
	b.ReportMetric(ms(pct(big, 0.50)), "p50_ms")
	b.ReportMetric(ms(pct(big, 0.99)), "p99_ms")
	b.ReportMetric(float64(len(big))/sum(big).Seconds(), "turns/s")
	b.ReportMetric(ms(sum(bigCPU))/float64(len(bigCPU)), "cpu_ms")
	b.ReportMetric(ms(pct(fresh, 0.50)), "fresh_p50_ms")
	b.ReportMetric(ms(pct(fresh, 0.99)), "fresh_p99_ms")
	b.ReportMetric(float64(len(fresh))/sum(fresh).Seconds(), "fresh_turns/s")
	b.ReportMetric(ms(sum(freshCPU))/float64(len(freshCPU)), "fresh_cpu_ms")
	b.ReportMetric(ms(pct(asm, 0.50)), "asm_p50_ms")
	b.ReportMetric(ms(pct(asm, 0.99)), "asm_p99_ms")
	b.ReportMetric(ms(pct(store, 0.50)), "store_p50_ms")
	b.ReportMetric(ms(pct(store, 0.99)), "store_p99_ms")
	b.ReportMetric(float64(sums), "summary_calls")
}

// BenchmarkTurnOverheadHybrid is the turn of BenchmarkTurnOverhead with
// hybrid retrieval on (memory.embeddings, a fake endpoint answering at
// once, 256 dimensions) beside the same turns with full text only,
// alternating: see figures.TurnOverheadHybrid. cpu_ms is the mean CPU time
// of the process during a turn (background embedding included), the
// figure least moved by a busy machine.
func BenchmarkTurnOverheadHybrid(b *testing.B) {
	ctx := context.Background()
	var hy, ft, hyCPU, ftCPU []time.Duration
	for b.Loop() {
		res, err := figures.TurnOverheadHybrid(ctx, figures.TurnOptions{Archived: 100_000, Turns: 300, Warmup: 20, Progress: os.Stderr})
		if err != nil {
			b.Fatal(err)
		}
		hy, ft = append(hy, res.Variant...), append(ft, res.Base...)
		hyCPU, ftCPU = append(hyCPU, res.VariantCPU...), append(ftCPU, res.BaseCPU...)
	}
	ms, pct, sum := figures.MS, figures.Pct, figures.Sum
	b.ReportMetric(ms(pct(hy, 0.50)), "p50_ms")
	b.ReportMetric(ms(pct(hy, 0.99)), "p99_ms")
	b.ReportMetric(ms(sum(hyCPU))/float64(len(hyCPU)), "cpu_ms")
	b.ReportMetric(ms(pct(ft, 0.50)), "fulltext_p50_ms")
	b.ReportMetric(ms(pct(ft, 0.99)), "fulltext_p99_ms")
	b.ReportMetric(ms(sum(ftCPU))/float64(len(ftCPU)), "fulltext_cpu_ms")
}

// BenchmarkConcurrentConversations runs 1,000 conversations × 10 turns
// through the pipeline.Dispatcher and the whole chain, against the real
// llm.Client and an llmtest server that answers every request after 200 ms:
// see figures.Concurrent. ideal = C / 0.2 s; ratio = throughput / ideal.
//
// idle is the client's http.Transport MaxIdleConnsPerHost: C, or 32 as llm
// sets it when Options.HTTPClient is nil. With fewer idle connections than
// calls in flight, a finished call's connection is closed and a later call
// dials a new one: new_conns counts the dials. notices counts the other
// messages the bot sent (the storage warning when a reply could not be
// stored within chat's StoreTimeout) and log_warnings the warnings and errors
// logged; both should be 0.
//
// cpu_ms/turn is the CPU time the whole process (fake server included) spent
// per turn, and cores@ideal the cores the ideal throughput would need at
// that cost: on a 2-core machine the ratio cannot approach 1 when that is
// near 2.
func BenchmarkConcurrentConversations(b *testing.B) {
	for _, c := range []int{50, 100} {
		for _, idle := range []int{c, figures.LLMDefaultIdle} {
			b.Run(fmt.Sprintf("C=%d/idle=%d", c, idle), func(b *testing.B) {
				benchConcurrent(b, c, idle)
			})
		}
	}
}

var heapProfile = flag.String("heapprofile", "", "write a heap profile taken after the last load of ConcurrentConversations to this file (in-use space: what the load left behind)")

func benchConcurrent(b *testing.B, conc, idle int) {
	const convs, turns = 1000, 10
	var runs int
	var wall, cpu time.Duration
	var last figures.ConcurrentResult
	notices, warns := 0, 0
	for b.Loop() {
		var heap io.Writer
		if *heapProfile != "" {
			f, err := os.Create(*heapProfile)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			heap = f
		}
		res, err := figures.Concurrent(context.Background(), figures.ConcurrentOptions{
			Convs: convs, Turns: turns, Concurrency: conc, Idle: idle, Delay: 200 * time.Millisecond, TempDir: b.TempDir(),
			HeapProfile: heap,
		})
		if err != nil {
			b.Fatal(err)
		}
		runs++
		wall += res.Wall
		cpu += res.CPU
		notices += res.Notices
		warns += res.LogWarnings
		if res.Warnings != "" {
			b.Log(res.Warnings)
		}
		last = res
	}
	avg := wall / time.Duration(runs)
	throughput := float64(convs*turns) / avg.Seconds()
	b.ReportMetric(avg.Seconds(), "wall_s")
	b.ReportMetric(throughput, "throughput")
	b.ReportMetric(last.Ideal, "ideal")
	b.ReportMetric(throughput/last.Ideal, "ratio")
	b.ReportMetric(float64(last.LLMCalls), "llm_calls")
	b.ReportMetric(float64(last.NewConns), "new_conns")
	b.ReportMetric(float64(last.SummaryCalls), "summary_calls")
	cpuPerTurn := cpu.Seconds() / float64(runs*convs*turns)
	b.ReportMetric(cpuPerTurn*1000, "cpu_ms/turn")
	b.ReportMetric(cpuPerTurn*last.Ideal, "cores@ideal")
	b.ReportMetric(float64(warns), "log_warnings")
	b.ReportMetric(float64(notices), "notices")
}

// BenchmarkPromptTokensPerTurn drives one conversation to turn 1,000 and
// reports the prompt sent to the model at turns 10, 100 and 1,000 against
// what the whole history would cost: see figures.PromptTokens.
func BenchmarkPromptTokensPerTurn(b *testing.B) {
	const turns = 1000
	var res map[string]float64
	for b.Loop() {
		var err error
		if res, err = figures.PromptTokens(context.Background(), turns); err != nil {
			b.Fatal(err)
		}
	}
	for _, k := range []string{"t10_prompt", "t10_full", "t100_prompt", "t100_full", "t1000_prompt", "t1000_full",
		"max_prompt", "summary_calls"} {
		b.ReportMetric(res[k], k)
	}
	for _, part := range []string{"summaries", "snippets", "recent"} { // of turn 1,000's prompt
		b.ReportMetric(res["last_"+part], "t1000_"+part)
	}
}
