package memory

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/recallbot/recall/pipeline"
)

// pgAround selects messages $2 of conversation $1 and, for each, the
// nearest older and newer message of the conversation (archived or
// active), through the (conv, is_active, id) index.
const pgAround = `WITH seed AS (SELECT id FROM messages WHERE conv = $1 AND id = ANY($2))
SELECT ` + pgMsgColumns + ` FROM messages m WHERE m.conv = $1 AND m.id IN (
	SELECT id FROM seed
	UNION SELECT greatest(
		(SELECT id FROM messages WHERE conv = $1 AND NOT is_active AND id < s.id ORDER BY id DESC LIMIT 1),
		(SELECT id FROM messages WHERE conv = $1 AND is_active AND id < s.id ORDER BY id DESC LIMIT 1)) FROM seed s
	UNION SELECT least(
		(SELECT id FROM messages WHERE conv = $1 AND NOT is_active AND id > s.id ORDER BY id LIMIT 1),
		(SELECT id FROM messages WHERE conv = $1 AND is_active AND id > s.id ORDER BY id LIMIT 1)) FROM seed s
) ORDER BY m.id`

// Around implements Backend.
func (p *Postgres) Around(ctx context.Context, key pipeline.Key, ids []int64) ([]Message, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	conv, err := pgConv(ctx, p.pool, key)
	if err != nil || conv == 0 {
		return nil, err
	}
	rows, err := p.pool.Query(ctx, pgAround, conv, ids)
	if err != nil {
		return nil, fmt.Errorf("reading around messages of %s: %w", key, err)
	}
	out, err := pgScanMessages(rows, key)
	if err != nil {
		return nil, fmt.Errorf("reading around messages of %s: %w", key, err)
	}
	return out, nil
}

// discard: see Store.Discard. The message's postings go with it (ON
// DELETE CASCADE).
func (p *Postgres) discard(ctx context.Context, key pipeline.Key, platformID string) (bool, error) {
	var n int64
	err := p.tx(ctx, func(tx pgx.Tx) error {
		conv, err := pgConv(ctx, tx, key)
		if err != nil || conv == 0 {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM messages m WHERE m.conv = $1 AND m.platform_id = $2 AND m.platform_id <> '' AND m.role = 'user' AND m.is_active
			AND NOT EXISTS (SELECT 1 FROM messages a WHERE a.conv = m.conv AND a.reply_to = m.platform_id AND a.role = 'assistant')`, conv, platformID)
		n = tag.RowsAffected()
		return err
	})
	return n > 0, err
}
