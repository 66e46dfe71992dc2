package memory

import (
	"context"
	"database/sql"
	"slices"
)

// ForgetFact implements Backend. The facts_ad trigger removes the fact from
// facts_fts (secure-delete: no trace stays in the index).
func (s *SQLite) ForgetFact(ctx context.Context, owner string, id int64) (bool, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM facts WHERE owner = ? AND id = ?`, owner, id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n > 0, err
}

// ForgetFact implements Backend.
func (j *JSON) ForgetFact(ctx context.Context, owner string, id int64) (bool, error) {
	if !j.Has(owner) {
		return false, nil
	}
	var found bool
	err := j.update(ctx, owner, func(f *jsonFile) (bool, error) {
		i := slices.IndexFunc(f.Data.Facts, func(x Fact) bool { return x.ID == id })
		if i < 0 {
			return false, nil
		}
		f.Data.Facts = slices.Delete(f.Data.Facts, i, i+1)
		found = true
		return true, nil
	})
	return found, err
}

// ForgetFact deletes one of the owner's facts (/facts forget).
func (s *Store) ForgetFact(ctx context.Context, owner string, id int64) (bool, error) {
	var found bool
	err := s.do(ctx, owner, func(ctx context.Context, b Backend) error {
		var err error
		found, err = b.ForgetFact(ctx, owner, id)
		return err
	})
	return found, err
}
