package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
)

// A person's messages in other owners' conversations — the groups they
// wrote in — for "/purge all" in a private chat: what they said there is
// theirs too. The bot's answers to those messages go with them, and so do
// the group's summaries and facts built from them (as any purge: a summary
// that carries purged text is deleted, what it was built from and survives
// comes back into play), and the group notes they wrote (UserMemory.Author).

// SenderScope names one person's messages in groups: the user messages of
// Channel sent by SenderID in conversations whose owner is not Except (the
// person's own, which "/purge all" handles).
type SenderScope struct {
	Channel  string
	SenderID string
	Except   string
}

// owners lists the owners whose conversations the scope looks into.
func (s *Store) senderOwners(ctx context.Context, sc SenderScope) ([]string, error) {
	if sc.Channel == "" || sc.SenderID == "" {
		return nil, fmt.Errorf("a sender scope needs a channel and a sender")
	}
	all, err := s.Owners(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range all {
		if o != sc.Except && strings.HasPrefix(o, sc.Channel+":") {
			out = append(out, o)
		}
	}
	return out, nil
}

// SenderMessages counts the scope's messages and the groups (owners) they
// are in.
func (s *Store) SenderMessages(ctx context.Context, sc SenderScope) (messages, groups int, err error) {
	owners, err := s.senderOwners(ctx, sc)
	if err != nil {
		return 0, 0, fmt.Errorf("counting the messages of %s:%s in groups: %w", sc.Channel, sc.SenderID, err)
	}
	for _, o := range owners {
		d, err := s.Export(ctx, o, nil)
		if err != nil {
			return 0, 0, fmt.Errorf("counting the messages of %s:%s in %s: %w", sc.Channel, sc.SenderID, o, err)
		}
		n := 0
		for _, c := range d.Conversations {
			for _, m := range c.Messages {
				if m.Role == RoleUser && m.SenderID == sc.SenderID {
					n++
				}
			}
		}
		if n > 0 {
			messages += n
			groups++
		}
	}
	return messages, groups, nil
}

// PurgeSender deletes the scope's messages, the bot's answers to them and
// what was built from them, and the notes the person wrote in the groups,
// then checkpoints SQLite so no copy of the text stays in the WAL.
func (s *Store) PurgeSender(ctx context.Context, sc SenderScope) (PurgeReport, error) {
	var total PurgeReport
	owners, err := s.senderOwners(ctx, sc)
	if err != nil {
		return total, fmt.Errorf("purging the messages of %s:%s in groups: %w", sc.Channel, sc.SenderID, err)
	}
	for _, o := range owners {
		var rep PurgeReport
		err := s.do(ctx, o, func(ctx context.Context, b Backend) error {
			var err error
			switch b := b.(type) {
			case *SQLite:
				rep, err = b.purgeSender(ctx, o, sc.SenderID)
			case *JSON:
				rep, err = b.purgeSender(ctx, o, sc.SenderID)
			case *Postgres:
				rep, err = b.purgeSender(ctx, o, sc.SenderID)
			default:
				err = fmt.Errorf("backend %T", b)
			}
			return err
		})
		if err != nil {
			return total, fmt.Errorf("purging the messages of %s:%s in %s: %w", sc.Channel, sc.SenderID, o, err)
		}
		total = total.Add(rep)
	}
	if err := s.sqlite.Checkpoint(ctx); err != nil {
		s.log.Warn("checkpoint after purge", "err", err)
	}
	s.log.Info("purged a sender's messages in groups", "channel", sc.Channel, "sender", sc.SenderID, "messages", total.Messages, "summaries", total.Summaries)
	return total, nil
}

func (s *SQLite) purgeSender(ctx context.Context, owner, sender string) (PurgeReport, error) {
	var rep PurgeReport
	err := s.tx(ctx, func(tx *sql.Tx) error {
		rep = PurgeReport{}
		res, err := tx.ExecContext(ctx, sqliteDeleteAuthorNotes, owner, noteAuthor(owner, sender))
		if err != nil {
			return fmt.Errorf("purging the notes of %s in %s: %w", sender, owner, err)
		}
		rep.Memories, _ = res.RowsAffected()
		convs, err := ownerConvs(ctx, tx, owner, nil)
		if err != nil {
			return err
		}
		var gone []string // platform ids of the purged messages
		for _, c := range convs {
			ids, chunks, err := senderMessagesTx(ctx, tx, c.id, sender)
			if err != nil || len(ids) == 0 {
				if err != nil {
					return err
				}
				continue
			}
			gone = append(gone, ids...)
			sums, err := loadSummaries(ctx, tx, c.id, c.key, false)
			if err != nil {
				return err
			}
			plan := planPurgeChunks(sums, chunks)
			res, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE conv = ? AND (
				(role = 'user' AND sender_id = ?) OR
				(role = 'assistant' AND reply_to <> '' AND reply_to IN (SELECT value FROM json_each(?))))`, c.id, sender, jsonStrings(ids))
			if err != nil {
				return fmt.Errorf("purging messages of %s: %w", c.key, err)
			}
			n, _ := res.RowsAffected()
			rep.Messages += n
			if len(plan.deleteSummaries) > 0 {
				res, err := tx.ExecContext(ctx, `DELETE FROM summaries WHERE conv = ? AND id IN (SELECT value FROM json_each(?))`, c.id, jsonIDs(plan.deleteSummaries))
				if err != nil {
					return err
				}
				n, _ := res.RowsAffected()
				rep.Summaries += n
			}
			if len(plan.reactivateSummaries) > 0 {
				if _, err := tx.ExecContext(ctx, `UPDATE summaries SET is_active = 1 WHERE conv = ? AND id IN (SELECT value FROM json_each(?))`, c.id, jsonIDs(plan.reactivateSummaries)); err != nil {
					return err
				}
			}
			if len(plan.reactivateChunks) > 0 {
				if _, err := tx.ExecContext(ctx, `UPDATE messages SET is_active = 1, chunk_id = 0 WHERE conv = ? AND chunk_id IN (SELECT value FROM json_each(?))`, c.id, jsonIDs(plan.reactivateChunks)); err != nil {
					return err
				}
			}
		}
		if len(gone) == 0 {
			return nil
		}
		res, err = tx.ExecContext(ctx, `DELETE FROM facts WHERE owner = ? AND EXISTS (
			SELECT 1 FROM json_each(facts.sources) s WHERE s.value IN (SELECT value FROM json_each(?)))`, owner, jsonStrings(gone))
		if err != nil {
			return fmt.Errorf("purging facts: %w", err)
		}
		rep.Facts, _ = res.RowsAffected()
		return nil
	})
	return rep, err
}

// senderMessagesTx returns the platform ids of a sender's user messages in
// a conversation and the chunks they were archived in.
func senderMessagesTx(ctx context.Context, tx *sql.Tx, conv int64, sender string) ([]string, map[int64]bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT platform_id, chunk_id FROM messages WHERE conv = ? AND role = 'user' AND sender_id = ?`, conv, sender)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var ids []string
	chunks := map[int64]bool{}
	n := 0
	for rows.Next() {
		var id string
		var chunk int64
		if err := rows.Scan(&id, &chunk); err != nil {
			return nil, nil, err
		}
		n++
		if id != "" {
			ids = append(ids, id)
		}
		if chunk != 0 {
			chunks[chunk] = true
		}
	}
	if n > 0 && ids == nil {
		ids = []string{} // messages without platform ids still go
	}
	return ids, chunks, rows.Err()
}

// sqliteDeleteAuthorNotes deletes the notes one person wrote in an owner's
// conversations ($1 owner, $2 author).
const sqliteDeleteAuthorNotes = `DELETE FROM memories WHERE owner = ? AND author = ?`

// noteAuthor is the author of sender's notes in owner's conversations, as
// access lists name users: owner's channel and the sender's id.
func noteAuthor(owner, sender string) string {
	channel, _, _ := strings.Cut(owner, ":")
	return channel + ":" + sender
}

func jsonStrings(ss []string) string {
	if ss == nil {
		ss = []string{}
	}
	b, _ := json.Marshal(ss)
	return string(b)
}

func (j *JSON) purgeSender(ctx context.Context, owner, sender string) (PurgeReport, error) {
	var rep PurgeReport
	err := j.update(ctx, owner, func(f *jsonFile) (bool, error) {
		rep = PurgeReport{}
		author := noteAuthor(owner, sender)
		var notes []UserMemory
		for _, m := range f.Data.Memories {
			if m.Author == author {
				rep.Memories++
				continue
			}
			notes = append(notes, m)
		}
		f.Data.Memories = notes
		gone := map[string]bool{}
		for ci := range f.Data.Conversations {
			c := &f.Data.Conversations[ci]
			chunks := map[int64]bool{}
			ids := map[string]bool{}
			found := false
			for _, m := range c.Messages {
				if m.Role == RoleUser && m.SenderID == sender {
					found = true
					if m.PlatformID != "" {
						ids[m.PlatformID], gone[m.PlatformID] = true, true
					}
					if m.ChunkID != 0 {
						chunks[m.ChunkID] = true
					}
				}
			}
			if !found {
				continue
			}
			plan := planPurgeChunks(c.Summaries, chunks)
			var msgs []Message
			for _, m := range c.Messages {
				if m.Role == RoleUser && m.SenderID == sender || m.Role == RoleAssistant && m.ReplyTo != "" && ids[m.ReplyTo] {
					rep.Messages++
					continue
				}
				msgs = append(msgs, m)
			}
			var gone int64
			c.Messages, c.Summaries, gone = plan.applyTo(msgs, c.Summaries)
			rep.Summaries += gone
		}
		if rep.Messages == 0 {
			return rep.Memories > 0, nil
		}
		var facts []Fact
		for _, fc := range f.Data.Facts {
			derived := false
			for _, src := range fc.Sources {
				if gone[src] {
					derived = true
				}
			}
			if derived {
				rep.Facts++
				continue
			}
			facts = append(facts, fc)
		}
		f.Data.Facts = facts
		return true, nil
	})
	if err != nil {
		return rep, err
	}
	if rep.Messages > 0 {
		j.mu.Lock()
		o := j.owners[owner]
		j.mu.Unlock()
		if o != nil {
			o.resetCache()
		}
	}
	return rep, nil
}
