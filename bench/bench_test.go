// Package bench holds end-to-end benchmarks of a turn through the whole
// chain (access, dedupe, commands, responder) on the real store. Figures are
// printed with b.ReportMetric; comparisons are measured side by side in one
// run; nothing asserts on time.
//
//	go test -run='^$' -bench=. ./bench/                         # ~6 min on 2 cores
//	go test -run='^$' -bench=TurnOverhead ./bench/              # ~1 min; builds $TMPDIR/recall-bench-turn-v1 once (~1 min)
//	go test -run='^$' -bench=ConcurrentConversations ./bench/   # ~4 min: 4 × 10,000 turns at 200 ms each
//	go test -run='^$' -bench=PromptTokensPerTurn ./bench/       # ~20 s
//
// Each benchmark's op is a whole run (300 turn pairs, 10,000 turns, 1,000
// turns), so ns/op says little: read the reported metrics.
package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/summary"
)

// textPool pre-generates n texts of lo–hi words.
func textPool(g *textGen, n, lo, hi int, people []string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = g.words(g.between(lo, hi), people)
	}
	return out
}

// convDriver plays the user of one conversation, one turn at a time.
type convDriver struct {
	key    pipeline.Key
	user   string
	name   string
	people []string
	g      *textGen
	n      int
	out    countingSender
}

// turn sends one user message of 3–30 words through h and returns how long
// the chain took, and the CPU time the process used meanwhile (background
// work included). The reply must be exactly one non-error message.
func (d *convDriver) turn(ctx context.Context, b *testing.B, h pipeline.Handler) (took, cpu time.Duration) {
	d.n++
	in := pipeline.Inbound{
		Key: d.key, SenderID: d.user, SenderName: d.name, MessageID: "bench-" + strconv.Itoa(d.n),
		Text: d.g.words(d.g.between(3, 30), d.people), Time: time.Now(),
	}
	before, _ := d.out.state()
	cpu0, start := processCPU(), time.Now()
	err := h.Handle(ctx, &pipeline.Turn{In: in, Out: &d.out})
	took, cpu = time.Since(start), processCPU()-cpu0
	if err != nil {
		b.Fatalf("turn %d of %s: %v", d.n, d.key, err)
	}
	if n, last := d.out.state(); n != before+1 || last.Plain || last.ReplyTo != in.MessageID {
		b.Fatalf("turn %d of %s: %d messages sent, last %+v; want one reply", d.n, d.key, n-before, last)
	}
	return took, cpu
}

// BenchmarkTurnOverhead measures everything in a turn except the LLM call and
// the transport: access, dedupe (a store lookup), commands, settings, queueing
// the user message, assembly (summaries, recent turns, FTS5 snippet search
// over the archive, token counting), storing the reply durably, the summary
// trigger — with the summaries themselves running in the background as wired
// (threshold 10, instant fake model). Each op is turnsPerOp turns in the big
// conversation (100,000 archived messages, 10 active level-1 summaries, ~30
// active messages) interleaved with as many in a fresh conversation of the
// same store (0 messages at the start), so both see the same machine noise.
//
// Metrics (per turn, chain only): p50_ms, p99_ms, turns/s (1 / mean latency)
// and cpu_ms (mean CPU time the process used during a turn, background
// summaries and GC included: less sensitive to a busy machine than the wall
// clock) for the big conversation; fresh_* the same for the fresh one; asm_*
// the assembly alone and store_* the durable write of the reply, in the big
// conversation.
func BenchmarkTurnOverhead(b *testing.B) {
	const (
		turnsPerOp = 300
		warmup     = 20
	)
	src := turnFixture(b)
	dir := b.TempDir()
	copyFile(b, src, filepath.Join(dir, "recall.db"))
	g := newTextGen(11)
	fake := &fakeModel{replies: textPool(g, 64, 12, 80, bigPeople), summaries: textPool(g, 16, 60, 110, bigPeople)}
	asmLat, storeLat := &latencies{}, &latencies{}
	freshKey := pipeline.Key{Channel: "telegram", Chat: "434343"}
	r := newRig(b, rigConfig{
		dir: dir, model: fake, bgSummary: true,
		allowed:   []string{"telegram:" + bigUser, "telegram:434343"},
		wrapAsm:   func(a chat.Assembler) chat.Assembler { return &timedAssembler{Assembler: a, lat: asmLat} },
		wrapStore: func(s *memory.Store) chat.Store { return &timedStore{Store: s, lat: storeLat} },
	})
	defer r.close(b)
	ctx := context.Background()
	st, err := r.store.Status(ctx, bigKey)
	if err != nil {
		b.Fatal(err)
	}
	if st.Archived != fxArchived {
		b.Fatalf("fixture conversation has %d archived messages, want %d", st.Archived, fxArchived)
	}
	big := &convDriver{key: bigKey, user: bigUser, name: bigName, people: bigPeople, g: newTextGen(21)}
	fresh := &convDriver{key: freshKey, user: "434343", name: "Marta", people: []string{"Marta", "Nuno"}, g: newTextGen(22)}
	for range warmup {
		big.turn(ctx, b, r.handler)
		fresh.turn(ctx, b, r.handler)
	}
	asmLat.reset()
	storeLat.reset()
	sums0 := fake.sums.Load()
	var bigT, freshT, bigCPU, freshCPU []time.Duration
	for b.Loop() {
		for range turnsPerOp {
			t, c := big.turn(ctx, b, r.handler)
			bigT, bigCPU = append(bigT, t), append(bigCPU, c)
			t, c = fresh.turn(ctx, b, r.handler)
			freshT, freshCPU = append(freshT, t), append(freshCPU, c)
		}
	}
	b.ReportMetric(ms(pct(bigT, 0.50)), "p50_ms")
	b.ReportMetric(ms(pct(bigT, 0.99)), "p99_ms")
	b.ReportMetric(float64(len(bigT))/sum(bigT).Seconds(), "turns/s")
	b.ReportMetric(ms(sum(bigCPU))/float64(len(bigCPU)), "cpu_ms")
	b.ReportMetric(ms(pct(freshT, 0.50)), "fresh_p50_ms")
	b.ReportMetric(ms(pct(freshT, 0.99)), "fresh_p99_ms")
	b.ReportMetric(float64(len(freshT))/sum(freshT).Seconds(), "fresh_turns/s")
	b.ReportMetric(ms(sum(freshCPU))/float64(len(freshCPU)), "fresh_cpu_ms")
	asm, store := asmLat.of(bigKey), storeLat.of(bigKey)
	b.ReportMetric(ms(pct(asm, 0.50)), "asm_p50_ms")
	b.ReportMetric(ms(pct(asm, 0.99)), "asm_p99_ms")
	b.ReportMetric(ms(pct(store, 0.50)), "store_p50_ms")
	b.ReportMetric(ms(pct(store, 0.99)), "store_p99_ms")
	b.ReportMetric(float64(fake.sums.Load()-sums0), "summary_calls")
}

// BenchmarkConcurrentConversations runs 1,000 conversations × 10 turns
// through the pipeline.Dispatcher and the whole chain, against the real
// llm.Client and an llmtest server that answers every request after 200 ms.
// With C LLM calls in flight (llm Options.Concurrency; the dispatcher gets 2C
// slots so the LLM limit is the bottleneck) the best possible throughput is
// ideal = C / 0.2 s; ratio = throughput / ideal.
//
// The summary threshold is 500, so no summary is due within 10 turns and the
// figure measures chat turns only (summary_calls reports the summary
// requests the server saw: 0).
//
// idle is the client's http.Transport MaxIdleConnsPerHost: C, or 32 as llm
// sets it when Options.HTTPClient is nil (llm.wrapHTTPClient). With fewer idle
// connections than calls in flight, a finished call's connection is closed
// and a later call dials a new one: new_conns counts the dials. Every conversation's replies must arrive in submission order, each
// turn answered exactly once by the model: anything else fails the
// benchmark. notices counts the other messages the bot sent (the storage
// warning when a reply could not be stored within chat's StoreTimeout) and
// log_warnings the warnings and errors logged; both should be 0.
//
// cpu_ms/turn is the CPU time the whole process (fake server included) spent
// per turn, and cores@ideal the cores the ideal throughput would need at
// that cost: on a 2-core machine the ratio cannot approach 1 when that is
// near 2.
func BenchmarkConcurrentConversations(b *testing.B) {
	for _, c := range []int{50, 100} {
		for _, idle := range []int{c, llmDefaultIdle} {
			b.Run(fmt.Sprintf("C=%d/idle=%d", c, idle), func(b *testing.B) {
				benchConcurrent(b, c, idle)
			})
		}
	}
}

// recorder is the Sender of every conversation: it keeps what was sent, per
// conversation, in order.
type recorder struct {
	mu  sync.Mutex
	got map[pipeline.Key][]pipeline.Outbound
}

func (r *recorder) Send(_ context.Context, out pipeline.Outbound) (string, error) {
	r.mu.Lock()
	r.got[out.Key] = append(r.got[out.Key], out)
	r.mu.Unlock()
	return "", nil
}

// turnID names turn t of conversation c; the user message ends with it in
// brackets and the fake server starts its answer with it.
func turnID(c, t int) string { return "c" + strconv.Itoa(c) + "-t" + strconv.Itoa(t) }

// llmDefaultIdle is the MaxIdleConnsPerHost llm gives the transport it makes
// when Options.HTTPClient is nil.
const llmDefaultIdle = 32

func benchConcurrent(b *testing.B, conc, idle int) {
	const (
		convs    = 1000
		turns    = 10
		llmDelay = 200 * time.Millisecond
	)
	g := newTextGen(31)
	replies := textPool(g, 64, 12, 80, nil)
	var calls, sumCalls atomic.Int64
	srv := llmtest.NewServer(b, func(req llmtest.Request) llmtest.Response {
		n := calls.Add(1)
		if len(req.Messages) > 0 && (req.Messages[0].Content == summary.Instructions || req.Messages[0].Content == summary.FoldInstructions) {
			sumCalls.Add(1)
			return llmtest.Response{Text: replies[0], Delay: llmDelay}
		}
		id := ""
		if len(req.Messages) > 0 {
			last := req.Messages[len(req.Messages)-1].Content
			if i := strings.LastIndexByte(last, '['); i >= 0 {
				id = strings.TrimSuffix(last[i:], "]") + "]"
			}
		}
		return llmtest.Response{Text: id + " " + replies[int(n)%len(replies)], Delay: llmDelay}
	})
	var dials atomic.Int64
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = max(tr.MaxIdleConns, 2*conc)
	tr.MaxIdleConnsPerHost = idle
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dialer.DialContext(ctx, network, addr)
	}
	b.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	cfgLLM := config.Default().LLM
	client := llm.New(llm.Options{
		BaseURL: srv.URL, Model: cfgLLM.Model, Temperature: cfgLLM.Temperature, MaxTokens: cfgLLM.MaxTokens,
		Timeout: cfgLLM.Timeout, MaxRetries: cfgLLM.MaxRetries, Concurrency: conc, HTTPClient: hc,
	})

	// The conversations and their messages, made before the clock starts.
	keys := make([]pipeline.Key, convs)
	allowed := make([]string, convs)
	texts := make([][]string, convs)
	for c := range convs {
		id := strconv.Itoa(700000 + c)
		keys[c] = pipeline.Key{Channel: "telegram", Chat: id}
		allowed[c] = "telegram:" + id
		person := []string{names[c%len(names)]}
		texts[c] = make([]string, turns)
		for t := range turns {
			texts[c][t] = g.words(g.between(3, 30), person) + " [" + turnID(c, t) + "]"
		}
	}

	var runs, notices int
	var wall, cpu time.Duration
	var warns *warnings
	for b.Loop() {
		calls.Store(0)
		sumCalls.Store(0)
		dials.Store(0)
		warns = &warnings{}
		r := newRig(b, rigConfig{dir: b.TempDir(), model: client, threshold: 500, bgSummary: true, allowed: allowed, log: warns.logger()})
		d := pipeline.NewDispatcher(r.handler, 2*conc, warns.logger())
		rec := &recorder{got: make(map[pipeline.Key][]pipeline.Outbound, convs)}
		cpu0, start := processCPU(), time.Now()
		for t := range turns {
			for c := range convs {
				in := pipeline.Inbound{
					Key: keys[c], SenderID: keys[c].Chat, SenderName: names[c%len(names)],
					MessageID: turnID(c, t), Text: texts[c][t], Time: time.Now(),
				}
				if err := d.Submit(in, rec); err != nil {
					b.Fatal(err)
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		err := d.Shutdown(ctx)
		cancel()
		wall += time.Since(start)
		cpu += processCPU() - cpu0
		runs++
		if err != nil {
			b.Fatal(err, "; ", warns)
		}
		r.close(b)
		// Every conversation: its 10 replies, each once, in order. Notices
		// that answer no message (the storage warning) are counted apart.
		for c := range convs {
			var got []pipeline.Outbound
			for _, o := range rec.got[keys[c]] {
				if o.ReplyTo == "" {
					notices++
					continue
				}
				got = append(got, o)
			}
			ok := len(got) == turns
			for t := 0; ok && t < turns; t++ {
				id := turnID(c, t)
				ok = got[t].ReplyTo == id && !got[t].Plain && strings.HasPrefix(got[t].Text, "["+id+"] ")
			}
			if !ok {
				var seen []string
				for _, o := range got {
					seen = append(seen, fmt.Sprintf("%s:%.30q", o.ReplyTo, o.Text))
				}
				b.Fatalf("conversation %d: got %d messages %v; want the replies to %s…%s, once each, in order; %s", c, len(got), seen, turnID(c, 0), turnID(c, turns-1), warns)
			}
		}
		if n := len(rec.got); n != convs {
			b.Fatalf("replies went to %d conversations, want %d", n, convs)
		}
	}
	avg := wall / time.Duration(runs)
	throughput := float64(convs*turns) / avg.Seconds()
	ideal := float64(conc) / llmDelay.Seconds()
	b.ReportMetric(avg.Seconds(), "wall_s")
	b.ReportMetric(throughput, "throughput")
	b.ReportMetric(ideal, "ideal")
	b.ReportMetric(throughput/ideal, "ratio")
	b.ReportMetric(float64(calls.Load()), "llm_calls")
	b.ReportMetric(float64(dials.Load()), "new_conns")
	b.ReportMetric(float64(sumCalls.Load()), "summary_calls")
	// The CPU the process spent per turn (server, client, pipeline, store),
	// and the cores the ideal throughput would need at that cost.
	cpuPerTurn := cpu.Seconds() / float64(runs*convs*turns)
	b.ReportMetric(cpuPerTurn*1000, "cpu_ms/turn")
	b.ReportMetric(cpuPerTurn*ideal, "cores@ideal")
	b.ReportMetric(float64(warns.count()), "log_warnings")
	b.ReportMetric(float64(notices), "notices")
	if warns.count() > 0 {
		b.Log(warns)
	}
}

// BenchmarkPromptTokensPerTurn drives one conversation to turn 1,000 with
// realistic lengths (user 25–35 words, assistant 70–90, summaries 90–110,
// from an instant fake model) and the real summarizer run synchronously
// whenever summary.Due holds (threshold 10, default policy), and reports the
// prompt sent to the model (llm.CountMessages, gpt-4o-mini's tokenizer) at
// turns 10, 100 and 1,000 against what the whole history would cost at that
// turn (system prompt + every earlier message as the prompt renders it + the
// current message). max_prompt is the largest prompt of all 1,000 turns; the
// assembler's own count (Breakdown.Total) must stay within memory.budget.total.
func BenchmarkPromptTokensPerTurn(b *testing.B) {
	const turns = 1000
	var res map[string]float64
	for b.Loop() {
		res = promptRun(b, turns)
	}
	for _, k := range []string{"t10_prompt", "t10_full", "t100_prompt", "t100_full", "t1000_prompt", "t1000_full",
		"max_prompt", "t1000_summaries", "t1000_snippets", "t1000_recent", "summary_calls"} {
		b.ReportMetric(res[k], k)
	}
}

func promptRun(b *testing.B, turns int) map[string]float64 {
	ctx := context.Background()
	g := newTextGen(41)
	people := []string{"Rui", "Helena", "Sofia"} // who Ana talks about
	var mu sync.Mutex
	var sent []llm.Message
	fake := &fakeModel{
		replies:   textPool(g, turns, 70, 90, people),
		summaries: textPool(g, 64, 90, 110, people),
		onChat: func(msgs []llm.Message) {
			mu.Lock()
			sent = append(sent[:0], msgs...)
			mu.Unlock()
		},
	}
	asm := &timedAssembler{}
	key := pipeline.Key{Channel: "telegram", Chat: "515151"}
	r := newRig(b, rigConfig{
		dir: b.TempDir(), model: fake, threshold: 10, bgSummary: false, allowed: []string{"telegram:515151"},
		wrapAsm: func(a chat.Assembler) chat.Assembler { asm.Assembler = a; return asm },
	})
	defer r.close(b)
	budget := r.cfg.Memory.Budget.Total
	const user, name = "515151", "Ana"
	var out countingSender
	// The whole history as the prompt would render it: running token count.
	full := 3 + 4 + r.counter.Count(r.cfg.LLM.SystemPrompt)
	res := map[string]float64{}
	maxPrompt := 0
	for t := 1; t <= turns; t++ {
		in := pipeline.Inbound{
			Key: key, SenderID: user, SenderName: name, MessageID: "p" + strconv.Itoa(t),
			Text: g.words(g.between(25, 35), people),
		}
		if err := r.handler.Handle(ctx, &pipeline.Turn{In: in, Out: &out}); err != nil {
			b.Fatalf("turn %d: %v", t, err)
		}
		if n, last := out.state(); n != t || last.Plain || last.ReplyTo != in.MessageID {
			b.Fatalf("turn %d: %d messages sent, last %+v; want one reply per turn", t, n, last)
		}
		mu.Lock()
		prompt := llm.CountMessages(r.counter, sent)
		mu.Unlock()
		bd := asm.lastPrompt().Breakdown
		if bd.Total > budget {
			b.Errorf("turn %d: the assembled prompt has %d tokens, over the budget of %d", t, bd.Total, budget)
		}
		maxPrompt = max(maxPrompt, prompt)
		current := 4 + r.counter.Count(in.Text)
		switch t {
		case 10, 100, 1000:
			res["t"+strconv.Itoa(t)+"_prompt"] = float64(prompt)
			res["t"+strconv.Itoa(t)+"_full"] = float64(full + current)
		}
		if t == turns {
			res["t1000_summaries"] = float64(bd.Part(assemble.PartSummaries).Tokens)
			res["t1000_snippets"] = float64(bd.Part(assemble.PartSnippets).Tokens)
			res["t1000_recent"] = float64(bd.Part(assemble.PartRecent).Tokens)
		}
		_, last := out.state()
		full += 4 + r.counter.Count(name+": "+in.Text) + 4 + r.counter.Count(last.Text)
		// The summary trigger, run synchronously so the figures are
		// deterministic.
		st, err := r.store.Status(ctx, key)
		if err != nil {
			b.Fatal(err)
		}
		if summary.Due(st, r.cfg.Memory.Threshold) {
			if _, err := r.summarizer.Run(ctx, key); err != nil && !errors.Is(err, summary.ErrNothingToSummarize) {
				b.Fatalf("summary after turn %d: %v", t, err)
			}
		}
	}
	res["max_prompt"] = float64(maxPrompt)
	res["summary_calls"] = float64(fake.sums.Load())
	return res
}
