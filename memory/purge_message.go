package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/recallbot/recall/pipeline"
)

// PurgeMessage removes one message — a user's platform message platformID
// in the conversation key, sent by senderID ("" for any sender) — and the
// bot's reply to it (which may repeat it) as a purge does: their text
// leaves the messages, the search index and every summary built from them
// (the clean messages of such a summary's chunks come back into play, to
// be summarized anew). It is how a message the user deleted for everyone
// leaves the bot's memory. A message that is not stored, or that another
// sender wrote, is left alone (zero report).
func (s *Store) PurgeMessage(ctx context.Context, key pipeline.Key, platformID, senderID string) (PurgeReport, error) {
	var rep PurgeReport
	if platformID == "" {
		return rep, nil
	}
	err := s.do(ctx, key.Owner(), func(ctx context.Context, b Backend) error {
		var err error
		switch b := b.(type) {
		case *SQLite:
			rep, err = b.purgeMessage(ctx, key, platformID, senderID)
		case *JSON:
			rep, err = b.purgeMessage(ctx, key, platformID, senderID)
		case *Postgres:
			rep, err = b.purgeMessage(ctx, key, platformID, senderID)
		default:
			err = fmt.Errorf("purging one message: backend %T", b)
		}
		return err
	})
	if err != nil {
		return rep, fmt.Errorf("purging message %s of %s: %w", platformID, key, err)
	}
	if rep.Messages > 0 {
		if err := s.sqlite.Checkpoint(ctx); err != nil {
			s.log.Warn("checkpoint after purge", "err", err)
		}
		s.log.Info("purged one message", "conversation", key.String(), "platform_id", platformID, "summaries", rep.Summaries)
	}
	return rep, nil
}

func (s *SQLite) purgeMessage(ctx context.Context, key pipeline.Key, platformID, senderID string) (PurgeReport, error) {
	var rep PurgeReport
	err := s.tx(ctx, func(tx *sql.Tx) error {
		rep = PurgeReport{}
		var conv, id, chunk int64
		var sender string
		err := tx.QueryRowContext(ctx, `SELECT m.conv, m.id, m.chunk_id, m.sender_id FROM messages m JOIN conversations c ON c.id = m.conv
			WHERE c.key = ? AND m.platform_id = ?`, key.String(), platformID).Scan(&conv, &id, &chunk, &sender)
		if errors.Is(err, sql.ErrNoRows) || err == nil && senderID != "" && sender != senderID {
			return nil
		}
		if err != nil {
			return err
		}
		chunks := []int64{chunk}
		rows, err := tx.QueryContext(ctx, `SELECT chunk_id FROM messages WHERE conv = ? AND reply_to = ? AND role = ?`, conv, platformID, string(RoleAssistant))
		if err != nil {
			return err
		}
		for rows.Next() {
			var c int64
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return err
			}
			chunks = append(chunks, c)
		}
		rows.Close()
		res, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE id = ? OR conv = ? AND reply_to = ? AND role = ?`, id, conv, platformID, string(RoleAssistant))
		if err != nil {
			return err
		}
		rep.Messages, _ = res.RowsAffected()
		sums, err := loadSummaries(ctx, tx, conv, key, false)
		if err != nil {
			return err
		}
		plan := planChunks(sums, chunks)
		if len(plan.deleteSummaries) > 0 {
			res, err := tx.ExecContext(ctx, `DELETE FROM summaries WHERE conv = ? AND id IN (SELECT value FROM json_each(?))`, conv, jsonIDs(plan.deleteSummaries))
			if err != nil {
				return err
			}
			rep.Summaries, _ = res.RowsAffected()
		}
		if len(plan.reactivateSummaries) > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE summaries SET is_active = 1 WHERE conv = ? AND id IN (SELECT value FROM json_each(?))`, conv, jsonIDs(plan.reactivateSummaries)); err != nil {
				return err
			}
		}
		if len(plan.reactivateChunks) > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE messages SET is_active = 1, chunk_id = 0 WHERE conv = ? AND chunk_id IN (SELECT value FROM json_each(?))`, conv, jsonIDs(plan.reactivateChunks)); err != nil {
				return err
			}
		}
		return nil
	})
	return rep, err
}

// purgeMessage on PostgreSQL: the rules of SQLite.purgeMessage. Deleting
// the messages deletes their search postings (ON DELETE CASCADE), whose
// trigger takes their stems' counts from term_stats and drops a stem no
// message holds any more; the messages trigger takes them from the
// conversation's search totals. Nothing of the text stays in a table.
func (p *Postgres) purgeMessage(ctx context.Context, key pipeline.Key, platformID, senderID string) (PurgeReport, error) {
	var rep PurgeReport
	err := p.tx(ctx, func(tx pgx.Tx) error {
		rep = PurgeReport{}
		var conv, id, chunk int64
		var sender string
		err := tx.QueryRow(ctx, `SELECT m.conv, m.id, m.chunk_id, m.sender_id FROM messages m JOIN conversations c ON c.id = m.conv
			WHERE c.key = $1 AND m.platform_id = $2 FOR UPDATE OF m`, key.String(), platformID).Scan(&conv, &id, &chunk, &sender)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && senderID != "" && sender != senderID {
			return nil
		}
		if err != nil {
			return err
		}
		var chunks []int64
		rows, err := tx.Query(ctx, `DELETE FROM messages WHERE id = $1 OR conv = $2 AND reply_to = $3 AND role = $4 RETURNING chunk_id`,
			id, conv, platformID, string(RoleAssistant))
		if err != nil {
			return err
		}
		for rows.Next() {
			var c int64
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return err
			}
			chunks = append(chunks, c)
			rep.Messages++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		sums, err := pgLoadSummaries(ctx, tx, conv, key, false)
		if err != nil {
			return err
		}
		rep.Summaries, err = pgApplyPlan(ctx, tx, conv, planChunks(sums, chunks))
		return err
	})
	return rep, err
}

func (j *JSON) purgeMessage(ctx context.Context, key pipeline.Key, platformID, senderID string) (PurgeReport, error) {
	var rep PurgeReport
	err := j.update(ctx, key.Owner(), func(f *jsonFile) (bool, error) {
		rep = PurgeReport{}
		for ci := range f.Data.Conversations {
			c := &f.Data.Conversations[ci]
			if c.Key != key.String() {
				continue
			}
			at := -1
			for i, m := range c.Messages {
				if m.PlatformID == platformID && (senderID == "" || m.SenderID == senderID) {
					at = i
					break
				}
			}
			if at < 0 {
				return false, nil
			}
			var chunks []int64
			var msgs []Message
			for i, m := range c.Messages {
				if i == at || m.Role == RoleAssistant && m.ReplyTo == platformID {
					chunks = append(chunks, m.ChunkID)
					rep.Messages++
					continue
				}
				msgs = append(msgs, m)
			}
			c.Messages = msgs
			plan := planChunks(c.Summaries, chunks)
			var gone int64
			c.Messages, c.Summaries, gone = plan.applyTo(c.Messages, c.Summaries)
			rep.Summaries += gone
			return true, nil
		}
		return false, nil
	})
	return rep, err
}
