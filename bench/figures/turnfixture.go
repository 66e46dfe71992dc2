package figures

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"github.com/recallbot/recall/bench/chattext"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// The turn fixture: one conversation with a big archive.
const (
	fxChunk      = 20 // messages per archived chunk: 10 exchanges, one summary each
	fxActiveSums = 10 // the newest level-1 summaries stay active
	fxActive     = 30 // active messages after the archive
	fxTxRows     = 10_000
)

var (
	turnKey  = pipeline.Key{Channel: "telegram", Chat: "424242"} // a private chat: chat id = user id
	turnUser = "424242"
	turnName = "Ana"
	// turnPeople are who Ana and the assistant talk about. Ana's own name is
	// not among them: it is the sender name of half the archive, so a
	// message that mentions it matches every message she wrote.
	turnPeople = []string{"João", "Sofia", "Rui", "Helena", "Kenji"}
)

// turnFixtureName is the cache folder of the turn fixture with archived
// archived messages; bump the version when the content changes.
func turnFixtureName(archived int) string {
	if archived == 100_000 {
		return "recall-bench-turn-v2"
	}
	return "recall-bench-turn-" + count(archived) + "-v2"
}

// TurnFixture returns the path of the cached turn fixture database (its
// conversation has archived archived messages, a multiple of 20), building
// it first when it is missing (100,000 take about a minute). Callers copy
// it: a run changes the conversation.
func TurnFixture(ctx context.Context, archived int, progress io.Writer) (string, error) {
	if archived%fxChunk != 0 || archived < fxChunk*fxActiveSums {
		return "", fmt.Errorf("turn fixture: %d archived messages: want a multiple of %d, at least %d", archived, fxChunk, fxChunk*fxActiveSums)
	}
	dir, err := cachedDB(ctx, turnFixtureName(archived), "the turn fixture ("+count(archived)+" archived messages)", progress,
		func(ctx context.Context, path string) error { return buildTurnFixture(ctx, archived, path) })
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "recall.db"), nil
}

// buildTurnFixture writes, with raw batched INSERTs into memory's schema
// (the FTS triggers fire as for the writer): the big conversation's
// 100,000 archived messages in chunks of 20, one level-1 summary per chunk
// (the newest 10 active, the older ones inactive as if folded), then 30
// active messages whose 15 replies count toward the next summary.
func buildTurnFixture(ctx context.Context, archived int, path string) error {
	s, err := memory.OpenSQLite(ctx, path)
	if err != nil {
		return err
	}
	defer s.Close()
	db := s.DB()
	if _, err := db.ExecContext(ctx, `PRAGMA cache_size = -131072`); err != nil { // 128 MiB for the build
		return err
	}
	g := chattext.NewWords(7)
	total := archived + fxActive
	chunks := archived / fxChunk
	now := time.Now().Truncate(time.Hour)
	t0 := now.Add(-2 * 365 * 24 * time.Hour)
	gap := now.Add(-time.Hour).Sub(t0) / time.Duration(total)

	var conv int64
	if err := db.QueryRowContext(ctx, `INSERT INTO conversations(key, owner, created_at) VALUES (?, ?, ?) RETURNING id`,
		turnKey.String(), turnKey.Owner(), t0.UnixMilli()).Scan(&conv); err != nil {
		return err
	}
	const insMsg = `INSERT INTO messages(conv, role, sender_id, sender_name, platform_id, reply_to, text, created_at, tokens, is_active, chunk_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	const insSum = `INSERT INTO summaries(conv, level, text, is_active, sources, from_at, to_at, tokens, created_at)
		VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?)`
	var (
		tx       *sql.Tx
		ins, sum *sql.Stmt
	)
	begin := func() error {
		var err error
		if tx, err = db.BeginTx(ctx, nil); err != nil {
			return err
		}
		if ins, err = tx.PrepareContext(ctx, insMsg); err != nil {
			return err
		}
		sum, err = tx.PrepareContext(ctx, insSum)
		return err
	}
	commit := func() error {
		ins.Close()
		sum.Close()
		return tx.Commit()
	}
	if err := begin(); err != nil {
		return err
	}
	var chunkFrom time.Time
	var lastSum time.Time
	turns := 0
	for i := 0; i < total; i++ {
		at := t0.Add(time.Duration(i) * gap)
		role, senderID, sender, replyTo, text := memory.RoleUser, "", "", "", ""
		pid := strconv.Itoa(i + 1)
		if i%2 == 0 {
			senderID, sender = turnUser, turnName
			text = g.Text(g.Between(3, 30), turnPeople)
		} else {
			role, replyTo = memory.RoleAssistant, strconv.Itoa(i)
			text = g.Text(g.Between(12, 80), turnPeople)
		}
		active, chunk := 1, int64(0)
		if i < archived {
			active, chunk = 0, int64(i/fxChunk+1)
			if i%fxChunk == 0 {
				chunkFrom = at
			}
		} else if role == memory.RoleAssistant {
			turns++
		}
		if _, err := ins.ExecContext(ctx, conv, string(role), senderID, sender, pid, replyTo, text,
			at.UnixMilli(), estimateTokens(text), active, chunk); err != nil {
			tx.Rollback()
			return err
		}
		if chunk > 0 && i%fxChunk == fxChunk-1 {
			st := g.Text(g.Between(60, 110), turnPeople)
			sumActive := 0
			if int(chunk) > chunks-fxActiveSums {
				sumActive = 1
			}
			lastSum = at.Add(time.Minute)
			if _, err := sum.ExecContext(ctx, conv, st, sumActive, "["+strconv.FormatInt(chunk, 10)+"]",
				chunkFrom.UnixMilli(), at.UnixMilli(), estimateTokens(st), lastSum.UnixMilli()); err != nil {
				tx.Rollback()
				return err
			}
		}
		if (i+1)%fxTxRows == 0 {
			if err := commit(); err != nil {
				return err
			}
			if err := begin(); err != nil {
				return err
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE conversations SET next_chunk = ?, turns_since_summary = ?, last_summary_at = ? WHERE id = ?`,
		chunks+1, turns, lastSum.UnixMilli(), conv); err != nil {
		tx.Rollback()
		return err
	}
	if err := commit(); err != nil {
		return err
	}
	var n, nArchived, sums int
	if err := db.QueryRowContext(ctx, `SELECT count(*), sum(is_active = 0), (SELECT count(*) FROM summaries WHERE is_active = 1) FROM messages`).Scan(&n, &nArchived, &sums); err != nil {
		return err
	}
	if n != total || nArchived != archived || sums != fxActiveSums {
		return fmt.Errorf("fixture has %d messages (%d archived) and %d active summaries; want %d (%d), %d", n, nArchived, sums, total, archived, fxActiveSums)
	}
	// Merged as the bot merges its index when idle (see buildArchive).
	if _, err := s.MergeIndex(ctx); err != nil {
		return err
	}
	return s.Checkpoint(ctx)
}
