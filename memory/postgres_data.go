package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallbot/recall/pipeline"
)

// Purge, export, import and the Store's maintenance writes on PostgreSQL,
// with the rules of sqlite_data.go (planPurge decides what happens to
// summaries).

func pgOwnerConvs(ctx context.Context, q pgQuerier, owner string, only *pipeline.Key) ([]convRow, error) {
	rows, err := q.Query(ctx, `SELECT id, key FROM conversations WHERE owner = $1 ORDER BY id`, owner)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []convRow
	for rows.Next() {
		var c convRow
		var k string
		if err := rows.Scan(&c.id, &k); err != nil {
			return nil, err
		}
		if c.key, err = pipeline.ParseKey(k); err != nil {
			return nil, err
		}
		if only == nil || *only == c.key {
			out = append(out, c)
		}
	}
	return out, rows.Err()
}

// pgApplyPlan applies a purge plan's summary changes to one conversation.
func pgApplyPlan(ctx context.Context, tx pgx.Tx, conv int64, plan purgePlan) (int64, error) {
	var deleted int64
	if len(plan.deleteSummaries) > 0 {
		tag, err := tx.Exec(ctx, `DELETE FROM summaries WHERE conv = $1 AND id = ANY($2)`, conv, plan.deleteSummaries)
		if err != nil {
			return 0, err
		}
		deleted = tag.RowsAffected()
	}
	if len(plan.reactivateSummaries) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE summaries SET is_active = true WHERE conv = $1 AND id = ANY($2)`, conv, plan.reactivateSummaries); err != nil {
			return 0, err
		}
	}
	if len(plan.reactivateChunks) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE messages SET is_active = true, chunk_id = 0 WHERE conv = $1 AND chunk_id = ANY($2)`, conv, plan.reactivateChunks); err != nil {
			return 0, err
		}
	}
	return deleted, nil
}

// Purge implements Backend. Deleting a message deletes its search terms
// (ON DELETE CASCADE): nothing of it stays in the index.
func (p *Postgres) Purge(ctx context.Context, scope PurgeScope) (PurgeReport, error) {
	var rep PurgeReport
	err := p.tx(ctx, func(tx pgx.Tx) error {
		rep = PurgeReport{}
		var err error
		rep, err = pgPurgeTx(ctx, tx, scope)
		return err
	})
	return rep, err
}

func pgPurgeTx(ctx context.Context, tx pgx.Tx, scope PurgeScope) (PurgeReport, error) {
	var rep PurgeReport
	if scope.Owner == "" {
		return rep, fmt.Errorf("purge: owner is required")
	}
	var only *pipeline.Key
	if !scope.Key.IsZero() {
		only = &scope.Key
	}
	convs, err := pgOwnerConvs(ctx, tx, scope.Owner, only)
	if err != nil {
		return rep, err
	}
	all := scope.OlderThan.IsZero()
	cutoff := scope.OlderThan.UnixMilli()
	for _, c := range convs {
		sums, err := pgLoadSummaries(ctx, tx, c.id, c.key, false)
		if err != nil {
			return rep, err
		}
		plan := planPurge(sums, all, scope.OlderThan)
		var q string
		args := []any{c.id}
		if all {
			q = `DELETE FROM messages WHERE conv = $1`
		} else {
			q = `DELETE FROM messages WHERE conv = $1 AND created_at < $2`
			args = append(args, cutoff)
		}
		tag, err := tx.Exec(ctx, q, args...)
		if err != nil {
			return rep, fmt.Errorf("purging messages of %s: %w", c.key, err)
		}
		rep.Messages += tag.RowsAffected()
		n, err := pgApplyPlan(ctx, tx, c.id, plan)
		if err != nil {
			return rep, err
		}
		rep.Summaries += n
		if all {
			if _, err := tx.Exec(ctx, `DELETE FROM conversations WHERE id = $1`, c.id); err != nil {
				return rep, err
			}
		}
	}
	var q string
	var args []any
	switch {
	case only != nil && all:
		q, args = `DELETE FROM facts WHERE owner = $1 AND conv_key = $2`, []any{scope.Owner, only.String()}
	case only != nil:
		q, args = `DELETE FROM facts WHERE owner = $1 AND conv_key = $2 AND created_at < $3`, []any{scope.Owner, only.String(), cutoff}
	case all:
		q, args = `DELETE FROM facts WHERE owner = $1`, []any{scope.Owner}
	default:
		q, args = `DELETE FROM facts WHERE owner = $1 AND created_at < $2`, []any{scope.Owner, cutoff}
	}
	tag, err := tx.Exec(ctx, q, args...)
	if err != nil {
		return rep, fmt.Errorf("purging facts: %w", err)
	}
	rep.Facts = tag.RowsAffected()
	if only == nil && all {
		tag, err := tx.Exec(ctx, `DELETE FROM memories WHERE owner = $1`, scope.Owner)
		if err != nil {
			return rep, err
		}
		rep.Memories = tag.RowsAffected()
		if _, err := tx.Exec(ctx, `DELETE FROM owners WHERE owner = $1`, scope.Owner); err != nil {
			return rep, err
		}
	}
	if err := pgScrubQueue(ctx, tx, scope); err != nil {
		return rep, err
	}
	return rep, nil
}

// The shared turn queue (package turnqueue, pgmigrations/0004_turn_queue.sql)
// keeps each update whole — its text, a /remember's note — for a while after
// its turn is done, to drop late redeliveries. A purge empties the inbound of
// the finished turns it covers and keeps the row (its conversation and
// platform id), so a redelivery is still dropped. Turns not yet done are left
// alone: they came after the purge (a conversation's turns run in order), the
// purge's own turn among them.
const (
	// $1 the conversation's key, $2 the cutoff in Unix ms (0: any age).
	sqlScrubQueueConv = `UPDATE turn_queue SET inbound = '{}'::jsonb
WHERE conv_key = $1 AND done_at IS NOT NULL AND inbound <> '{}'::jsonb
	AND ($2::bigint = 0 OR received_at < to_timestamp($2::bigint / 1000.0))`
	// $1 the owner followed by ":" (a prefix of its conversations' keys),
	// $2 as above.
	sqlScrubQueueOwner = `UPDATE turn_queue SET inbound = '{}'::jsonb
WHERE starts_with(conv_key, $1) AND done_at IS NOT NULL AND inbound <> '{}'::jsonb
	AND ($2::bigint = 0 OR received_at < to_timestamp($2::bigint / 1000.0))`
	// $1 the owner followed by ":", $2 the sender's platform id.
	sqlScrubQueueSender = `UPDATE turn_queue SET inbound = '{}'::jsonb
WHERE starts_with(conv_key, $1) AND done_at IS NOT NULL AND inbound->>'SenderID' = $2`
)

// sqlDeleteAuthorNotes deletes the notes one person wrote in an owner's
// conversations ($1 owner, $2 author).
const sqlDeleteAuthorNotes = `DELETE FROM memories WHERE owner = $1 AND author = $2`

// pgScrubQueue empties the finished queued turns a purge covers.
func pgScrubQueue(ctx context.Context, tx pgx.Tx, scope PurgeScope) error {
	var cutoff int64
	if !scope.OlderThan.IsZero() {
		cutoff = scope.OlderThan.UnixMilli()
	}
	q, arg := sqlScrubQueueOwner, scope.Owner+":"
	if !scope.Key.IsZero() {
		q, arg = sqlScrubQueueConv, scope.Key.String()
	}
	if _, err := tx.Exec(ctx, q, arg, cutoff); err != nil {
		return fmt.Errorf("purging the turn queue of %s: %w", scope.Owner, err)
	}
	return nil
}

// Export implements Backend, from one snapshot (a repeatable-read
// transaction).
func (p *Postgres) Export(ctx context.Context, owner string, key *pipeline.Key) (OwnerData, error) {
	d := OwnerData{Owner: owner}
	err := pgx.BeginTxFunc(ctx, p.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		d = OwnerData{Owner: owner}
		if key == nil {
			st, ok, err := pgSettings(ctx, tx, owner)
			if err != nil {
				return err
			}
			if ok {
				d.Settings = &st
			}
			if d.Memories, err = pgMemories(ctx, tx, owner); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, `SELECT `+pgFactColumns+` FROM facts WHERE owner = $1 ORDER BY id`, owner)
		if err != nil {
			return err
		}
		facts, err := pgScanFacts(rows)
		if err != nil {
			return err
		}
		for _, f := range facts {
			if key == nil || f.Key == key.String() {
				d.Facts = append(d.Facts, f)
			}
		}
		convs, err := pgOwnerConvs(ctx, tx, owner, key)
		if err != nil {
			return err
		}
		for _, c := range convs {
			cd := ConversationData{Key: c.key.String()}
			var last int64
			if err := tx.QueryRow(ctx, `SELECT turns_since_summary, last_summary_at FROM conversations WHERE id = $1`, c.id).Scan(&cd.TurnsSinceSummary, &last); err != nil {
				return err
			}
			if last > 0 {
				cd.LastSummary = time.UnixMilli(last).UTC()
			}
			rows, err := tx.Query(ctx, `SELECT `+pgMsgColumns+` FROM messages m WHERE m.conv = $1 ORDER BY m.id`, c.id)
			if err != nil {
				return err
			}
			if cd.Messages, err = pgScanMessages(rows, c.key); err != nil {
				return err
			}
			if cd.Summaries, err = pgLoadSummaries(ctx, tx, c.id, c.key, false); err != nil {
				return err
			}
			d.Conversations = append(d.Conversations, cd)
		}
		return nil
	})
	return d, err
}

// Import implements Backend.
func (p *Postgres) Import(ctx context.Context, d OwnerData) (ImportReport, error) {
	return p.importOwner(ctx, d, false)
}

// importCopy is Import, keeping the rows' ids where free with keepIDs
// (copyInto).
func (p *Postgres) importCopy(ctx context.Context, d OwnerData, keepIDs bool) error {
	_, err := p.importOwner(ctx, d, keepIDs)
	return err
}

func (p *Postgres) importOwner(ctx context.Context, d OwnerData, keepIDs bool) (ImportReport, error) {
	if err := d.Validate(); err != nil {
		return ImportReport{}, err
	}
	d, cut := cutOwnerData(d)
	var rep ImportReport
	err := p.tx(ctx, func(tx pgx.Tx) error {
		rep = ImportReport{Cut: cut}
		if d.Settings != nil {
			st := *d.Settings
			st.Owner = d.Owner
			if err := pgPutSettings(ctx, tx, st); err != nil {
				return err
			}
		}
		for _, m := range d.Memories {
			added, err := pgRemember(ctx, tx, d.Owner, m, 0)
			if err != nil {
				return err
			}
			if added {
				rep.Memories++
			}
		}
		for _, f := range d.Facts {
			if _, merged, err := pgAddFact(ctx, tx, d.Owner, f, keepIDs); err != nil {
				return err
			} else if !merged {
				rep.Facts++
			}
		}
		convs := map[pipeline.Key]int64{}
		for _, c := range d.Conversations {
			key, _ := pipeline.ParseKey(c.Key)
			n, err := pgImportConversation(ctx, tx, key, c, convs, keepIDs)
			if err != nil {
				return fmt.Errorf("importing %s: %w", key, err)
			}
			rep = rep.Add(n)
		}
		return nil
	})
	return rep, err
}

func pgImportConversation(ctx context.Context, tx pgx.Tx, key pipeline.Key, c ConversationData, convs map[pipeline.Key]int64, keepIDs bool) (ImportReport, error) {
	var rep ImportReport
	conv, err := pgEnsure(ctx, tx, key, convs)
	if err != nil {
		return rep, err
	}
	var maxChunk int64
	var rows []pgRow
	for _, m := range c.Messages {
		m.Key = key
		m = pgCleanMessage(m)
		// Messages without a platform id are matched on their content.
		if m.PlatformID == "" {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS(SELECT 1 FROM messages WHERE conv = $1 AND platform_id = '' AND role = $2 AND created_at = $3 AND text = $4)`,
				conv, string(m.Role), m.Time.UnixMilli(), m.Text).Scan(&exists); err != nil {
				return rep, err
			}
			if exists {
				continue
			}
		}
		m.Tokens = max(m.Tokens, 1)
		rows = append(rows, pgRow{conv, m})
		maxChunk = max(maxChunk, m.ChunkID)
	}
	ins, err := pgInsertMessages(ctx, tx, rows, keepIDs)
	if err != nil {
		return rep, err
	}
	rep.Messages += len(ins)
	existing, err := pgLoadSummaries(ctx, tx, conv, key, false)
	if err != nil {
		return rep, err
	}
	idMap := map[int64]int64{}
	for _, sm := range c.Summaries {
		if id, ok := findSummary(existing, sm, idMap); ok {
			idMap[sm.ID] = id
			continue
		}
		ns := sm
		if ns.Level > 1 {
			ns.Sources = mapIDs(sm.Sources, idMap)
		}
		if err := pgInsertSummary(ctx, tx, conv, &ns, keepIDs); err != nil {
			return rep, err
		}
		idMap[sm.ID] = ns.ID
		existing = append(existing, ns)
		rep.Summaries++
		if ns.Level == 1 {
			for _, ch := range ns.Sources {
				maxChunk = max(maxChunk, ch)
			}
		}
	}
	_, err = tx.Exec(ctx, `UPDATE conversations SET next_chunk = greatest(next_chunk, $1), turns_since_summary = greatest(turns_since_summary, $2),
		last_summary_at = greatest(last_summary_at, $3) WHERE id = $4`, maxChunk+1, c.TurnsSinceSummary, millisOrZero(c.LastSummary), conv)
	return rep, err
}

// purgeSender deletes one sender's user messages in an owner's
// conversations, the answers to them and what was built from them (see
// SQLite.purgeSender).
func (p *Postgres) purgeSender(ctx context.Context, owner, sender string) (PurgeReport, error) {
	var rep PurgeReport
	err := p.tx(ctx, func(tx pgx.Tx) error {
		rep = PurgeReport{}
		tag, err := tx.Exec(ctx, sqlDeleteAuthorNotes, owner, noteAuthor(owner, sender))
		if err != nil {
			return fmt.Errorf("purging the notes of %s in %s: %w", sender, owner, err)
		}
		rep.Memories = tag.RowsAffected()
		convs, err := pgOwnerConvs(ctx, tx, owner, nil)
		if err != nil {
			return err
		}
		var gone []string
		for _, c := range convs {
			ids, chunks, n, err := pgSenderMessages(ctx, tx, c.id, sender)
			if err != nil {
				return err
			}
			if n == 0 {
				continue
			}
			gone = append(gone, ids...)
			sums, err := pgLoadSummaries(ctx, tx, c.id, c.key, false)
			if err != nil {
				return err
			}
			plan := planPurgeChunks(sums, chunks)
			tag, err := tx.Exec(ctx, `DELETE FROM messages WHERE conv = $1 AND (
				(role = 'user' AND sender_id = $2) OR
				(role = 'assistant' AND reply_to <> '' AND reply_to = ANY($3)))`, c.id, sender, ids)
			if err != nil {
				return fmt.Errorf("purging messages of %s: %w", c.key, err)
			}
			rep.Messages += tag.RowsAffected()
			n2, err := pgApplyPlan(ctx, tx, c.id, plan)
			if err != nil {
				return err
			}
			rep.Summaries += n2
		}
		if _, err := tx.Exec(ctx, sqlScrubQueueSender, owner+":", sender); err != nil {
			return fmt.Errorf("purging the turn queue of %s: %w", owner, err)
		}
		if len(gone) == 0 {
			return nil
		}
		tag, err = tx.Exec(ctx, `DELETE FROM facts WHERE owner = $1 AND jsonb_typeof(sources) = 'array' AND EXISTS (
			SELECT 1 FROM jsonb_array_elements_text(sources) s WHERE s = ANY($2))`, owner, gone)
		if err != nil {
			return fmt.Errorf("purging facts: %w", err)
		}
		rep.Facts = tag.RowsAffected()
		return nil
	})
	return rep, err
}

// pgSenderMessages returns the platform ids of a sender's user messages in
// a conversation, the chunks they were archived in, and how many there are.
func pgSenderMessages(ctx context.Context, tx pgx.Tx, conv int64, sender string) ([]string, map[int64]bool, int, error) {
	rows, err := tx.Query(ctx, `SELECT platform_id, chunk_id FROM messages WHERE conv = $1 AND role = 'user' AND sender_id = $2`, conv, sender)
	if err != nil {
		return nil, nil, 0, err
	}
	defer rows.Close()
	ids := []string{}
	chunks := map[int64]bool{}
	n := 0
	for rows.Next() {
		var id string
		var chunk int64
		if err := rows.Scan(&id, &chunk); err != nil {
			return nil, nil, 0, err
		}
		n++
		if id != "" {
			ids = append(ids, id)
		}
		if chunk != 0 {
			chunks[chunk] = true
		}
	}
	return ids, chunks, n, rows.Err()
}

// trimWindow: see Store.TrimToWindow.
func (p *Postgres) trimWindow(ctx context.Context, key pipeline.Key, since time.Time, keep int) (int, error) {
	var n int64
	err := p.tx(ctx, func(tx pgx.Tx) error {
		conv, err := pgConv(ctx, tx, key)
		if err != nil || conv == 0 {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM messages WHERE conv = $1 AND is_active AND chunk_id = 0 AND created_at >= $2
			AND id < coalesce((SELECT id FROM messages WHERE conv = $1 AND role = 'user' ORDER BY id DESC LIMIT 1 OFFSET $3), 0)`,
			conv, since.UnixMilli(), keep-1)
		n = tag.RowsAffected()
		return err
	})
	return int(n), err
}

// unanswered lists a channel's user messages since a time that no
// assistant message answers and that were not handled otherwise (see
// Store.Unanswered).
func (p *Postgres) unanswered(ctx context.Context, channel string, since time.Time) ([]Message, error) {
	rows, err := p.pool.Query(ctx, `SELECT c.key, `+pgMsgColumns+` FROM messages m JOIN conversations c ON c.id = m.conv
		WHERE starts_with(c.key, $1) AND m.role = 'user' AND m.platform_id <> '' AND m.created_at >= $2
		AND NOT EXISTS (SELECT 1 FROM messages a WHERE a.conv = m.conv AND a.reply_to = m.platform_id AND a.reply_to <> '' AND a.role = 'assistant')
		AND NOT EXISTS (SELECT 1 FROM handled h WHERE h.conv_key = c.key AND h.platform_id = m.platform_id)
		ORDER BY m.created_at, m.id`, channel+":", since.UnixMilli())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var m Message
		var k, role string
		var at int64
		if err := rows.Scan(&k, &m.ID, &role, &m.SenderID, &m.SenderName, &m.PlatformID, &m.ReplyTo, &m.Text, &at, &m.Tokens, &m.Active, &m.ChunkID); err != nil {
			return nil, err
		}
		if m.Key, err = pipeline.ParseKey(k); err != nil {
			continue
		}
		m.Role, m.Time = Role(role), time.UnixMilli(at).UTC()
		out = append(out, m)
	}
	return out, rows.Err()
}
