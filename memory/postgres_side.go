package memory

import (
	"context"
	"time"

	"github.com/recallbot/recall/access"
	"github.com/recallbot/recall/pipeline"
)

// The Store's own tables on PostgreSQL (migration 0002): access decisions,
// pairing requests, token usage and handled message ids, shared by every
// process on the database. The Store calls these instead of SQLite's when
// database.url is set (access.go, usage.go, handled.go).

func (p *Postgres) accessRules(ctx context.Context) ([]access.Rule, error) {
	rows, err := p.pool.Query(ctx, `SELECT user_id, allowed, decided_by, updated_at FROM access ORDER BY user_id COLLATE "C"`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []access.Rule
	for rows.Next() {
		var r access.Rule
		var at int64
		if err := rows.Scan(&r.UserID, &r.Allowed, &r.By, &at); err != nil {
			return nil, err
		}
		r.Updated = fromMillis(at)
		out = append(out, r)
	}
	return out, rows.Err()
}

func (p *Postgres) putAccessRule(ctx context.Context, r access.Rule) error {
	_, err := p.pool.Exec(ctx, `INSERT INTO access(user_id, allowed, decided_by, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT(user_id) DO UPDATE SET allowed = excluded.allowed, decided_by = excluded.decided_by, updated_at = excluded.updated_at`,
		pgText(r.UserID), r.Allowed, pgText(r.By), r.Updated.UnixMilli())
	return err
}

func (p *Postgres) pairingRequests(ctx context.Context) ([]access.PairingRequest, error) {
	rows, err := p.pool.Query(ctx, `SELECT user_id, code, name, chat_key, created_at, expires_at FROM pairing ORDER BY created_at, user_id COLLATE "C"`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []access.PairingRequest
	for rows.Next() {
		var r access.PairingRequest
		var key string
		var created, expires int64
		if err := rows.Scan(&r.UserID, &r.Code, &r.Name, &key, &created, &expires); err != nil {
			return nil, err
		}
		if key != "" {
			r.Key, _ = pipeline.ParseKey(key) // a bad key only costs the "you're in" message
		}
		r.Created, r.Expires = fromMillis(created), fromMillis(expires)
		out = append(out, r)
	}
	return out, rows.Err()
}

func (p *Postgres) putPairingRequest(ctx context.Context, r access.PairingRequest, key string) error {
	_, err := p.pool.Exec(ctx, `INSERT INTO pairing(user_id, code, name, chat_key, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT(user_id) DO UPDATE SET code = excluded.code, name = excluded.name, chat_key = excluded.chat_key,
		created_at = excluded.created_at, expires_at = excluded.expires_at`,
		pgText(r.UserID), pgText(r.Code), pgText(r.Name), key, r.Created.UnixMilli(), r.Expires.UnixMilli())
	return err
}

func (p *Postgres) deletePairingRequest(ctx context.Context, userID string) error {
	_, err := p.pool.Exec(ctx, `DELETE FROM pairing WHERE user_id = $1`, pgText(userID))
	return err
}

func (p *Postgres) addUsage(ctx context.Context, userID, day string, tokens int) error {
	_, err := p.pool.Exec(ctx, `INSERT INTO usage(user_id, day, tokens) VALUES ($1, $2, $3)
		ON CONFLICT(user_id, day) DO UPDATE SET tokens = usage.tokens + excluded.tokens`, pgText(userID), day, tokens)
	return err
}

func (p *Postgres) usage(ctx context.Context, userID, day string) (int, error) {
	var n int
	err := p.pool.QueryRow(ctx, `SELECT coalesce(sum(tokens), 0) FROM usage WHERE user_id = $1 AND day = $2`, pgText(userID), day).Scan(&n)
	return n, err
}

func (p *Postgres) usageOn(ctx context.Context, day string) (tokens int64, users int, err error) {
	err = p.pool.QueryRow(ctx, `SELECT coalesce(sum(tokens), 0)::bigint, count(*) FROM usage WHERE day = $1`, day).Scan(&tokens, &users)
	return tokens, users, err
}

// markHandled records a handled message id; first is false when any
// process recorded it before.
func (p *Postgres) markHandled(ctx context.Context, key, platformID string, at time.Time) (bool, error) {
	tag, err := p.pool.Exec(ctx, `INSERT INTO handled(conv_key, platform_id, at) VALUES ($1, $2, $3)
		ON CONFLICT(conv_key, platform_id) DO NOTHING`, key, pgText(platformID), at.UnixMilli())
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() > 0, nil
}

func (p *Postgres) handled(ctx context.Context, key, platformID string) (bool, error) {
	var ok bool
	err := p.pool.QueryRow(ctx, `SELECT EXISTS(SELECT 1 FROM handled WHERE conv_key = $1 AND platform_id = $2)`, key, pgText(platformID)).Scan(&ok)
	return ok, err
}

func (p *Postgres) pruneHandled(ctx context.Context, before time.Time) error {
	_, err := p.pool.Exec(ctx, `DELETE FROM handled WHERE at < $1`, before.UnixMilli())
	return err
}
