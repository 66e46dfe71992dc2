package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// Purge implements Backend.
func (s *SQLite) Purge(ctx context.Context, scope PurgeScope) (PurgeReport, error) {
	var rep PurgeReport
	err := s.tx(ctx, func(tx *sql.Tx) error {
		rep = PurgeReport{}
		var err error
		rep, err = purgeTx(ctx, tx, scope)
		return err
	})
	return rep, err
}

type convRow struct {
	id  int64
	key pipeline.Key
}

func ownerConvs(ctx context.Context, q queryer, owner string, only *pipeline.Key) ([]convRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, key FROM conversations WHERE owner = ? ORDER BY id`, owner)
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

func purgeTx(ctx context.Context, tx *sql.Tx, scope PurgeScope) (PurgeReport, error) {
	var rep PurgeReport
	if scope.Owner == "" {
		return rep, fmt.Errorf("purge: owner is required")
	}
	var only *pipeline.Key
	if !scope.Key.IsZero() {
		only = &scope.Key
	}
	convs, err := ownerConvs(ctx, tx, scope.Owner, only)
	if err != nil {
		return rep, err
	}
	all := scope.OlderThan.IsZero()
	cutoff := scope.OlderThan.UnixMilli()
	for _, c := range convs {
		sums, err := loadSummaries(ctx, tx, c.id, c.key, false)
		if err != nil {
			return rep, err
		}
		plan := planPurge(sums, all, scope.OlderThan)
		var res sql.Result
		if all {
			res, err = tx.ExecContext(ctx, `DELETE FROM messages WHERE conv = ?`, c.id)
		} else {
			res, err = tx.ExecContext(ctx, `DELETE FROM messages WHERE conv = ? AND created_at < ?`, c.id, cutoff)
		}
		if err != nil {
			return rep, fmt.Errorf("purging messages of %s: %w", c.key, err)
		}
		n, _ := res.RowsAffected()
		rep.Messages += n
		if len(plan.deleteSummaries) > 0 {
			res, err := tx.ExecContext(ctx, `DELETE FROM summaries WHERE conv = ? AND id IN (SELECT value FROM json_each(?))`, c.id, jsonIDs(plan.deleteSummaries))
			if err != nil {
				return rep, err
			}
			n, _ := res.RowsAffected()
			rep.Summaries += n
		}
		if len(plan.reactivateSummaries) > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE summaries SET is_active = 1 WHERE conv = ? AND id IN (SELECT value FROM json_each(?))`, c.id, jsonIDs(plan.reactivateSummaries)); err != nil {
				return rep, err
			}
		}
		if len(plan.reactivateChunks) > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE messages SET is_active = 1, chunk_id = 0 WHERE conv = ? AND chunk_id IN (SELECT value FROM json_each(?))`, c.id, jsonIDs(plan.reactivateChunks)); err != nil {
				return rep, err
			}
		}
		if all {
			if _, err := tx.ExecContext(ctx, `DELETE FROM conversations WHERE id = ?`, c.id); err != nil {
				return rep, err
			}
		}
	}
	// Facts: everything for a whole-owner purge, the conversation's for a
	// conversation purge, the older ones for an age purge.
	var res sql.Result
	switch {
	case only != nil && all:
		res, err = tx.ExecContext(ctx, `DELETE FROM facts WHERE owner = ? AND conv_key = ?`, scope.Owner, only.String())
	case only != nil:
		res, err = tx.ExecContext(ctx, `DELETE FROM facts WHERE owner = ? AND conv_key = ? AND created_at < ?`, scope.Owner, only.String(), cutoff)
	case all:
		res, err = tx.ExecContext(ctx, `DELETE FROM facts WHERE owner = ?`, scope.Owner)
	default:
		res, err = tx.ExecContext(ctx, `DELETE FROM facts WHERE owner = ? AND created_at < ?`, scope.Owner, cutoff)
	}
	if err != nil {
		return rep, fmt.Errorf("purging facts: %w", err)
	}
	rep.Facts, _ = res.RowsAffected()
	if only == nil && all {
		res, err := tx.ExecContext(ctx, `DELETE FROM memories WHERE owner = ?`, scope.Owner)
		if err != nil {
			return rep, err
		}
		rep.Memories, _ = res.RowsAffected()
		if _, err := tx.ExecContext(ctx, `DELETE FROM owners WHERE owner = ?`, scope.Owner); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// Export implements Backend.
func (s *SQLite) Export(ctx context.Context, owner string, key *pipeline.Key) (OwnerData, error) {
	d := OwnerData{Owner: owner}
	// One read transaction gives a consistent snapshot.
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return d, err
	}
	defer tx.Rollback()
	if key == nil {
		st, ok, err := s.Settings(ctx, owner)
		if err != nil {
			return d, err
		}
		if ok {
			d.Settings = &st
		}
		if d.Memories, err = s.Memories(ctx, owner); err != nil {
			return d, err
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+factColumns+` FROM facts WHERE owner = ? ORDER BY id`, owner)
	if err != nil {
		return d, err
	}
	facts, err := scanFacts(rows, 0)
	if err != nil {
		return d, err
	}
	for _, f := range facts {
		if key == nil || f.Key == key.String() {
			d.Facts = append(d.Facts, f)
		}
	}
	convs, err := ownerConvs(ctx, tx, owner, key)
	if err != nil {
		return d, err
	}
	for _, c := range convs {
		cd := ConversationData{Key: c.key.String()}
		var last int64
		if err := tx.QueryRowContext(ctx, `SELECT turns_since_summary, last_summary_at FROM conversations WHERE id = ?`, c.id).Scan(&cd.TurnsSinceSummary, &last); err != nil {
			return d, err
		}
		if last > 0 {
			cd.LastSummary = time.UnixMilli(last).UTC()
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+msgColumns+` FROM messages m WHERE m.conv = ? ORDER BY m.id`, c.id)
		if err != nil {
			return d, err
		}
		if cd.Messages, _, err = scanMessages(rows, c.key, false); err != nil {
			return d, err
		}
		if cd.Summaries, err = loadSummaries(ctx, tx, c.id, c.key, false); err != nil {
			return d, err
		}
		d.Conversations = append(d.Conversations, cd)
	}
	return d, nil
}

// Import implements Backend.
func (s *SQLite) Import(ctx context.Context, d OwnerData) (ImportReport, error) {
	return s.importOwner(ctx, d, false)
}

// importCopy is Import, keeping the rows' ids where free with keepIDs
// (copyInto).
func (s *SQLite) importCopy(ctx context.Context, d OwnerData, keepIDs bool) error {
	_, err := s.importOwner(ctx, d, keepIDs)
	return err
}

func (s *SQLite) importOwner(ctx context.Context, d OwnerData, keepIDs bool) (ImportReport, error) {
	if err := d.Validate(); err != nil {
		return ImportReport{}, err
	}
	// Nothing over the bound reaches SQLite (it would panic indexing it).
	d, cut := cutOwnerData(d)
	var rep ImportReport
	err := s.tx(ctx, func(tx *sql.Tx) error {
		rep = ImportReport{Cut: cut}
		if d.Settings != nil {
			st := *d.Settings
			st.Owner = d.Owner
			if err := putSettingsTx(ctx, tx, st); err != nil {
				return err
			}
		}
		for _, m := range d.Memories {
			added, err := rememberTx(ctx, tx, d.Owner, m, 0)
			if err != nil {
				return err
			}
			if added {
				rep.Memories++
			}
		}
		for _, f := range d.Facts {
			if _, merged, err := addFactTx(ctx, tx, d.Owner, f, keepIDs); err != nil {
				return err
			} else if !merged {
				rep.Facts++
			}
		}
		convs := map[pipeline.Key]int64{}
		for _, c := range d.Conversations {
			key, _ := pipeline.ParseKey(c.Key)
			n, err := importConversationTx(ctx, tx, key, c, convs, keepIDs)
			if err != nil {
				return fmt.Errorf("importing %s: %w", key, err)
			}
			rep = rep.Add(n)
		}
		return nil
	})
	return rep, err
}

func importConversationTx(ctx context.Context, tx *sql.Tx, key pipeline.Key, c ConversationData, convs map[pipeline.Key]int64, keepIDs bool) (ImportReport, error) {
	var rep ImportReport
	conv, err := ensureConv(ctx, tx, key, convs)
	if err != nil {
		return rep, err
	}
	var maxChunk int64
	for _, m := range c.Messages {
		m.Key = key
		var exists bool
		// Messages without a platform id are matched on their content.
		if m.PlatformID == "" {
			if err := tx.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM messages WHERE conv = ? AND platform_id = '' AND role = ? AND created_at = ? AND text = ?)`,
				conv, string(m.Role), m.Time.UnixMilli(), m.Text).Scan(&exists); err != nil {
				return rep, err
			}
		}
		if exists {
			continue
		}
		res, err := tx.ExecContext(ctx, sqlImportMessage, keptID(m.ID, keepIDs), conv, string(m.Role), m.SenderID, m.SenderName, m.PlatformID, m.ReplyTo,
			m.Text, m.Time.UnixMilli(), max(m.Tokens, 1), boolInt(m.Active), m.ChunkID)
		if err != nil {
			return rep, err
		}
		if n, _ := res.RowsAffected(); n > 0 {
			rep.Messages++
		}
		maxChunk = max(maxChunk, m.ChunkID)
	}
	existing, err := loadSummaries(ctx, tx, conv, key, false)
	if err != nil {
		return rep, err
	}
	// Summary ids differ between stores: map exported ids to stored ones so
	// higher levels keep pointing at their sources.
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
		if err := insertSummary(ctx, tx, conv, &ns, keepIDs); err != nil {
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
	_, err = tx.ExecContext(ctx, `UPDATE conversations SET next_chunk = max(next_chunk, ?), turns_since_summary = max(turns_since_summary, ?),
		last_summary_at = max(last_summary_at, ?) WHERE id = ?`, maxChunk+1, c.TurnsSinceSummary, millisOrZero(c.LastSummary), conv)
	return rep, err
}

// sqlImportMessage inserts an imported message: with its own id in a copy
// (keptID), else NULL: numbered anew.
const sqlImportMessage = `INSERT INTO messages(id, conv, role, sender_id, sender_name, platform_id, reply_to, text, created_at, tokens, is_active, chunk_id)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`

func millisOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// findSummary finds an already stored copy of an imported summary: same
// level, text, creation time and (mapped) sources.
func findSummary(existing []Summary, sm Summary, idMap map[int64]int64) (int64, bool) {
	src := sm.Sources
	if sm.Level > 1 {
		src = mapIDs(sm.Sources, idMap)
	}
	for _, e := range existing {
		if e.Level == sm.Level && e.Text == sm.Text && e.Created.Equal(ms(sm.Created)) && equalIDs(e.Sources, src) {
			return e.ID, true
		}
	}
	return 0, false
}

func mapIDs(ids []int64, m map[int64]int64) []int64 {
	out := make([]int64, len(ids))
	for i, id := range ids {
		if n, ok := m[id]; ok {
			out[i] = n
		} else {
			out[i] = id
		}
	}
	return out
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Owners implements Backend.
func (s *SQLite) Owners(ctx context.Context) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT owner FROM owners UNION SELECT owner FROM conversations
		UNION SELECT owner FROM memories UNION SELECT owner FROM facts ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// OwnerSize counts an owner's stored rows (used to verify a move).
func ownerFingerprint(d OwnerData) string {
	type fp struct {
		Settings            bool
		Memories, Facts     int
		Messages, Summaries map[string]int
	}
	f := fp{Settings: d.Settings != nil, Memories: len(d.Memories), Facts: len(d.Facts), Messages: map[string]int{}, Summaries: map[string]int{}}
	for _, c := range d.Conversations {
		f.Messages[c.Key] = len(c.Messages)
		f.Summaries[c.Key] = len(c.Summaries)
	}
	b, _ := json.Marshal(f)
	return string(b)
}
