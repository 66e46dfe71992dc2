package memory

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/recallbot/recall/memory/internal/fts"
	"github.com/recallbot/recall/pipeline"
)

// searchTuning bounds the work of one SQLite search (see SQLite.Search).
type searchTuning struct {
	// exactUpTo: conversations with at most this many messages are ranked
	// exactly, whatever the query.
	exactUpTo int64
	// commonDF: in a bigger conversation, a term whose doclists hold more
	// entries than this is common.
	commonDF int
	// budget: at most this many doclist entries of rare terms are read in
	// all; once they are spent, the remaining terms are common.
	budget int
	// window: the conversation's newest window archived messages (and the
	// newer active ones) estimate common terms' frequencies, and the
	// densest common terms count in them only.
	window int
	// denseFactor: a term in more than denseFactor × commonDF / N of the
	// window's messages (and in older ones too) is common in the window.
	denseFactor int
}

var defaultSearchTuning = searchTuning{exactUpTo: 5000, commonDF: 1200, budget: 2500, window: 1024, denseFactor: 4}

// exactSearchTuning never prunes (tests compare with it).
var exactSearchTuning = searchTuning{exactUpTo: math.MaxInt64, commonDF: math.MaxInt32, budget: math.MaxInt32, window: math.MaxInt32, denseFactor: 1}

// Search implements Backend.
//
// Ranking is BM25 as FTS5's bm25() defines it (k1 = 1.2, b = 0.75, the text
// weighted 1.0 and the sender's name 0.5, Porter stemming, every query term a
// phrase; see package fts) with the statistics of the conversation
// searched: N is its number of messages, avgdl their mean length, a phrase's
// n the messages that contain it. The JSON backend uses the same statistics,
// so both backends score alike. Ties go to the most recent message;
// ArchivedOnly, Limit, TokenBudget and Exclude apply as documented on Query.
//
// How: every term of the index belongs to one conversation (search_index.go),
// so a doclist holds one conversation's messages and a search never reads
// another conversation's rows. The index's rowids carry each message's
// length, and which doclists a message is in (and how often, for the few
// where a stem repeats or is in the sender's name) give its term
// frequencies: BM25 is computed in Go from doclists, and only the messages
// returned are read from the messages table. A conversation of at least
// 1,000 messages has its whole index in memory once built in the
// background (search_full.go: its single terms' doclists and its newest
// messages are read from there, phrases of several tokens from FTS5); until
// then, or when it does not fit, the doclists the searches of one of at
// least 10,000 read are kept for its next ones (the postings cache,
// search_cache.go). Both are bounded and
// versioned by the conversation's search_gen and message count, so a search
// only ever sees the rows its read transaction holds, and both index the
// messages added since in Go.
//
// Pruning, the one approximation, bounds the doclist entries read. In a
// conversation of up to exactUpTo (5,000) messages nothing is pruned: the
// results are exactly the full BM25 ranking. In a bigger one, the query's
// distinct phrases are taken in query order, each rare (its doclists read
// whole, counted exactly) or common (its doclists truncated: it counts in
// some messages only, and its n is estimated). With limit = min(commonDF,
// budget - used), commonDF being 1,200, budget 2,500 and used the doclist
// entries read for the rare phrases before it, a single term is
//
//   - common in the window when limit is 0; or when it is in the text of
//     messages older than the window (below) and of more than denseFactor ×
//     commonDF × (window size) / N (4 × 1,200 × ... / N) of the window's, but
//     at most limit; or when its other doclist (the messages with it in the
//     sender's name or more than once in the text) has more than limit
//     entries; or when its text doclist does and its limit+1 newest are all
//     in the window;
//   - else common in its newest text when its text doclist has more than
//     limit entries: it counts in its limit+1 newest text messages, and in
//     the messages at least as new with it in the sender's name;
//   - else rare.
//
// A phrase of several tokens is common in the window when more than limit
// messages contain it, rare otherwise. The window is the conversation's
// newest window (1,024) archived messages and every message at least as new
// as the oldest of them (counting active messages instead when there are
// fewer archived ones). A common phrase counts, exactly, in the messages
// said and in no other (as if its doclists ended there); its n is estimated
// as (window messages containing it) × N / (window size). The results are
// the exact BM25 ranking of that truncated index: a message older than where
// a common term's doclist was cut is found only through the query's other
// terms and scored without that one, whose idf is low (recency breaks ties
// anyway). A query without common phrases is ranked exactly.
func (s *SQLite) Search(ctx context.Context, key pipeline.Key, q Query) ([]Hit, error) {
	hits, _, err := s.search(ctx, key, q, false)
	return hits, err
}

// SearchWithin answers Store.SearchWithin: the index is read once, and its
// candidates are ranked twice, within q's time range and over the whole
// conversation (what the doclists hold does not depend on the range, only
// which candidates are kept).
func (s *SQLite) SearchWithin(ctx context.Context, key pipeline.Key, q Query) (within, all []Hit, err error) {
	return s.search(ctx, key, q, true)
}

// search runs q; with also, it also ranks the same candidates without q's
// time range (all).
func (s *SQLite) search(ctx context.Context, key pipeline.Key, q Query, also bool) (hits, all []Hit, err error) {
	phrases := fts.Phrases(q.Text)
	if len(phrases) == 0 {
		return nil, nil, nil
	}
	err = s.read(ctx, func(c *sqlite3.Conn, sc *searchConn) error {
		sr := &searchRun{c: c, tune: s.searchTuning(), key: key, q: q, sc: sc, posts: sc.posts[:0], pcache: s.postings, full: s.full, trace: s.searchTrace}
		defer sr.close()
		var err error
		hits, err = sr.run(phrases)
		if err == nil && also && sr.ranked {
			sr.q.From, sr.q.To = time.Time{}, time.Time{}
			all, err = sr.top()
		}
		if s.searchTrace != nil {
			s.searchTrace(sr)
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("searching %s: %w", key, err)
	}
	hits = BudgetHits(hits, q)
	if also {
		q.From, q.To = time.Time{}, time.Time{}
		all = BudgetHits(all, q)
	}
	return hits, all, nil
}

// read runs fn in one read transaction (every statement sees the same
// data) on a reader connection, with what the connection keeps between
// reads (its statements, prepared once: searchConn).
func (s *SQLite) read(ctx context.Context, fn func(*sqlite3.Conn, *searchConn) error) error {
	conn, err := s.r.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		rc, ok := dc.(interface{ Raw() *sqlite3.Conn })
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		c := rc.Raw()
		old := c.SetInterrupt(ctx)
		defer c.SetInterrupt(old)
		if err := c.Exec(`BEGIN`); err != nil {
			return err
		}
		defer func() {
			c.SetInterrupt(context.Background())
			// A statement left stepping would keep the read transaction,
			// and its snapshot, past ROLLBACK: every later read on this
			// connection would miss what was written since.
			for st := range c.Stmts() {
				if st.Busy() {
					_ = st.Reset() // its error is the step's, reported by whoever stepped it
				}
			}
			_ = c.Exec(`ROLLBACK`)
		}()
		v, _ := s.searchConns.LoadOrStore(c, &searchConn{stmts: map[string]*sqlite3.Stmt{}})
		return fn(c, v.(*searchConn))
	})
}

func (s *SQLite) searchTuning() searchTuning {
	if s.tune != nil {
		return *s.tune
	}
	return defaultSearchTuning
}

// searchPhrase is one distinct phrase of the query (its stems).
type searchPhrase struct {
	toks   []string
	df     float64 // messages that contain it (estimated when common)
	idf    float64
	common bool
	recent bool      // common, and list holds its newest messages (not only the window's)
	list   []posting // the messages that count, newest first
	// postsAt: list is r.posts[postsAt:postsAt+len(list)] when >= 0
	postsAt int
}

// posting is a message (its rowid) and a phrase's weighted frequency in it.
type posting struct {
	rowid int64
	f     float64
}

type searchRun struct {
	c     *sqlite3.Conn
	tune  searchTuning
	key   pipeline.Key
	q     Query
	sc    *searchConn
	posts []posting // backs the rare phrases' postings

	conv         int64
	nDocs, nToks int64
	avgdl        float64
	prefix       string
	ph           []*searchPhrase
	slot         []int          // query phrase -> ph index (-1: matches nothing)
	used         int            // doclist entries of rare terms read
	cutRowid     int64          // rowids from here on are the window's
	winSize      int64          // messages in the window
	candidates   int            // messages scored
	active       map[int64]bool // activeIDs, once activeRead
	activeRead   bool
	ranked       bool // the phrases are read: top may rank them (again)
	pcache       *postingsCache
	pe           *postingsEntry // the conversation's cached doclists (locked), or nil
	full         *fullIndexes
	fe           *fullEntry // the conversation's index in memory (locked), or nil

	// searchTrace only
	trace                   func(*searchRun) // the store's searchTrace
	tracePhase              string
	traceDur                map[string]time.Duration
	traceLookups, traceRows int
}

func (r *searchRun) phase(name string) {
	if r.trace != nil {
		if r.traceDur == nil {
			r.traceDur = map[string]time.Duration{}
		}
		r.tracePhase = name
	}
}

// searchConn is what a reader connection keeps between reads (searches,
// AroundReach): its prepared statements and scratch buffers (a connection
// runs one read at a time).
type searchConn struct {
	stmts map[string]*sqlite3.Stmt
	rows  []int64
	posts []posting
}

// closeSearchStmts finalizes a connection's statements; the reader pool
// calls it before closing a connection.
func (s *SQLite) closeSearchStmts(c *sqlite3.Conn) error {
	if v, ok := s.searchConns.LoadAndDelete(c); ok {
		for _, st := range v.(*searchConn).stmts {
			_ = st.Close() // finalizing; the connection closes next
		}
	}
	return nil
}

func (r *searchRun) close() {
	if r.fe != nil {
		r.full.release(r.fe)
		r.fe = nil
	}
	if r.pe != nil {
		r.pcache.release(r.pe)
		r.pe = nil
	}
	for _, st := range r.sc.stmts {
		_ = st.Reset()
	}
	// Keep the largest buffers for the next search.
	if cap(r.posts) > cap(r.sc.posts) {
		r.sc.posts = r.posts[:0]
	}
}

func (r *searchRun) stmt(query string) (*sqlite3.Stmt, error) {
	if st, ok := r.sc.stmts[query]; ok {
		if err := st.Reset(); err != nil {
			return nil, err
		}
		return st, st.ClearBindings()
	}
	st, _, err := r.c.PrepareFlags(query, sqlite3.PREPARE_PERSISTENT)
	if err != nil {
		return nil, err
	}
	r.sc.stmts[query] = st
	return st, nil
}

// each runs query with args, calling fn for every row.
func (r *searchRun) each(query string, fn func(*sqlite3.Stmt) bool, args ...any) error {
	if r.trace != nil {
		t0 := time.Now()
		defer func() { r.traceDur[r.tracePhase] += time.Since(t0) }()
		r.traceLookups++
		inner := fn
		fn = func(st *sqlite3.Stmt) bool { r.traceRows++; return inner(st) }
	}
	st, err := r.stmt(query)
	if err != nil {
		return err
	}
	for i, a := range args {
		switch v := a.(type) {
		case string:
			err = st.BindText(i+1, v)
		case int64:
			err = st.BindInt64(i+1, v)
		case int:
			err = st.BindInt64(i+1, int64(v))
		case *ftsRowSinkBuf:
			err = st.BindPointer(i+1, v)
		default:
			err = fmt.Errorf("bad argument %T", a)
		}
		if err != nil {
			return err
		}
	}
	for st.Step() {
		if !fn(st) {
			return st.Reset()
		}
	}
	return st.Err()
}

const (
	sqlSearchConv = `SELECT id, search_docs, search_tokens, search_gen FROM conversations WHERE key = ?1`
	// The id of the conversation's ?3-th newest archived (?2 = 0) or active
	// (?2 = 1) message, and how many of the others are at least as new.
	sqlWindowCut = `SELECT id, (SELECT count(*) FROM messages WHERE conv = ?1 AND is_active = 1 - ?2 AND id >= w.id)
		FROM (SELECT id FROM messages WHERE conv = ?1 AND is_active = ?2 ORDER BY id DESC LIMIT 1 OFFSET ?3 - 1) w`
	// A doclist's rowids, newest first.
	sqlTermRows = `SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 ORDER BY rowid DESC`
	// A doclist's rows and their instances (recall_tf), newest first.
	sqlTermOther = `SELECT recall_tf(messages_fts, ?2) FROM messages_fts WHERE messages_fts MATCH ?1 ORDER BY rowid DESC`
	// Rows and their phrase instances (recall_tf), newest first.
	sqlPhraseRows = `SELECT recall_tf(messages_fts, ?2) FROM messages_fts WHERE messages_fts MATCH ?1 ORDER BY rowid DESC`
	// The same, in the window (newest first: FTS5 seeks a lower bound on
	// rowids slowly in ascending order).
	sqlWindowRows = `SELECT rowid, recall_tf(messages_fts, ?2) FROM messages_fts WHERE messages_fts MATCH ?1 AND rowid >= ?3 ORDER BY rowid DESC`
	sqlActiveIDs  = `SELECT id FROM messages WHERE conv = ?1 AND is_active = 1` // no LIMIT ?: see sqlite.go, "No bound LIMIT"
	// The least and greatest ids of the conversation's messages written in
	// [?2, ?3) ms. Every message written then (g: its index holds their
	// ids, no row is read) lies between those of all conversations; from
	// each end of that span, the conversation's first message of the time
	// is found through its own index (archived, then active), reading its
	// rows in id order only until one is. Filtering the time index by
	// conversation read every row of the time instead (25 ms for a year of
	// 50,000 messages, 13 this way: sqlTimeIDsScan in the tests).
	sqlTimeIDs = `WITH g(lo, hi) AS MATERIALIZED (SELECT min(id), max(id) FROM messages WHERE created_at >= ?2 AND created_at < ?3),
	f(a0, a1) AS MATERIALIZED (SELECT
		(SELECT id FROM messages WHERE conv = ?1 AND is_active = 0 AND id >= (SELECT lo FROM g) AND id <= (SELECT hi FROM g) AND created_at >= ?2 AND created_at < ?3 ORDER BY id LIMIT 1),
		(SELECT id FROM messages WHERE conv = ?1 AND is_active = 1 AND id >= (SELECT lo FROM g) AND id <= (SELECT hi FROM g) AND created_at >= ?2 AND created_at < ?3 ORDER BY id LIMIT 1)),
	l(b0, b1) AS MATERIALIZED (SELECT
		(SELECT id FROM messages WHERE conv = ?1 AND is_active = 0 AND id >= (SELECT lo FROM g) AND id <= (SELECT hi FROM g) AND created_at >= ?2 AND created_at < ?3 ORDER BY id DESC LIMIT 1),
		(SELECT id FROM messages WHERE conv = ?1 AND is_active = 1 AND id >= (SELECT lo FROM g) AND id <= (SELECT hi FROM g) AND created_at >= ?2 AND created_at < ?3 ORDER BY id DESC LIMIT 1))
	SELECT min(coalesce(a0, a1), coalesce(a1, a0)), max(coalesce(b0, b1), coalesce(b1, b0)) FROM f, l`
	sqlSearchFetch = `SELECT m.conv, ` + msgColumns + ` FROM messages m WHERE m.id IN (SELECT value FROM json_each(?1))`
)

// activeCap: ArchivedOnly reads the active messages' ids when there are at
// most this many; otherwise each message is checked as it is read.
const activeCap = 4096

func (r *searchRun) run(phrases [][]string) ([]Hit, error) {
	found := false
	var gen int64
	r.phase("conv")
	if err := r.each(sqlSearchConv, func(st *sqlite3.Stmt) bool {
		r.conv, r.nDocs, r.nToks, gen, found = st.ColumnInt64(0), st.ColumnInt64(1), st.ColumnInt64(2), st.ColumnInt64(3), true
		return true
	}, r.key.String()); err != nil {
		return nil, err
	}
	if !found || r.nDocs <= 0 {
		return nil, nil
	}
	r.avgdl = float64(r.nToks) / float64(r.nDocs)
	r.prefix = ftsConvPrefix(r.conv)
	r.phase("cache")
	fe, err := r.full.acquire(r, gen)
	if err != nil {
		return nil, err
	}
	if r.fe = fe; fe == nil {
		pe, err := r.pcache.acquire(r, gen)
		if err != nil {
			return nil, err
		}
		r.pe = pe
	}

	// Distinct phrases; a repeated one still counts once per repetition.
	r.slot = make([]int, len(phrases))
	seen := map[string]int{}
	for i, p := range phrases {
		if len(p) == 0 {
			r.slot[i] = -1
			continue
		}
		k := strings.Join(p, " ")
		j, ok := seen[k]
		if !ok {
			j = len(r.ph)
			seen[k] = j
			r.ph = append(r.ph, &searchPhrase{toks: p, postsAt: -1})
		}
		r.slot[i] = j
	}
	if len(r.ph) == 0 {
		return nil, nil
	}
	exact := r.nDocs <= r.tune.exactUpTo
	r.cutRowid, r.winSize = math.MinInt64, r.nDocs
	if !exact {
		r.phase("window")
		if err := r.findWindow(); err != nil {
			return nil, err
		}
	}
	var common []int
	for pi, p := range r.ph {
		limit := math.MaxInt32
		if !exact {
			limit = max(0, min(r.tune.commonDF, r.tune.budget-r.used))
		}
		var err error
		if len(p.toks) == 1 {
			r.phase("rare")
			err = r.readTerm(pi, p, limit)
		} else {
			r.phase("phrase")
			err = r.readPhrase(pi, p, limit)
		}
		if err != nil {
			return nil, err
		}
		if p.common && !p.recent {
			common = append(common, pi)
		}
	}
	if r.q.MaxShare > 0 {
		// The common phrases are left out (Query.MaxShare).
		for pi, p := range r.ph {
			if p.common {
				p.list, p.postsAt = nil, -1
				for i, s := range r.slot {
					if s == pi {
						r.slot[i] = -1
					}
				}
			}
		}
		common = nil
	}
	if len(common) > 0 {
		r.phase("common")
		if err := r.readWindow(common); err != nil {
			return nil, err
		}
	}
	for _, p := range r.ph {
		p.idf = fts.IDF(float64(r.nDocs), p.df)
	}
	r.phase("top")
	r.ranked = true
	return r.top()
}

// readTerm reads a single-token phrase's doclists: whole when each holds at
// most limit entries (a rare term). Otherwise the term is common (see
// Search): when its newest limit+1 text entries reach back past the window,
// they (with its other entries as new) are its postings; else it counts in
// the window only, read later by readWindow. The text doclist is read newest
// first, so a term dense in the window is known as soon as it leaves it.
func (r *searchRun) readTerm(pi int, p *searchPhrase, limit int) error {
	limit = min(limit, r.mostInWindow())
	if limit <= 0 {
		p.common = true
		return nil
	}
	text := r.sc.rows[:0]
	defer func() { r.sc.rows = text[:0] }()
	crossed := false
	termRows, otherRows := r.termRows, r.otherRows
	switch {
	case r.fe != nil:
		termRows, otherRows = r.fullTermRows, r.fullOtherRows
	case r.pe != nil:
		termRows, otherRows = r.cachedTermRows, r.cachedOtherRows
	}
	err := termRows(ftsTerm(r.prefix, ftsKindText, p.toks[0]), func(rowid int64) bool {
		if !crossed && rowid < r.cutRowid {
			// Its first message older than the window: how frequent is
			// the term in the window?
			crossed = true
			if float64(len(text))*float64(r.nDocs) > float64(r.tune.denseFactor)*float64(r.tune.commonDF)*float64(r.winSize) {
				p.common = true
				return false
			}
		}
		text = append(text, rowid)
		return len(text) <= limit
	})
	if err != nil || p.common {
		return err
	}
	// More than limit messages: common. Their newest limit+1 are read: when
	// they reach back past the window, they are the term's doclist.
	truncated := len(text) > limit
	if truncated && text[len(text)-1] >= r.cutRowid {
		p.common = true
		return nil
	}
	// The other doclist: occurrences in the sender's name (column sender)
	// and repeats in the text (column extra).
	more := map[int64]float64{}
	rest := 0
	if r.q.TextOnly {
		otherRows = noRows // Query.TextOnly
	}
	err = otherRows(ftsTerm(r.prefix, ftsKindRest, p.toks[0]), func(c docRow) bool {
		rest++
		if !truncated || c.rowid >= text[len(text)-1] {
			// In the sender's name, or another occurrence in the text.
			more[c.rowid] += 0.5*float64(c.sender) + float64(c.extra)
		}
		return rest <= limit
	})
	if err != nil {
		return err
	}
	if rest > limit {
		p.common = true
		return nil
	}
	var only []int64 // in the sender's name only
	for rowid := range more {
		if _, ok := slices.BinarySearchFunc(text, rowid, cmpDesc); !ok {
			only = append(only, rowid)
		}
	}
	slices.SortFunc(only, cmpDesc)
	start := len(r.posts)
	for i, j := 0, 0; i < len(text) || j < len(only); {
		if j == len(only) || i < len(text) && text[i] > only[j] {
			r.posts = append(r.posts, posting{text[i], 1 + more[text[i]]})
			i++
		} else {
			r.posts = append(r.posts, posting{only[j], more[only[j]]})
			j++
		}
	}
	// Lists point into r.posts; one that moved on growth is fixed in top.
	p.list, p.postsAt = r.posts[start:], start
	if truncated {
		// Common, counting in these messages; n estimated from the window.
		p.common, p.recent = true, true
		inWindow := sort.Search(len(p.list), func(i int) bool { return p.list[i].rowid < r.cutRowid })
		p.df = float64(inWindow) * float64(r.nDocs) / float64(r.winSize)
		return nil
	}
	p.df = float64(len(p.list))
	r.used += len(text) + rest
	return nil
}

// noRows is a doclist read that finds nothing.
func noRows(string, func(docRow) bool) error { return nil }

// mostInWindow is how many messages a phrase may be in before it is
// common: Query.MaxShare of the window's (the phrase is then left out),
// else no bound.
func (r *searchRun) mostInWindow() int {
	if r.q.MaxShare <= 0 {
		return math.MaxInt
	}
	return int(r.q.MaxShare * float64(r.winSize))
}

func cmpDesc(a, b int64) int { return cmp.Compare(b, a) }

// phraseExpr is the MATCH expression of a phrase in the text (phrase 0) or
// the sender's name (phrase 1).
func (r *searchRun) phraseExpr(p *searchPhrase) string {
	words := func(kind byte) string {
		out := make([]string, len(p.toks))
		for i, t := range p.toks {
			out[i] = ftsTerm(r.prefix, kind, t)
		}
		return matchTerm(out...)
	}
	return words(ftsKindText) + ` OR sender : ` + words(ftsKindRest)
}

// phraseSink collects rows and their instances of the phrases of an
// expression built by phraseExpr (phrase 2j: phrase j in the text; 2j+1: in
// the sender's name).
func phraseSink(n int, fn func(rowid int64, text, sender []int)) *ftsRowSinkBuf {
	text, sender := make([]int, n), make([]int, n)
	return &ftsRowSinkBuf{fn: func(rowid int64, insts []ftsInst) {
		clear(text)
		clear(sender)
		for _, in := range insts {
			switch j := in.phrase / 2; {
			case j >= n:
			case in.phrase%2 == 0:
				text[j]++
			case in.col == 1:
				sender[j]++
			}
		}
		fn(rowid, text, sender)
	}}
}

// readPhrase reads a phrase of several tokens whole when at most limit rows
// contain it; otherwise it marks it common.
func (r *searchRun) readPhrase(pi int, p *searchPhrase, limit int) error {
	limit = min(limit, r.mostInWindow())
	if limit <= 0 {
		p.common = true
		return nil
	}
	var rows []posting
	sink := phraseSink(1, func(rowid int64, text, sender []int) {
		if f := float64(text[0]) + 0.5*float64(sender[0]); f > 0 {
			rows = append(rows, posting{rowid, f})
		}
	})
	if err := r.each(sqlPhraseRows, func(*sqlite3.Stmt) bool { return len(rows) <= limit }, r.phraseExpr(p), sink); err != nil {
		return err
	}
	if len(rows) > limit {
		p.common = true
		return nil
	}
	p.list, p.df = rows, float64(len(rows))
	r.used += len(rows)
	return nil
}

// activeIDs are the ids of the conversation's active messages, read once
// per search; nil when there are more than activeCap.
func (r *searchRun) activeIDs() (map[int64]bool, error) {
	if r.activeRead {
		return r.active, nil
	}
	ids := map[int64]bool{}
	if err := r.each(sqlActiveIDs, func(st *sqlite3.Stmt) bool {
		ids[st.ColumnInt64(0)] = true
		return len(ids) <= activeCap
	}, r.conv); err != nil {
		return nil, err
	}
	if len(ids) > activeCap {
		ids = nil
	}
	r.active, r.activeRead = ids, true
	return ids, nil
}

// findWindow finds the conversation's newest messages, at least window of
// them: the rowids from cutRowid on, winSize messages. The window's oldest
// message is the window-th newest archived one (or active one, if there are
// fewer archived), so it holds exactly window of those and all the others
// that are as new.
func (r *searchRun) findWindow() error {
	r.cutRowid, r.winSize = math.MinInt64, r.nDocs
	if r.nDocs <= int64(r.tune.window) {
		return nil
	}
	if r.fe != nil {
		if done, err := r.findWindowFull(); done || err != nil {
			return err
		}
	}
	for _, kind := range []int{0, 1} {
		found := false
		var cut, others int64
		if err := r.each(sqlWindowCut, func(st *sqlite3.Stmt) bool {
			cut, others, found = st.ColumnInt64(0), st.ColumnInt64(1), true
			return true
		}, r.conv, kind, r.tune.window); err != nil {
			return err
		}
		if found {
			r.cutRowid, r.winSize = cut<<ftsLenBits, int64(r.tune.window)+others
			return nil
		}
	}
	return nil
}

// readWindow reads the common phrases' rows in the window and estimates
// how many messages contain each.
func (r *searchRun) readWindow(all []int) error {
	common := all
	if r.fe != nil {
		// Single terms from the index in memory; phrases of several from
		// SQLite (it has no positions).
		common = nil
		for _, pi := range all {
			if p := r.ph[pi]; len(p.toks) == 1 {
				r.fullWindowRows(p)
			} else {
				common = append(common, pi)
			}
		}
	}
	defer func() {
		for _, pi := range all {
			p := r.ph[pi]
			p.df = float64(len(p.list)) * float64(r.nDocs) / float64(r.winSize)
		}
	}()
	if len(common) == 0 {
		return nil
	}
	var expr []string
	for _, pi := range common {
		expr = append(expr, r.phraseExpr(r.ph[pi]))
	}
	sink := phraseSink(len(common), func(rowid int64, text, sender []int) {
		for j, pi := range common {
			if f := float64(text[j]) + 0.5*float64(sender[j]); f > 0 {
				r.ph[pi].list = append(r.ph[pi].list, posting{rowid, f})
			}
		}
	})
	return r.each(sqlWindowRows, func(*sqlite3.Stmt) bool { return true }, strings.Join(expr, " OR "), sink, r.cutRowid)
}

// beats reports whether (score, id) ranks above (s2, id2).
func beats(score float64, id int64, s2 float64, id2 int64) bool {
	return score > s2 || score == s2 && id > id2
}

// top scores the candidates (the messages in the phrases' postings) and
// returns the best limit+len(Exclude).
func (r *searchRun) top() ([]Hit, error) {
	limit := r.q.Limit
	if limit <= 0 {
		limit = 20
	}
	want := limit + len(r.q.Exclude)
	// A time range: the messages' ids in it bound the candidates (their
	// times are checked when they are read).
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if r.q.timed() {
		from, to := int64(math.MinInt64), int64(math.MaxInt64)
		if !r.q.From.IsZero() {
			from = r.q.From.UnixMilli()
		}
		if !r.q.To.IsZero() {
			to = r.q.To.UnixMilli()
		}
		found := false
		if err := r.each(sqlTimeIDs, func(st *sqlite3.Stmt) bool {
			if st.ColumnType(0) != sqlite3.NULL {
				lo, hi, found = st.ColumnInt64(0), st.ColumnInt64(1), true
			}
			return true
		}, r.conv, from, to); err != nil {
			return nil, err
		}
		if !found {
			return nil, nil
		}
	}
	var active map[int64]bool
	activeKnown := !r.q.ArchivedOnly
	if r.q.ArchivedOnly {
		ids, err := r.activeIDs()
		if err != nil {
			return nil, err
		}
		if ids != nil {
			active, activeKnown = ids, true
		}
	}
	// No candidate older than the oldest active message is active: only
	// newer ones are looked up.
	minActive := int64(math.MaxInt64)
	for id := range active {
		minActive = min(minActive, id)
	}
	type scored struct {
		id    int64
		score float64
	}
	better := func(a, b scored) int {
		switch {
		case beats(a.score, a.id, b.score, b.id):
			return -1
		case beats(b.score, b.id, a.score, a.id):
			return 1
		}
		return 0
	}
	// Merge the postings, newest first, keeping the best want (all of them
	// when whether a message is active is only known once it is read).
	var best []scored
	keep := func(c scored) {
		switch {
		case !activeKnown:
			best = append(best, c) // sorted below
		case len(best) < want || better(c, best[want-1]) < 0:
			i, _ := slices.BinarySearchFunc(best, c, better)
			best = slices.Insert(best, i, c)
			if len(best) > want {
				best = best[:want]
			}
		}
	}
	for _, p := range r.ph {
		if p.postsAt >= 0 {
			p.list = r.posts[p.postsAt : p.postsAt+len(p.list)]
		}
	}
	// The candidates, newest first: a max-heap of the phrases by the rowid
	// at the head of their postings.
	n := len(r.ph)
	heads := make([]int, n)
	f := make([]float64, n)
	heap := make(rowidHeap, 0, n)
	for pi, p := range r.ph {
		if len(p.list) > 0 {
			heap = append(heap, headOf{p.list[0].rowid, pi})
		}
	}
	heap.init()
	at := make([]int, 0, n) // the phrases whose head is the candidate
	for len(heap) > 0 {
		rowid := heap[0].rowid
		for _, pi := range at {
			f[pi] = 0
		}
		at = at[:0]
		for len(heap) > 0 && heap[0].rowid == rowid {
			at = append(at, heap.pop().phrase)
		}
		for _, pi := range at {
			p := r.ph[pi]
			f[pi] = p.list[heads[pi]].f
			heads[pi]++
			if h := heads[pi]; h < len(p.list) {
				heap.push(headOf{p.list[h].rowid, pi})
			}
		}
		r.candidates++
		id := ftsRowidID(rowid)
		if id >= minActive && active[id] || id < lo || id > hi {
			continue
		}
		D := float64(ftsRowidLen(rowid))
		// In query order, as every backend sums; a phrase not in the
		// message adds exactly +0 (its f is 0, its idf positive), so it is
		// skipped.
		score := 0.0
		for _, pi := range r.slot {
			if pi >= 0 && f[pi] != 0 {
				score += fts.TermScore(r.ph[pi].idf, f[pi], D, r.avgdl)
			}
		}
		keep(scored{id, score})
	}
	if !activeKnown {
		slices.SortFunc(best, better)
	}
	hits := make([]Hit, 0, min(want, len(best)))
	for len(best) > 0 && len(hits) < want {
		// Read the next ones in one statement.
		batch := best[:min(len(best), want-len(hits))]
		best = best[len(batch):]
		ids := make([]int64, len(batch))
		for i, c := range batch {
			ids[i] = c.id
		}
		msgs, err := r.fetch(ids)
		if err != nil {
			return nil, err
		}
		for _, c := range batch {
			if m, ok := msgs[c.id]; ok && !(m.Active && !activeKnown) && r.q.inTime(m.Time) {
				hits = append(hits, Hit{Message: *m, Score: c.score})
			}
		}
	}
	return hits, nil
}

// fetch reads messages of the conversation.
func (r *searchRun) fetch(ids []int64) (map[int64]*Message, error) {
	out := make(map[int64]*Message, len(ids))
	err := r.each(sqlSearchFetch, func(st *sqlite3.Stmt) bool {
		if st.ColumnInt64(0) != r.conv {
			return true
		}
		m := stmtMessage(st, 1, r.key)
		out[m.ID] = &m
		return true
	}, jsonIDs(ids))
	return out, err
}

// stmtMessage is the message of key in st's current row, whose columns
// from, on are msgColumns.
func stmtMessage(st *sqlite3.Stmt, from int, key pipeline.Key) Message {
	return Message{
		Key:        key,
		ID:         st.ColumnInt64(from),
		Role:       Role(st.ColumnText(from + 1)),
		SenderID:   st.ColumnText(from + 2),
		SenderName: st.ColumnText(from + 3),
		PlatformID: st.ColumnText(from + 4),
		ReplyTo:    st.ColumnText(from + 5),
		Text:       st.ColumnText(from + 6),
		Time:       time.UnixMilli(st.ColumnInt64(from + 7)).UTC(),
		Tokens:     st.ColumnInt(from + 8),
		Active:     st.ColumnInt(from+9) == 1,
		ChunkID:    st.ColumnInt64(from + 10),
	}
}

func matchTerm(terms ...string) string { return `"` + strings.Join(terms, " ") + `"` }

// headOf is a phrase's next posting in top's merge.
type headOf struct {
	rowid  int64
	phrase int
}

// rowidHeap is a max-heap of heads by rowid.
type rowidHeap []headOf

func (h rowidHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *rowidHeap) push(x headOf) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if s[parent].rowid >= s[i].rowid {
			break
		}
		s[parent], s[i] = s[i], s[parent]
		i = parent
	}
}

func (h *rowidHeap) pop() headOf {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	*h = s[:last]
	h.down(0)
	return top
}

func (h rowidHeap) down(i int) {
	for {
		big := i
		if l := 2*i + 1; l < len(h) && h[l].rowid > h[big].rowid {
			big = l
		}
		if r := 2*i + 2; r < len(h) && h[r].rowid > h[big].rowid {
			big = r
		}
		if big == i {
			return
		}
		h[i], h[big] = h[big], h[i]
		i = big
	}
}
