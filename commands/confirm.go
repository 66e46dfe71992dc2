package commands

import (
	"context"

	"github.com/recallbot/recall/pipeline"
)

// Confirm asks the turn's sender a yes/no question (buttons where the
// platform has them, numbered answers otherwise), as a pending question of
// the conversation like /purge's: only the sender answers it, a command or
// cancel abandons it, and it expires after Options.FlowTTL. On yes, yes runs
// and its text is the reply; on no, noText is.
func (c *Commands) Confirm(ctx context.Context, t *pipeline.Turn, question, yesLabel, noText string,
	yes func(ctx context.Context) (string, error)) error {
	choices := []pipeline.Choice{{Label: yesLabel, Data: "yes"}, {Label: "No", Data: "no"}}
	call := &Call{Commands: c, Turn: t, Key: t.In.Key}
	call.startFlow(ctx, call.Key, askedConfirm, "", func(ctx context.Context, c *Call, answer string) error {
		ch, ok := pipeline.PickChoice(answer, choices)
		if isCancel(answer) || (ok && ch.Data == "no") {
			c.endFlow(ctx, c.Key)
			return c.Reply(ctx, noText)
		}
		if !ok {
			return c.Reply(ctx, "Please answer yes or no.")
		}
		c.endFlow(ctx, c.Key)
		text, err := yes(ctx)
		if err != nil {
			return err
		}
		return c.Reply(ctx, text)
	})
	return call.ask(ctx, question, choices)
}
