package limits

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// Discarder removes a refused message that a channel stored on arrival
// (memory.Store.Discard). ctx bounds the write.
type Discarder interface {
	Discard(ctx context.Context, key pipeline.Key, platformID string) (bool, error)
}

// Options are what both stages share.
type Options struct {
	// Exempt reports the users no limit applies to: the admins
	// (access.List.IsAdmin, which includes the terminal user). nil: none.
	Exempt func(userID string) bool
	// Discard removes the stored copy of a refused message. nil: a refused
	// message a channel stored on arrival stays in the history, unanswered.
	Discard Discarder
	// TurnEstimate is the tokens a turn is assumed to cost while it runs
	// (Quota): its prompt budget plus its longest answer. 0: DefaultTurnEstimate.
	TurnEstimate int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Log receives a line per refusal; nil: the turn's logger.
	Log *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

func (o Options) exempt(user string) bool { return o.Exempt != nil && o.Exempt(user) }

// discardTimeout bounds removing a refused message from the store.
const discardTimeout = 5 * time.Second

// refuse ends a turn over a limit: tells the user (when tell), and removes
// the copy a channel may have stored on arrival.
func (o Options) refuse(ctx context.Context, t *pipeline.Turn, limit, text string, tell bool) error {
	in := t.In
	log := o.Log
	if log == nil {
		log = t.Logger()
	}
	log.Info("message refused: over a limit", "limit", limit, "user", in.UserID(), "key", in.Key, "told", tell)
	var err error
	if tell {
		_, err = t.Out.Send(ctx, pipeline.Outbound{Key: in.Key, Text: text, Plain: true, ReplyTo: in.MessageID})
		if err != nil {
			err = fmt.Errorf("telling %s they are over the %s limit: %w", in.UserID(), limit, err)
		}
	}
	// What chat.Intake stores: a platform message that would reach the LLM.
	if o.Discard != nil && in.MessageID != "" && !in.IsCommand() && in.Choice == "" {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), discardTimeout)
		if _, derr := o.Discard.Discard(dctx, in.Key, in.MessageID); derr != nil {
			log.Warn("removing a refused message from the history", "key", in.Key, "msg_id", in.MessageID, "err", derr)
		}
		cancel()
	}
	return err
}

// counts reports whether a turn is a message for the bot: limits apply to
// those only (group chatter and empty updates go on untouched; the later
// stages ignore them).
func counts(in pipeline.Inbound) bool {
	return in.Addressed() && (strings.TrimSpace(in.Text) != "" || in.Choice != "")
}

// thousands writes n with a comma every three digits: 50000 → "50,000".
func thousands(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// plural writes "1 second", "35 seconds".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
