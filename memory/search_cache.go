package memory

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ncruces/go-sqlite3"
	"github.com/recallbot/recall/memory/internal/fts"
)

// searchCache keeps, per conversation, the part of the index's doclists that
// searches have read: for each single-word term, its newest entries (all of
// them when the doclist was read to its end). A conversation's archive only
// grows at its newest end, so the next search reads nothing again: it reads
// the messages added since (a few rows of the messages table, by id), puts
// their terms into the cached doclists the way recall_fts put them into the
// index, and continues from the index only where a doclist is read further
// than before. Consecutive turns of a conversation share most of their words
// (names, topics), so most lookups of a turn's search cost no index read.
//
// The cache holds rowids (message ids and lengths) and counts, never text. It
// is dropped for a conversation when anything but an append changed it: a
// delete bumps the generation (purge, discard), and every search checks the
// conversation's message and token counts (kept by the index's triggers)
// against the cache's own, which catches the rest (another process, a
// snapshot older than the cache).
type searchCache struct {
	gen    atomic.Uint64 // bumped by every write that deletes or changes indexed messages
	served atomic.Uint64 // doclist reads that needed no index read

	mu    sync.Mutex
	tick  uint64
	convs map[int64]*convCache
	rows  int // entries of the conversations in convs, as of their last release
}

// Bounds of the cache: conversations kept, and doclist entries kept in all
// (16 bytes each: 32 MiB). The least recently searched conversations go
// first.
const (
	searchCacheConvs = 256
	searchCacheRows  = 1 << 21
)

func newSearchCache() *searchCache {
	return &searchCache{convs: map[int64]*convCache{}}
}

// convCache is one conversation's cached doclists, valid for the state where
// its messages up to lastID had been indexed, docs and toks being its
// search_docs and search_tokens then.
type convCache struct {
	mu         sync.Mutex // held by the search using it
	cache      *searchCache
	id         int64
	counted    int    // rows as counted in cache.rows (under cache.mu)
	used       uint64 // (under cache.mu)
	gen        uint64
	valid      bool
	lastID     int64
	docs, toks int64
	rows       int // entries cached in all
	terms      map[string]*termDoclist
}

// termDoclist is the newest part of a term's doclist.
type termDoclist struct {
	rows     []cachedRow // ascending rowids: the doclist's newest len(rows) entries
	complete bool        // rows is the whole doclist
}

// cachedRow is a doclist entry; for an r term, its instances in the sender's
// name and in the text's repeats (column extra).
type cachedRow struct {
	rowid         int64
	sender, extra int32
}

// WithoutSearchCache turns the doclist cache off until restore is called,
// which brings the same cache back: benchmarks measure index-only searches
// beside cached ones. Not safe while searches run.
func (s *SQLite) WithoutSearchCache() (restore func()) {
	c := s.search
	s.search = nil
	return func() { s.search = c }
}

// bump invalidates every conversation's cache; writers call it before and
// after a delete.
func (c *searchCache) bump() {
	if c != nil {
		c.gen.Add(1)
	}
}

// acquire returns conversation conv's cache, locked; release unlocks it.
func (c *searchCache) acquire(conv int64) *convCache {
	c.mu.Lock()
	c.tick++
	cc := c.convs[conv]
	if cc == nil {
		if len(c.convs) >= searchCacheConvs {
			c.evictLocked(nil)
		}
		cc = &convCache{cache: c, id: conv}
		c.convs[conv] = cc
	}
	cc.used = c.tick
	c.mu.Unlock()
	cc.mu.Lock()
	return cc
}

// evictLocked drops the least recently used conversation other than keep.
func (c *searchCache) evictLocked(keep *convCache) bool {
	var oldest *convCache
	for _, o := range c.convs {
		if o != keep && (oldest == nil || o.used < oldest.used) {
			oldest = o
		}
	}
	if oldest == nil {
		return false
	}
	delete(c.convs, oldest.id)
	c.rows -= oldest.counted
	return true
}

// release accounts for what the search added and unlocks the cache,
// evicting other conversations while the cache is over its bound.
func (cc *convCache) release() {
	if cc.rows > searchCacheRows/2 {
		cc.valid = false // one conversation may not take it all: start over next time
	}
	if !cc.valid {
		cc.rows, cc.terms = 0, nil
	}
	c := cc.cache
	c.mu.Lock()
	if c.convs[cc.id] == cc {
		c.rows += cc.rows - cc.counted
		cc.counted = cc.rows
		for c.rows > searchCacheRows && c.evictLocked(cc) {
		}
	}
	c.mu.Unlock()
	cc.mu.Unlock()
}

const (
	// The conversation's newest message id among its archived (?2 = 0) or
	// active (?2 = 1) messages, and the messages after ?3.
	sqlConvMaxID  = `SELECT coalesce(max(id), 0) FROM messages WHERE conv = ?1 AND is_active = ?2`
	sqlConvNewer  = `SELECT id, text, sender_name FROM messages WHERE conv = ?1 AND is_active = ?2 AND id > ?3`
	maxCacheDelta = 2000 // more new messages than this: start over
	// A doclist's rowids older than ?2, newest first.
	sqlTermRowsBefore = `SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 AND rowid < ?2 ORDER BY rowid DESC`
	// A doclist's rows older than ?3 with their instances (recall_tf), newest first.
	sqlTermOtherBefore = `SELECT recall_tf(messages_fts, ?2) FROM messages_fts WHERE messages_fts MATCH ?1 AND rowid < ?3 ORDER BY rowid DESC`
)

// syncCache brings the conversation's cache up to the search's snapshot, or
// starts it over.
func (r *searchRun) syncCache() error {
	cc := r.cc
	gen := r.cache.gen.Load()
	if cc.valid && cc.gen == gen {
		type newMsg struct {
			id           int64
			text, sender string
		}
		var news []newMsg
		for _, active := range []int{0, 1} {
			if err := r.each(sqlConvNewer, func(st *sqlite3.Stmt) bool {
				news = append(news, newMsg{st.ColumnInt64(0), st.ColumnText(1), st.ColumnText(2)})
				return len(news) <= maxCacheDelta
			}, r.conv, active, cc.lastID); err != nil {
				return err
			}
		}
		if len(news) <= maxCacheDelta && cc.docs+int64(len(news)) == r.nDocs {
			slices.SortFunc(news, func(a, b newMsg) int { return cmp.Compare(a.id, b.id) })
			toks := cc.toks
			type add struct {
				d   *termDoclist
				row cachedRow
			}
			var adds []add
			ok := true
			for _, m := range news {
				textToks, senderToks := fts.Tokens(m.text), fts.Tokens(m.sender)
				length := len(textToks) + len(senderToks)
				toks += int64(length)
				rowid, err := ftsRowid(m.id, length)
				if err != nil {
					ok = false
					break
				}
				inText := make(map[string]int32, len(textToks))
				for _, t := range textToks {
					inText[t]++
				}
				inSender := make(map[string]int32, len(senderToks))
				for _, t := range senderToks {
					inSender[t]++
				}
				for stem, n := range inText {
					if d := cc.terms[ftsTerm(r.prefix, ftsKindText, stem)]; d != nil {
						adds = append(adds, add{d, cachedRow{rowid: rowid}})
					}
					if n > 1 || inSender[stem] > 0 {
						if d := cc.terms[ftsTerm(r.prefix, ftsKindRest, stem)]; d != nil {
							adds = append(adds, add{d, cachedRow{rowid: rowid, sender: inSender[stem], extra: n - 1}})
						}
					}
				}
				for stem, n := range inSender {
					if inText[stem] > 0 {
						continue // done above
					}
					if d := cc.terms[ftsTerm(r.prefix, ftsKindRest, stem)]; d != nil {
						adds = append(adds, add{d, cachedRow{rowid: rowid, sender: n}})
					}
				}
			}
			if ok && toks == r.nToks {
				for _, a := range adds {
					a.d.rows = append(a.d.rows, a.row) // ids ascend: the doclist stays sorted
				}
				cc.rows += len(adds)
				cc.docs, cc.toks = r.nDocs, r.nToks
				if len(news) > 0 {
					cc.lastID = news[len(news)-1].id
				}
				return nil
			}
		}
	}
	// Start over at this snapshot.
	cc.valid, cc.gen, cc.docs, cc.toks, cc.rows, cc.lastID = true, gen, r.nDocs, r.nToks, 0, 0
	cc.terms = map[string]*termDoclist{}
	for _, active := range []int{0, 1} {
		if err := r.each(sqlConvMaxID, func(st *sqlite3.Stmt) bool {
			cc.lastID = max(cc.lastID, st.ColumnInt64(0))
			return true
		}, r.conv, active); err != nil {
			cc.valid = false
			return err
		}
	}
	return nil
}

// termRows calls fn with the rowids of a term's doclist, newest first, until
// it returns false or the doclist ends.
func (r *searchRun) termRows(term string, fn func(rowid int64) bool) error {
	if r.cc == nil {
		return r.each(sqlTermRows, func(st *sqlite3.Stmt) bool { return fn(st.ColumnInt64(0)) }, matchTerm(term))
	}
	return r.cachedRows(term, func(c cachedRow) bool { return fn(c.rowid) }, false)
}

// otherRows is termRows for an r term, with each entry's instances in the
// sender's name and in the text's repeats.
func (r *searchRun) otherRows(term string, fn func(c cachedRow) bool) error {
	if r.cc == nil {
		var cur cachedRow
		sink := &ftsRowSinkBuf{fn: func(rowid int64, insts []ftsInst) { cur = rowFromInsts(rowid, insts) }}
		return r.each(sqlTermOther, func(*sqlite3.Stmt) bool { return fn(cur) }, matchTerm(term), sink)
	}
	return r.cachedRows(term, fn, true)
}

func rowFromInsts(rowid int64, insts []ftsInst) cachedRow {
	c := cachedRow{rowid: rowid}
	for _, in := range insts {
		if in.col == 1 {
			c.sender++
		} else {
			c.extra++
		}
	}
	return c
}

// cachedRows serves a doclist from the cache, reading on from the index
// (and caching what it reads) when fn wants more than is cached.
func (r *searchRun) cachedRows(term string, fn func(c cachedRow) bool, insts bool) error {
	d := r.cc.terms[term]
	if d == nil {
		d = &termDoclist{}
		r.cc.terms[term] = d
	}
	for i := len(d.rows) - 1; i >= 0; i-- {
		if !fn(d.rows[i]) {
			r.cache.served.Add(1)
			return nil
		}
	}
	if d.complete {
		r.cache.served.Add(1)
		return nil
	}
	before := int64(math.MaxInt64)
	if len(d.rows) > 0 {
		before = d.rows[0].rowid
	}
	var older []cachedRow // newest first
	ended := true
	step := func(c cachedRow) bool {
		older = append(older, c)
		if !fn(c) {
			ended = false
			return false
		}
		return true
	}
	var err error
	if insts {
		var cur cachedRow
		sink := &ftsRowSinkBuf{fn: func(rowid int64, in []ftsInst) { cur = rowFromInsts(rowid, in) }}
		err = r.each(sqlTermOtherBefore, func(*sqlite3.Stmt) bool { return step(cur) }, matchTerm(term), sink, before)
	} else {
		err = r.each(sqlTermRowsBefore, func(st *sqlite3.Stmt) bool { return step(cachedRow{rowid: st.ColumnInt64(0)}) },
			matchTerm(term), before)
	}
	if err != nil {
		return err
	}
	slices.Reverse(older)
	d.rows = append(older, d.rows...)
	d.complete = ended
	r.cc.rows += len(older)
	return nil
}
