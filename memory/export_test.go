package memory

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/recallbot/recall/memory/internal/fts"
	"github.com/recallbot/recall/pipeline"
)

// SearchPlans returns SQLite's plans for the statements SQLite.Search runs
// per term of text (its text doclist and its other doclist), for the
// benchmarks' log.
func SearchPlans(ctx context.Context, sq *SQLite, key pipeline.Key, text string) (string, error) {
	conv, err := convID(ctx, sq.r, key)
	if err != nil {
		return "", err
	}
	terms := Terms(text)
	if len(terms) == 0 {
		return "", nil
	}
	stem := fts.Tokens(terms[0])[0]
	var plan []string
	for _, st := range []struct {
		query string
		args  []any
	}{
		{sqlTermRows, []any{matchTerm(ftsTerm(ftsConvPrefix(conv), ftsKindText, stem))}},
		{sqlTermOther, []any{matchTerm(ftsTerm(ftsConvPrefix(conv), ftsKindRest, stem)), nil}},
	} {
		rows, err := sq.r.QueryContext(ctx, `EXPLAIN QUERY PLAN `+st.query, st.args...)
		if err != nil {
			return "", err
		}
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				rows.Close()
				return "", err
			}
			plan = append(plan, detail)
		}
		rows.Close()
	}
	return strings.Join(plan, " | "), nil
}

// PurgeOneMessage purges one message through the SQLite backend's purge
// (what Store.PurgeMessage runs on SQLite).
func PurgeOneMessage(ctx context.Context, s *SQLite, key pipeline.Key, platformID string) (PurgeReport, error) {
	return s.purgeMessage(ctx, key, platformID, "")
}

// SearchPageFetches counts the database pages s's searches fetch from now
// on (page cache hits and misses: the pages the index was read through),
// summed, with the number of searches; stop ends the counting.
func SearchPageFetches(s *SQLite) (fetches func() (searches, pages int64), stop func()) {
	var n, pages int64
	s.searchTrace = func(r *searchRun) {
		n++
		hits, _, _ := r.c.Status(sqlite3.DBSTATUS_CACHE_HIT, true)
		misses, _, _ := r.c.Status(sqlite3.DBSTATUS_CACHE_MISS, true)
		pages += hits + misses
	}
	return func() (int64, int64) { return n, pages }, func() { s.searchTrace = nil }
}

// SearchWork counts the work of s's searches from now on: index statements
// run and pages read from the file (the readers' page cache misses), summed,
// with the number of searches; stop ends the counting.
func SearchWork(s *SQLite) (work func() (searches, statements, rows, pageReads int64), stop func()) {
	var n, stmts, rows, pages int64
	s.searchTrace = func(r *searchRun) {
		n++
		stmts += int64(r.traceLookups)
		rows += int64(r.traceRows)
		misses, _, _ := r.c.Status(sqlite3.DBSTATUS_CACHE_MISS, true)
		pages += misses
	}
	return func() (int64, int64, int64, int64) { return n, stmts, rows, pages }, func() { s.searchTrace = nil }
}

// PostingsBytes is the size of the doclists s's postings cache holds.
func PostingsBytes(s *SQLite) int {
	s.postings.mu.Lock()
	defer s.postings.mu.Unlock()
	return s.postings.bytes
}

// PostingsFull reports whether s's postings cache holds nearly its budget
// (within a common term's doclist of it).
func PostingsFull(s *SQLite) bool {
	return PostingsBytes(s) >= s.postings.budget-16*postingsCap
}

// TimeIDs runs what a search of a time range asks first: the ids bounding
// the messages of conversation key written in [from, to), through
// sqlTimeIDs, or with scan through the plain query it replaced.
func TimeIDs(ctx context.Context, s *SQLite, key pipeline.Key, from, to time.Time, scan bool) (lo, hi int64, err error) {
	q := sqlTimeIDs
	if scan {
		q = sqlTimeIDsScan
	}
	conv, err := convID(ctx, s.rd, key)
	if err != nil {
		return 0, 0, err
	}
	var l, h sql.NullInt64
	err = s.r.QueryRowContext(ctx, q, conv, from.UnixMilli(), to.UnixMilli()).Scan(&l, &h)
	return l.Int64, h.Int64, err
}
