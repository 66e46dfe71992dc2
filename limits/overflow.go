package limits

import (
	"context"

	"github.com/recallbot/recall/pipeline"
)

// QueueFullText is what a user reads when they sent more messages at once
// than their conversation's queue holds (pipeline.DefaultMaxQueue).
const QueueFullText = "You sent too many messages at once: I'm still working through the earlier ones. " +
	"I skipped this one and the others that arrive before I catch up; please send them again once I've answered."

// Overflow is the dispatcher's Refuser (pipeline.WithRefuser): a message
// past its conversation's queue is refused like a message over a limit —
// the user is told with QueueFullText once per burst, and the copy a
// channel stored on arrival is removed, so it is neither in the history nor
// left unanswered for a restart to find.
func Overflow(opts Options) pipeline.Refuser {
	opts = opts.withDefaults()
	return func(ctx context.Context, t *pipeline.Turn, first bool) error {
		return opts.refuse(ctx, t, "queue", QueueFullText, first)
	}
}
