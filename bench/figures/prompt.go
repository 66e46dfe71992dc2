package figures

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/bench/chattext"
	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/summary"
)

// PromptTokens drives one conversation to turn turns with realistic lengths
// (user 25–35 words, assistant 70–90, summaries 90–110, from an instant fake
// model) and the real summarizer run synchronously whenever summary.Due
// holds (threshold 10, default policy), and reports the prompt sent to the
// model (llm.CountMessages, gpt-4o-mini's tokenizer) at turns 10, 100 and
// 1,000 ("t10_prompt", …) against what the whole history would cost at that
// turn ("t10_full", …: system prompt + every earlier message as the prompt
// renders it + the current message). "max_prompt" is the largest prompt of
// all turns, "last_summaries", "last_snippets", "last_recent" the parts of
// the last one, "summary_calls" the summaries made. The assembler's own
// count (Breakdown.Total) must stay within memory.budget.total: a prompt
// over it is an error.
func PromptTokens(ctx context.Context, turns int) (map[string]float64, error) {
	g := chattext.NewWords(41)
	people := []string{"Rui", "Helena", "Sofia"} // who Ana talks about
	var mu sync.Mutex
	var sent []llm.Message
	fake := &fakeModel{
		replies:   g.Pool(turns, 70, 90, people),
		summaries: g.Pool(64, 90, 110, people),
		onChat: func(msgs []llm.Message) {
			mu.Lock()
			sent = append(sent[:0], msgs...)
			mu.Unlock()
		},
	}
	asm := &timedAssembler{}
	key := pipeline.Key{Channel: "telegram", Chat: "515151"}
	dir, err := mkdirTemp("", "recall-prompt-")
	if err != nil {
		return nil, err
	}
	defer removeAll(dir)
	r, err := newRig(ctx, rigConfig{
		dir: dir, model: fake, threshold: 10, bgSummary: false, allowed: []string{"telegram:515151"},
		wrapAsm: func(a chat.Assembler) chat.Assembler { asm.Assembler = a; return asm },
	})
	if err != nil {
		return nil, err
	}
	defer r.close()
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
			Text: g.Text(g.Between(25, 35), people),
		}
		if err := r.handler.Handle(ctx, &pipeline.Turn{In: in, Out: &out}); err != nil {
			return nil, fmt.Errorf("turn %d: %w", t, err)
		}
		if n, last := out.state(); n != t || last.Plain || last.ReplyTo != in.MessageID {
			return nil, fmt.Errorf("turn %d: %d messages sent, last %+v; want one reply per turn", t, n, last)
		}
		mu.Lock()
		prompt := llm.CountMessages(r.counter, sent)
		mu.Unlock()
		bd := asm.lastPrompt().Breakdown
		if bd.Total > budget {
			return nil, fmt.Errorf("turn %d: the assembled prompt has %d tokens, over the budget of %d", t, bd.Total, budget)
		}
		maxPrompt = max(maxPrompt, prompt)
		current := 4 + r.counter.Count(in.Text)
		switch t {
		case 10, 100, 1000:
			res["t"+strconv.Itoa(t)+"_prompt"] = float64(prompt)
			res["t"+strconv.Itoa(t)+"_full"] = float64(full + current)
		}
		if t == turns {
			res["last_summaries"] = float64(bd.Part(assemble.PartSummaries).Tokens)
			res["last_snippets"] = float64(bd.Part(assemble.PartSnippets).Tokens)
			res["last_recent"] = float64(bd.Part(assemble.PartRecent).Tokens)
		}
		_, last := out.state()
		full += 4 + r.counter.Count(name+": "+in.Text) + 4 + r.counter.Count(last.Text)
		// The summary trigger, run synchronously so the figures are
		// deterministic.
		st, err := r.store.Status(ctx, key)
		if err != nil {
			return nil, err
		}
		if summary.Due(st, r.cfg.Memory.Threshold) {
			if _, err := r.summarizer.Run(ctx, key); err != nil && !errors.Is(err, summary.ErrNothingToSummarize) {
				return nil, fmt.Errorf("summary after turn %d: %w", t, err)
			}
		}
	}
	res["max_prompt"] = float64(maxPrompt)
	res["summary_calls"] = float64(fake.sums.Load())
	return res, nil
}
