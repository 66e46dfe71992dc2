package chat

import (
	"context"
	"time"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/pipeline"
)

// Usage hears what each answer cost, per user: limits.Quota counts it
// against the daily token quota (Options.Usage).
type Usage interface {
	// Add adds tokens to what the user (Inbound.UserID) used today. An error
	// is logged; the answer goes out anyway.
	Add(ctx context.Context, userID string, tokens int) error
}

// usageTimeout bounds recording an answer's tokens. The tokens were spent
// whatever happens to the turn, so a cancelled turn still records them.
const usageTimeout = 5 * time.Second

// recordUsage tells Options.Usage what the answer cost: the prompt and completion
// tokens the server reported or, when it reported none (some local
// servers), the assembled prompt and the reply as counted here.
func (r *Responder) recordUsage(ctx context.Context, t *pipeline.Turn, prompt assemble.Prompt, reply llm.Reply) {
	if r.opts.Usage == nil {
		return
	}
	tokens := reply.PromptTokens + reply.CompletionTokens
	if tokens == 0 {
		tokens = prompt.Breakdown.Total
		if r.counter != nil {
			tokens += r.counter.Count(reply.Text)
		}
	}
	user := t.In.UserID()
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), usageTimeout)
	defer cancel()
	if err := r.opts.Usage.Add(uctx, user, tokens); err != nil {
		t.Logger().Warn("recording token usage", "user", user, "tokens", tokens, "err", err)
	}
}
