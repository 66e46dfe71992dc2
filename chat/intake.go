package chat

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// Intake makes an incoming message durable before the adapter acknowledges
// it to its platform (Telegram's getUpdates offset, a webhook's 200), so an
// update that reached the bot survives a crash. Only what the chat would
// store anyway is stored: messages from allowed users, addressed to the bot,
// that are not commands nor answers to a question.
//
// While storage fails (read-only or full disk) the channel is not held up:
// the message waits in the write queue, lands once storage recovers, and is
// answered meanwhile — as durable as every other write of the outage.
type Intake struct {
	Store interface {
		Append(ctx context.Context, msgs ...memory.Message) error
		Enqueue(msgs ...memory.Message) error
		WriteStats() memory.WriteStats
	}
	Allowed func(userID string) bool
	// Asking reports whether a question waits for its answer in a
	// conversation (commands.Commands.Asking): the next message there is
	// likely that answer, which is the command's and not stored. nil: none.
	Asking  func(key pipeline.Key) bool
	Counter llm.Counter
	// Wait is how long Accept waits for the message to be committed before
	// it looks whether storage is failing (default 2s).
	Wait time.Duration
}

// Accept stores in (idempotently) when it will be answered by the LLM.
func (i *Intake) Accept(ctx context.Context, in pipeline.Inbound) error {
	if !i.keeps(in) {
		return nil
	}
	if i.Asking != nil && i.Asking(in.Key) {
		// An answer to a question ("1", "yes"). Should it turn out to be
		// a message for the LLM (the question expired meanwhile), the
		// responder stores it as it does every message.
		return nil
	}
	m := UserMessage(in, i.Counter)
	if i.Store.WriteStats().Failing != nil {
		return i.Store.Enqueue(m) // fails only when the queue is full
	}
	wait := i.Wait
	if wait <= 0 {
		wait = 2 * time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	err := i.Store.Append(wctx, m)
	if err != nil && ctx.Err() == nil && wctx.Err() != nil && i.Store.WriteStats().Failing != nil {
		return nil // storage started failing: the message stays queued
	}
	return err
}

// AcceptStored is Accept for a platform that delivers again what it was
// not told arrived (WhatsApp): while storage fails it refuses the message
// (ErrStorageFailing) instead of holding it only in memory, so the
// platform keeps it and a crash meanwhile loses nothing.
func (i *Intake) AcceptStored(ctx context.Context, in pipeline.Inbound) error {
	if !i.keeps(in) {
		return nil
	}
	if err := i.Store.WriteStats().Failing; err != nil {
		return fmt.Errorf("%w: %w", ErrStorageFailing, err)
	}
	wait := i.Wait
	if wait <= 0 {
		wait = 2 * time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := i.Store.Append(wctx, UserMessage(in, i.Counter)); err != nil {
		// Left in the write queue too: the redelivery is stored once.
		return fmt.Errorf("%w: %w", ErrStorageFailing, err)
	}
	return nil
}

// keeps reports whether in is stored at intake: from an allowed user,
// addressed to the bot, answered by the LLM.
func (i *Intake) keeps(in pipeline.Inbound) bool {
	if in.MessageID == "" || in.Text == "" || in.IsCommand() || in.Choice != "" || !in.Addressed() {
		return false
	}
	return i.Allowed == nil || i.Allowed(in.UserID())
}

// ErrStorageFailing is AcceptStored's refusal while storage fails.
var ErrStorageFailing = errors.New("storage is failing; the message is left with the platform")

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
