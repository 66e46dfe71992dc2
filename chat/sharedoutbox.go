package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// OutboxDB is the delivery journal's table in the database shared by the
// replicas (memory.Postgres).
type OutboxDB interface {
	OutboxReply(ctx context.Context, key pipeline.Key, replyTo, text string, at time.Time) error
	OutboxShown(ctx context.Context, key pipeline.Key, replyTo, id string, at time.Time) error
	OutboxState(ctx context.Context, key pipeline.Key, replyTo, state string) error
	OutboxDone(ctx context.Context, key pipeline.Key, replyTo string) error
	OutboxEntry(ctx context.Context, key pipeline.Key, replyTo string) (memory.OutboxEntry, bool, error)
	OutboxClaimFailed(ctx context.Context, channel string) (memory.OutboxEntry, bool, error)
	OutboxForget(ctx context.Context, scope memory.PurgeScope) error
	OutboxSweep(ctx context.Context, before time.Time) error
}

// staleReply is how old a reply left open or being sent is before the
// journal drops it (its turn was given up, or its sender died).
const staleReply = 24 * time.Hour

// journalTimeout bounds one record of the shared journal.
const journalTimeout = 10 * time.Second

// SharedOutbox is the delivery journal of replicas on PostgreSQL: the
// records of Outbox (reply, shown, sending, failed, done), kept in the
// database instead of a file on one replica's disk. A turn a dead replica
// left is taken over by another (turnqueue); Resume then finishes what the
// journal says was under way — sends a reply that was stored but never
// handed over, tells the user when it was being handed over (it may have
// arrived), replaces a cut stream with a note — exactly as Outbox does at a
// restart. RunRetries on any replica sends again what a platform did not
// take. A delivered reply's row is deleted: no text stays behind.
type SharedOutbox struct {
	db   OutboxDB
	log  *slog.Logger
	base context.Context // parent of the records' contexts; Close cancels it
	stop context.CancelFunc

	retryBase, retryMax time.Duration
}

var _ Journal = (*SharedOutbox)(nil)

// NewSharedOutbox returns the journal in db. Close releases it.
func NewSharedOutbox(db OutboxDB, log *slog.Logger) *SharedOutbox {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base, stop := context.WithCancel(context.Background())
	return &SharedOutbox{db: db, log: log, base: base, stop: stop, retryBase: 5 * time.Second, retryMax: 2 * time.Minute}
}

// Close cancels the records being written.
func (o *SharedOutbox) Close() error {
	o.stop()
	return nil
}

func (o *SharedOutbox) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(o.base, journalTimeout)
}

// Reply records a reply about to be stored.
func (o *SharedOutbox) Reply(key pipeline.Key, replyTo, text string) error {
	ctx, cancel := o.ctx()
	defer cancel()
	return o.db.OutboxReply(ctx, key, replyTo, text, time.Now())
}

// Shown records the message that shows a reply while it is streamed.
func (o *SharedOutbox) Shown(key pipeline.Key, replyTo, id string) error {
	ctx, cancel := o.ctx()
	defer cancel()
	return o.db.OutboxShown(ctx, key, replyTo, id, time.Now())
}

// Sending records that the reply is being handed to the platform.
func (o *SharedOutbox) Sending(key pipeline.Key, replyTo string) error {
	ctx, cancel := o.ctx()
	defer cancel()
	return o.db.OutboxState(ctx, key, replyTo, memory.OutboxSending)
}

// Failed records that the platform did not take the reply yet.
func (o *SharedOutbox) Failed(key pipeline.Key, replyTo string) error {
	ctx, cancel := o.ctx()
	defer cancel()
	return o.db.OutboxState(ctx, key, replyTo, memory.OutboxFailed)
}

// Done records that the platform answered.
func (o *SharedOutbox) Done(key pipeline.Key, replyTo string) error {
	ctx, cancel := o.ctx()
	defer cancel()
	return o.db.OutboxDone(ctx, key, replyTo)
}

// Forget drops the open replies of the conversations a purge removed.
func (o *SharedOutbox) Forget(scope memory.PurgeScope) error {
	ctx, cancel := o.ctx()
	defer cancel()
	return o.db.OutboxForget(ctx, scope)
}

// Resume finishes the delivery of a turn another replica left unfinished
// (it died, or was stopped mid-turn), before the turn is run again.
// finished reports that the turn needs nothing more: its stored reply was
// sent now, or the user was told it may have arrived already. Otherwise the
// turn runs (and the dedupe stage decides). A message left showing part of
// a streamed reply is replaced by a note either way.
func (o *SharedOutbox) Resume(ctx context.Context, seen pipeline.Seen, t *pipeline.Turn) (finished bool, err error) {
	in := t.In
	if in.MessageID == "" {
		return false, nil
	}
	e, ok, err := o.db.OutboxEntry(ctx, in.Key, in.MessageID)
	if err != nil || !ok {
		return false, err
	}
	log := t.Logger()
	if e.State == memory.OutboxSending {
		// The other replica died while handing the reply over: sending
		// it again could show it twice. The user is told instead.
		log.Warn("a replica stopped while sending a reply: it may not have been delivered; it is not sent again (it could show twice), the user is told",
			"reply_to", in.MessageID)
		o.cut(ctx, t, e, CutReplyFollows)
		if _, err := t.Out.Send(ctx, pipeline.Outbound{Key: in.Key, Text: MaybeLostReply, Plain: true, ReplyTo: in.MessageID}); err != nil {
			return false, fmt.Errorf("telling the user a reply may be lost: %w", err)
		}
		return true, o.Done(in.Key, in.MessageID)
	}
	answered := false
	if e.HasText {
		if _, answered, err = seen.Lookup(ctx, in.Key, in.MessageID); err != nil {
			return false, fmt.Errorf("looking up a stored reply: %w", err)
		}
	}
	o.cut(ctx, t, e, CutReplyFollows) // the reply follows, or the message is answered again
	if !answered {
		// Not stored: the turn runs again.
		return false, o.Done(in.Key, in.MessageID)
	}
	log.Info("sending the reply a replica stored but never sent", "reply_to", in.MessageID)
	if err := o.Sending(in.Key, in.MessageID); err != nil {
		log.Warn("recording a reply being sent", "err", err)
	}
	_, serr := t.Out.Send(ctx, pipeline.Outbound{Key: in.Key, Text: e.Text, ReplyTo: in.MessageID})
	switch {
	case serr != nil && ctx.Err() != nil:
		return false, ctx.Err()
	case errors.Is(serr, pipeline.ErrNotDelivered):
		_ = o.Failed(in.Key, in.MessageID) // RunRetries sends it
		return true, nil
	}
	if serr != nil {
		log.Warn("sending a reply a replica left unsent failed", "reply_to", in.MessageID, "err", serr)
	}
	return true, o.Done(in.Key, in.MessageID)
}

// cut replaces the part of a streamed reply e left showing with note.
func (o *SharedOutbox) cut(ctx context.Context, t *pipeline.Turn, e memory.OutboxEntry, note string) {
	ed, ok := t.Out.(pipeline.Editor)
	if e.Shown == "" || !ok {
		return
	}
	if err := ed.Edit(ctx, t.In.Key, e.Shown, note); err != nil && ctx.Err() == nil {
		t.Logger().Warn("replacing the part of a reply shown before the replica stopped", "message", e.Shown, "err", err)
	}
}

// SetRetryBackoff sets RunRetries' first pause and its longest (5 s and 2
// minutes by default); for tests.
func (o *SharedOutbox) SetRetryBackoff(first, longest time.Duration) {
	o.retryBase, o.retryMax = first, longest
}

// RunRetries sends again, until ctx ends, the replies of channel the
// platform did not take (on any replica), oldest first: every pause (5 s,
// growing to 2 minutes while the platform keeps refusing). A reply is
// claimed before it is sent, so one replica sends it. Hourly it drops the
// replies left open for a day (given up). It returns nil when ctx ends.
func (o *SharedOutbox) RunRetries(ctx context.Context, channel string, out pipeline.Sender) error {
	attempt := 0
	var swept time.Time
	for {
		if time.Since(swept) > time.Hour {
			swept = time.Now()
			if err := o.db.OutboxSweep(ctx, swept.Add(-staleReply)); err != nil && ctx.Err() == nil {
				o.log.Warn("the delivery journal", "err", err)
			}
		}
		t := time.NewTimer(min(o.retryBase<<min(attempt, 10), o.retryMax))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		if o.retry(ctx, channel, out) {
			attempt++
		} else {
			attempt = 0
		}
	}
}

// retry sends the failed replies of channel until none is left or one
// fails again (reported true).
func (o *SharedOutbox) retry(ctx context.Context, channel string, out pipeline.Sender) (failing bool) {
	for ctx.Err() == nil {
		e, ok, err := o.db.OutboxClaimFailed(ctx, channel)
		if err != nil {
			if ctx.Err() == nil {
				o.log.Warn("the delivery journal", "err", err)
			}
			return true
		}
		if !ok {
			return false
		}
		_, serr := out.Send(ctx, pipeline.Outbound{Key: e.Key, Text: e.Text, ReplyTo: e.ReplyTo})
		switch {
		case serr == nil:
			_ = o.Done(e.Key, e.ReplyTo)
			o.log.Info("sent a reply whose first send failed", "key", e.Key, "reply_to", e.ReplyTo)
		case ctx.Err() != nil:
			_ = o.Failed(e.Key, e.ReplyTo)
			return false
		case errors.Is(serr, pipeline.ErrNotDelivered):
			_ = o.Failed(e.Key, e.ReplyTo)
			o.log.Warn("sending a reply again failed; it stays pending", "key", e.Key, "reply_to", e.ReplyTo, "err", serr)
			return true
		default:
			_ = o.Done(e.Key, e.ReplyTo)
			o.log.Error("a reply could not be sent and is given up", "key", e.Key, "reply_to", e.ReplyTo, "err", serr)
		}
	}
	return false
}
