package memory

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"time"
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

// FactQuery selects an owner's facts by words, tag, conversation and time:
// seed 001's fact search and metadata search in one.
type FactQuery struct {
	Text string // words, best match first; "" = newest first
	Tag  string // only facts with this tag (any case); "" = any
	// Key keeps the facts learned in this conversation (Key.String()) and
	// those that name none; "" = the owner's facts from every conversation.
	Key string
	// From and To bound when a fact was learned or last confirmed
	// (Created or Updated in [From, To)); a zero time is no bound.
	From, To time.Time
	Limit    int // at most this many (default 20)
}

// match reports whether f passes the query's filters (not its words).
func (q FactQuery) match(f Fact) bool {
	if q.Tag != "" && !slices.ContainsFunc(f.Tags, func(t string) bool { return strings.EqualFold(t, q.Tag) }) {
		return false
	}
	if q.Key != "" && f.Key != "" && f.Key != q.Key {
		return false
	}
	in := func(t time.Time) bool {
		return (q.From.IsZero() || !t.Before(q.From)) && (q.To.IsZero() || t.Before(q.To))
	}
	return in(f.Created) || in(f.Updated)
}

// factScan is how many of an owner's facts SearchFacts ranks before it
// filters. Extraction merges near-duplicates, so an owner has few; past
// this many, the filters apply to the best-ranked (or newest) factScan.
const factScan = 1000

// SearchFacts returns the owner's facts that match q, best first (newest
// first without words).
func (s *Store) SearchFacts(ctx context.Context, owner string, q FactQuery) ([]Fact, error) {
	if q.Limit <= 0 {
		q.Limit = 20
	}
	filtered := q.Tag != "" || q.Key != "" || !q.From.IsZero() || !q.To.IsZero()
	scan := q.Limit
	if filtered {
		scan = max(scan, factScan)
	}
	facts, err := s.Facts(ctx, owner, q.Text, scan)
	if err != nil {
		return nil, err
	}
	out := facts[:0]
	for _, f := range facts {
		if len(out) == q.Limit {
			break
		}
		if q.match(f) {
			out = append(out, f)
		}
	}
	return out, nil
}
