package memory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallbot/recall/pipeline"
)

// States of a reply in the shared delivery journal (table outbox).
const (
	OutboxOpen    = "open"    // recorded, not handed to the platform
	OutboxSending = "sending" // being handed to the platform
	OutboxFailed  = "failed"  // the platform did not take it yet
)

// OutboxEntry is one reply being delivered, as the shared journal keeps it.
type OutboxEntry struct {
	Key     pipeline.Key
	ReplyTo string // the platform id of the message it answers
	Text    string
	HasText bool   // the reply is recorded (else only Shown is known)
	Shown   string // the message showing a streamed reply, "" for none
	State   string
	At      time.Time
}

const (
	sqlOutboxReply = `INSERT INTO outbox(conv_key, reply_to, channel, text, state, at) VALUES ($1, $2, $3, $4, 'open', $5)
ON CONFLICT (conv_key, reply_to) DO UPDATE SET text = EXCLUDED.text, state = 'open', at = EXCLUDED.at`
	sqlOutboxShown = `INSERT INTO outbox(conv_key, reply_to, channel, shown, state, at) VALUES ($1, $2, $3, $4, 'open', $5)
ON CONFLICT (conv_key, reply_to) DO UPDATE SET shown = EXCLUDED.shown`
	sqlOutboxState = `UPDATE outbox SET state = $3 WHERE conv_key = $1 AND reply_to = $2`
	sqlOutboxDone  = `DELETE FROM outbox WHERE conv_key = $1 AND reply_to = $2`
	sqlOutboxEntry = `SELECT text, shown, state, at FROM outbox WHERE conv_key = $1 AND reply_to = $2`
	sqlOutboxClaim = `UPDATE outbox o SET state = 'sending'
WHERE (o.conv_key, o.reply_to) = (
	SELECT conv_key, reply_to FROM outbox WHERE channel = $1 AND state = 'failed' AND text IS NOT NULL
	ORDER BY at LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING o.conv_key, o.reply_to, o.text, o.shown, o.at`
)

// OutboxReply records a reply about to be stored.
func (p *Postgres) OutboxReply(ctx context.Context, key pipeline.Key, replyTo, text string, at time.Time) error {
	_, err := p.pool.Exec(ctx, sqlOutboxReply, key.String(), replyTo, key.Channel, pgText(text), at)
	return wrapOutbox(err, "recording a reply", key)
}

// OutboxShown records the message showing a streamed reply.
func (p *Postgres) OutboxShown(ctx context.Context, key pipeline.Key, replyTo, id string, at time.Time) error {
	_, err := p.pool.Exec(ctx, sqlOutboxShown, key.String(), replyTo, key.Channel, id, at)
	return wrapOutbox(err, "recording a streamed reply", key)
}

// OutboxState sets the state of a reply in the journal.
func (p *Postgres) OutboxState(ctx context.Context, key pipeline.Key, replyTo, state string) error {
	_, err := p.pool.Exec(ctx, sqlOutboxState, key.String(), replyTo, state)
	return wrapOutbox(err, "recording a reply's delivery", key)
}

// OutboxDone removes a reply the platform answered for.
func (p *Postgres) OutboxDone(ctx context.Context, key pipeline.Key, replyTo string) error {
	_, err := p.pool.Exec(ctx, sqlOutboxDone, key.String(), replyTo)
	return wrapOutbox(err, "recording a delivered reply", key)
}

// OutboxEntry returns the journal's entry for the reply to replyTo.
func (p *Postgres) OutboxEntry(ctx context.Context, key pipeline.Key, replyTo string) (OutboxEntry, bool, error) {
	e := OutboxEntry{Key: key, ReplyTo: replyTo}
	var text *string
	err := p.pool.QueryRow(ctx, sqlOutboxEntry, key.String(), replyTo).Scan(&text, &e.Shown, &e.State, &e.At)
	if errors.Is(err, pgx.ErrNoRows) {
		return e, false, nil
	}
	if err != nil {
		return e, false, wrapOutbox(err, "reading the delivery journal", key)
	}
	if text != nil {
		e.Text, e.HasText = *text, true
	}
	return e, true, nil
}

// OutboxClaimFailed takes the oldest reply of channel the platform did not
// take, marking it sending so no other replica sends it too; ok is false
// when there is none.
func (p *Postgres) OutboxClaimFailed(ctx context.Context, channel string) (OutboxEntry, bool, error) {
	var (
		e   OutboxEntry
		key string
	)
	err := p.pool.QueryRow(ctx, sqlOutboxClaim, channel).Scan(&key, &e.ReplyTo, &e.Text, &e.Shown, &e.At)
	if errors.Is(err, pgx.ErrNoRows) {
		return e, false, nil
	}
	if err != nil {
		return e, false, fmt.Errorf("claiming a reply to send again: %w", err)
	}
	if e.Key, err = pipeline.ParseKey(key); err != nil {
		return e, false, fmt.Errorf("claiming a reply to send again: %w", err)
	}
	e.HasText, e.State = true, OutboxSending
	return e, true, nil
}

// OutboxForget drops the open replies of the conversations a purge removed:
// scope.Key's, or every one of scope.Owner's.
func (p *Postgres) OutboxForget(ctx context.Context, scope PurgeScope) error {
	rows, err := p.pool.Query(ctx, `SELECT DISTINCT conv_key FROM outbox`)
	if err != nil {
		return fmt.Errorf("forgetting undelivered replies: %w", err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return fmt.Errorf("forgetting undelivered replies: %w", err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("forgetting undelivered replies: %w", err)
	}
	var drop []string
	for _, s := range keys {
		k, err := pipeline.ParseKey(s)
		if err != nil || k.Owner() != scope.Owner || (scope.Key != (pipeline.Key{}) && k != scope.Key) {
			continue
		}
		drop = append(drop, s)
	}
	if len(drop) == 0 {
		return nil
	}
	if _, err := p.pool.Exec(ctx, `DELETE FROM outbox WHERE conv_key = ANY($1)`, drop); err != nil {
		return fmt.Errorf("forgetting undelivered replies: %w", err)
	}
	return nil
}

// OutboxSweep deletes the replies left open or being sent since before
// before: their turn was given up, or the replica retrying them died. (A
// reply the platform did not take stays until it is sent.)
func (p *Postgres) OutboxSweep(ctx context.Context, before time.Time) error {
	if _, err := p.pool.Exec(ctx, `DELETE FROM outbox WHERE at < $1 AND state <> 'failed'`, before); err != nil {
		return fmt.Errorf("deleting stale replies from the delivery journal: %w", err)
	}
	return nil
}

func wrapOutbox(err error, what string, key pipeline.Key) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s of %s in the delivery journal: %w", what, key, err)
}
