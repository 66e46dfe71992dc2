package chat

import (
	"context"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// Intake makes an incoming message durable before the adapter acknowledges
// it to its platform (Telegram's getUpdates offset, a webhook's 200), so an
// update that reached the bot survives a crash. Only what the chat would
// store anyway is stored: messages from allowed users, addressed to the bot,
// that are not commands.
type Intake struct {
	Store interface {
		Append(ctx context.Context, msgs ...memory.Message) error
	}
	Allowed func(userID string) bool
	Counter llm.Counter
}

// Accept stores in (idempotently) when it will be answered by the LLM.
func (i *Intake) Accept(ctx context.Context, in pipeline.Inbound) error {
	if in.MessageID == "" || in.Text == "" || in.IsCommand() || in.Choice != "" || !in.Addressed() {
		return nil
	}
	if i.Allowed != nil && !i.Allowed(in.UserID()) {
		return nil
	}
	return i.Store.Append(ctx, UserMessage(in, i.Counter))
}

// UserMessage is how an inbound message is stored.
func UserMessage(in pipeline.Inbound, c llm.Counter) memory.Message {
	m := memory.Message{
		Key: in.Key, Role: memory.RoleUser, SenderID: in.SenderID, SenderName: in.SenderName,
		PlatformID: in.MessageID, Text: in.Text, Time: in.Time,
	}
	if c != nil {
		m.Tokens = c.Count(in.Text)
	}
	return m
}

// Pending lists messages of a channel that were accepted but never answered
// (the bot stopped first), as inbound messages to run again. Messages older
// than window are left alone (they are in the history; answering them late
// would surprise the user).
func Pending(ctx context.Context, store interface {
	Unanswered(ctx context.Context, channel string, since time.Time) ([]memory.Message, error)
}, channel string, window time.Duration) ([]pipeline.Inbound, error) {
	msgs, err := store.Unanswered(ctx, channel, time.Now().Add(-window))
	if err != nil {
		return nil, err
	}
	out := make([]pipeline.Inbound, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, pipeline.Inbound{
			Key: m.Key, SenderID: m.SenderID, SenderName: m.SenderName, MessageID: m.PlatformID,
			Text: m.Text, Time: m.Time, IsGroup: false, MentionsBot: true,
		})
	}
	return out, nil
}
