package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/recallbot/recall/access"
	"github.com/recallbot/recall/pipeline"
)

// The access decisions and pairing requests live in SQLite (migration 0002),
// whatever backend an owner chose: they are about who may talk to the bot,
// not anyone's history.
var _ access.Store = (*Store)(nil)

const (
	sqlAccessRules = `SELECT user_id, allowed, decided_by, updated_at FROM access ORDER BY user_id`
	sqlPutAccess   = `INSERT INTO access(user_id, allowed, decided_by, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT(user_id) DO UPDATE SET allowed = excluded.allowed, decided_by = excluded.decided_by, updated_at = excluded.updated_at`
	sqlPairing    = `SELECT user_id, code, name, chat_key, created_at, expires_at FROM pairing ORDER BY created_at, user_id`
	sqlPutPairing = `INSERT INTO pairing(user_id, code, name, chat_key, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT(user_id) DO UPDATE SET code = excluded.code, name = excluded.name, chat_key = excluded.chat_key,
		created_at = excluded.created_at, expires_at = excluded.expires_at`
	sqlDeletePairing = `DELETE FROM pairing WHERE user_id = ?`
)

// AccessRules implements access.Store.
func (s *Store) AccessRules(ctx context.Context) ([]access.Rule, error) {
	if s.pg != nil {
		out, err := s.pg.accessRules(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading access decisions: %w", err)
		}
		return out, nil
	}
	rows, err := s.sqlite.r.QueryContext(ctx, sqlAccessRules)
	if err != nil {
		return nil, fmt.Errorf("reading access decisions: %w", err)
	}
	defer rows.Close()
	var out []access.Rule
	for rows.Next() {
		var r access.Rule
		var at int64
		if err := rows.Scan(&r.UserID, &r.Allowed, &r.By, &at); err != nil {
			return nil, fmt.Errorf("reading access decisions: %w", err)
		}
		r.Updated = fromMillis(at)
		out = append(out, r)
	}
	return out, rows.Err()
}

// PutAccessRule implements access.Store.
func (s *Store) PutAccessRule(ctx context.Context, r access.Rule) error {
	if r.UserID == "" {
		return fmt.Errorf("storing an access decision: empty user id")
	}
	if r.Updated.IsZero() {
		r.Updated = time.Now()
	}
	if s.pg != nil {
		if err := s.pg.putAccessRule(ctx, r); err != nil {
			return fmt.Errorf("storing the access decision for %s: %w", r.UserID, err)
		}
		return nil
	}
	if _, err := s.sqlite.w.ExecContext(ctx, sqlPutAccess, r.UserID, r.Allowed, r.By, r.Updated.UnixMilli()); err != nil {
		return fmt.Errorf("storing the access decision for %s: %w", r.UserID, err)
	}
	return nil
}

// PairingRequests implements access.Store.
func (s *Store) PairingRequests(ctx context.Context) ([]access.PairingRequest, error) {
	if s.pg != nil {
		out, err := s.pg.pairingRequests(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading pairing requests: %w", err)
		}
		return out, nil
	}
	rows, err := s.sqlite.r.QueryContext(ctx, sqlPairing)
	if err != nil {
		return nil, fmt.Errorf("reading pairing requests: %w", err)
	}
	defer rows.Close()
	var out []access.PairingRequest
	for rows.Next() {
		var r access.PairingRequest
		var key string
		var created, expires int64
		if err := rows.Scan(&r.UserID, &r.Code, &r.Name, &key, &created, &expires); err != nil {
			return nil, fmt.Errorf("reading pairing requests: %w", err)
		}
		if key != "" {
			r.Key, _ = pipeline.ParseKey(key) // a bad key only costs the "you're in" message
		}
		r.Created, r.Expires = fromMillis(created), fromMillis(expires)
		out = append(out, r)
	}
	return out, rows.Err()
}

// PutPairingRequest implements access.Store.
func (s *Store) PutPairingRequest(ctx context.Context, r access.PairingRequest) error {
	if r.UserID == "" || r.Code == "" {
		return fmt.Errorf("storing a pairing request: user id and code are required")
	}
	key := ""
	if !r.Key.IsZero() {
		key = r.Key.String()
	}
	var err error
	if s.pg != nil {
		err = s.pg.putPairingRequest(ctx, r, key)
	} else {
		_, err = s.sqlite.w.ExecContext(ctx, sqlPutPairing, r.UserID, r.Code, r.Name, key, r.Created.UnixMilli(), r.Expires.UnixMilli())
	}
	if err != nil {
		return fmt.Errorf("storing the pairing request of %s: %w", r.UserID, err)
	}
	return nil
}

// DeletePairingRequest implements access.Store.
func (s *Store) DeletePairingRequest(ctx context.Context, userID string) error {
	if s.pg != nil {
		if err := s.pg.deletePairingRequest(ctx, userID); err != nil {
			return fmt.Errorf("deleting the pairing request of %s: %w", userID, err)
		}
		return nil
	}
	if _, err := s.sqlite.w.ExecContext(ctx, sqlDeletePairing, userID); err != nil {
		return fmt.Errorf("deleting the pairing request of %s: %w", userID, err)
	}
	return nil
}
