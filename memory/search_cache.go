package memory

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ncruces/go-sqlite3"
)

// postingsCache owns the doclists that searches of big conversations read,
// kept between searches: a busy conversation's next search reads the index
// only for the words it has not met yet, and the messages added since the
// last search, which it indexes itself (search_index.go's derivation).
//
// A conversation's entry holds, for each term read, the newest part of its
// doclist (at most postingsCap entries; complete when the doclist is no
// longer), as the index held it in one state of the conversation: its
// search_gen (migration 0006: it changes with everything but an added
// message), its search_docs (its messages) and the greatest id among them.
// A search reads those three in its read transaction and uses the entry
// only when they tell the same rows, or rows added since (more messages,
// the same search_gen, and as many messages of greater id as were added;
// then they are added to the entry first). A search whose snapshot is older
// than the entry reads the index. An entry is used by one search at a time
// (its lock), so it always describes the snapshot of the search holding it.
//
// Bounded: only conversations of at least postingsFrom messages are cached,
// the entries' doclists take at most postingsBudget bytes in all (a
// conversation's least recently read doclists go first when it alone takes
// more, then the least recently searched conversations).
type postingsCache struct {
	mu      sync.Mutex
	entries map[int64]*postingsEntry
	bytes   int // of every unlocked entry's doclists, as last measured
	tick    uint64
	from    int64 // postingsFrom
	budget  int   // postingsBudget
	rowsCap int   // postingsCap
	// served counts the doclists read from the cache, added the times
	// messages were added to an entry, dropped the doclists dropped to
	// keep an entry within the budget (tests).
	served, added, dropped atomic.Int64
}

const (
	postingsFrom   = 10_000
	postingsBudget = 4 << 20
	// postingsCap: a term's doclist is cached up to this many entries,
	// what a pruned search reads of a term at most (commonDF+1), and a few
	// for the messages added since.
	postingsCap = 1216
)

func newPostingsCache() *postingsCache {
	return &postingsCache{entries: map[int64]*postingsEntry{}, from: postingsFrom, budget: postingsBudget, rowsCap: postingsCap}
}

// postingsEntry is one conversation's cached doclists.
type postingsEntry struct {
	mu    sync.Mutex
	conv  int64
	state postingsState
	used  uint64 // the cache's tick when last searched
	bytes int    // size when last released
	text  map[string]*textPostings
	other map[string]*otherPostings
	// lru links the doclists, the most recently read first; held is
	// their size (kept by touch and resize).
	lru  postingsLink
	held int
}

// postingsLink is a cached doclist's place in its entry's lru list.
type postingsLink struct {
	prev, next *postingsLink
	key        string
	text       bool // in the entry's text map, else in other
	bytes      int  // its size as held counts it
}

// postingsState is what a conversation's index held: its search_gen, its
// messages and their greatest id.
type postingsState struct {
	gen, docs, maxID int64
}

// textPostings and otherPostings are a term's doclist, newest first: whole
// when complete, else its newest entries.
type textPostings struct {
	postingsLink
	rows     []int64
	complete bool
}

type otherPostings struct {
	postingsLink
	rows     []docRow
	complete bool
}

func (p *textPostings) size(term string) int  { return len(term) + 8*cap(p.rows) + 64 }
func (p *otherPostings) size(term string) int { return len(term) + 16*cap(p.rows) + 64 }

// reset empties e.
func (e *postingsEntry) reset() {
	e.text, e.other = map[string]*textPostings{}, map[string]*otherPostings{}
	e.lru.prev, e.lru.next, e.held = &e.lru, &e.lru, 0
}

// setText caches p as term's text doclist, read just now (p may be the
// one cached already, its rows changed).
func (e *postingsEntry) setText(term string, p *textPostings) {
	e.text[term] = p
	p.key, p.text = term, true
	e.touch(&p.postingsLink, p.size(term))
}

// setOther is setText for the other doclists.
func (e *postingsEntry) setOther(term string, p *otherPostings) {
	e.other[term] = p
	p.key = term
	e.touch(&p.postingsLink, p.size(term))
}

// touch moves l to the front of the lru list (adding it when not in it)
// and counts it at size bytes.
func (e *postingsEntry) touch(l *postingsLink, size int) {
	if l.next != nil {
		l.prev.next, l.next.prev = l.next, l.prev
	}
	l.prev, l.next = &e.lru, e.lru.next
	e.lru.next.prev = l
	e.lru.next = l
	e.resize(l, size)
}

// resize counts l, in the list, at size bytes.
func (e *postingsEntry) resize(l *postingsLink, size int) {
	e.held += size - l.bytes
	l.bytes = size
}

// trim drops the doclists least recently read until e takes at most limit
// bytes, and returns its size and how many it dropped.
func (e *postingsEntry) trim(limit int) (size, dropped int) {
	for e.held > limit && e.lru.prev != &e.lru {
		dropped++
		l := e.lru.prev
		l.prev.next, l.next.prev = l.next, l.prev
		l.prev, l.next = nil, nil
		if l.text {
			delete(e.text, l.key)
		} else {
			delete(e.other, l.key)
		}
		e.held -= l.bytes
	}
	return e.held, dropped
}

const (
	sqlConvMaxID = `SELECT (SELECT max(id) FROM messages WHERE conv = ?1 AND is_active = 0), (SELECT max(id) FROM messages WHERE conv = ?1 AND is_active = 1)`
	sqlConvAdded = `SELECT id, text, sender_name FROM messages WHERE conv = ?1 AND is_active IN (0, 1) AND id > ?2 ORDER BY id`
)

// acquire returns conv's entry, locked and brought to the search's
// snapshot (gen and docs read in its transaction), or nil when the search
// reads the index itself. The caller releases it.
func (pc *postingsCache) acquire(r *searchRun, gen int64) (*postingsEntry, error) {
	if pc == nil || r.nDocs < pc.from {
		return nil, nil
	}
	pc.mu.Lock()
	e := pc.entries[r.conv]
	if e == nil {
		e = &postingsEntry{conv: r.conv}
		pc.entries[r.conv] = e
	}
	pc.mu.Unlock()
	e.mu.Lock()
	pc.mu.Lock()
	if pc.entries[r.conv] != e { // evicted meanwhile
		pc.mu.Unlock()
		e.mu.Unlock()
		return nil, nil
	}
	pc.bytes -= e.bytes
	e.bytes = 0
	pc.tick++
	e.used = pc.tick
	pc.mu.Unlock()
	ok, err := e.advance(r, gen)
	if err != nil || !ok {
		pc.release(e)
		return nil, err
	}
	return e, nil
}

// advance brings e to the search's snapshot; false when it cannot (the
// snapshot is older than e).
func (e *postingsEntry) advance(r *searchRun, gen int64) (bool, error) {
	switch {
	case e.text != nil && e.state.gen == gen && e.state.docs == r.nDocs:
		return true, nil
	case e.text != nil && e.state.gen == gen && e.state.docs > r.nDocs:
		return false, nil // an older snapshot
	case e.text != nil && e.state.gen == gen:
		ok, err := e.addNewer(r)
		if err != nil || ok {
			return ok, err
		}
	}
	// A new state: start empty.
	var maxID int64
	err := r.each(sqlConvMaxID, func(st *sqlite3.Stmt) bool {
		maxID = max(st.ColumnInt64(0), st.ColumnInt64(1))
		return true
	}, r.conv)
	if err != nil {
		return false, err
	}
	e.state = postingsState{gen: gen, docs: r.nDocs, maxID: maxID}
	e.reset()
	return true, nil
}

// addNewer adds to e the messages added since its state; false when those
// are not all the change (a message added with a smaller id: e starts again).
func (e *postingsEntry) addNewer(r *searchRun) (bool, error) {
	news, maxID, err := r.addedSince(e.state.maxID)
	if err != nil || int64(len(news)) != r.nDocs-e.state.docs {
		return false, err
	}
	// Each cached doclist gains the new messages that hold its term, newest
	// first: the new messages' terms are looked up (not every cached one).
	textFront, otherFront := map[string][]int64{}, map[string][]docRow{}
	for i := len(news) - 1; i >= 0; i-- { // newest first
		for _, stem := range news[i].text {
			if k := ftsTerm(r.prefix, ftsKindText, stem); e.text[k] != nil {
				textFront[k] = append(textFront[k], news[i].rowid)
			}
		}
		for stem, c := range news[i].other {
			if k := ftsTerm(r.prefix, ftsKindRest, stem); e.other[k] != nil {
				otherFront[k] = append(otherFront[k], c)
			}
		}
	}
	for k, front := range textFront {
		p := e.text[k]
		p.rows = prependCapped(front, p.rows, r.pcache.rowsCap, &p.complete)
		e.resize(&p.postingsLink, p.size(k))
	}
	for k, front := range otherFront {
		p := e.other[k]
		p.rows = prependCapped(front, p.rows, r.pcache.rowsCap, &p.complete)
		e.resize(&p.postingsLink, p.size(k))
	}
	e.state.docs, e.state.maxID = r.nDocs, maxID
	r.pcache.added.Add(1)
	return true, nil
}

// prependCapped returns front followed by rows, at most limit of them
// (then no longer complete): in rows' array when it holds them (a common
// term's doclist, cached up to limit already), else in a new one.
func prependCapped[T any](front, rows []T, limit int, complete *bool) []T {
	n := min(len(front)+len(rows), limit)
	if n < len(front)+len(rows) {
		*complete = false
	}
	if front = front[:min(len(front), n)]; n <= cap(rows) {
		out := rows[:n]
		copy(out[len(front):], rows[:n-len(front)])
		copy(out, front)
		return out
	}
	out := make([]T, 0, n)
	out = append(out, front...)
	return append(out, rows[:n-len(out)]...)
}

// release unlocks e, measures it and keeps the cache within its budget: a
// conversation's doclists least recently read go first when it alone
// exceeds it, then the least recently searched conversations.
func (pc *postingsCache) release(e *postingsEntry) {
	size, dropped := e.trim(pc.budget)
	pc.dropped.Add(int64(dropped))
	pc.mu.Lock()
	defer pc.mu.Unlock()
	defer e.mu.Unlock()
	if pc.entries[e.conv] != e {
		return
	}
	if size == 0 {
		delete(pc.entries, e.conv)
		return
	}
	e.bytes = size
	pc.bytes += size
	for pc.bytes > pc.budget {
		var old *postingsEntry
		for _, o := range pc.entries {
			if o.bytes > 0 && (old == nil || o.used < old.used) {
				old = o
			}
		}
		if old == nil {
			return
		}
		pc.bytes -= old.bytes
		old.bytes = 0
		delete(pc.entries, old.conv)
	}
}

// convs are the conversations pc holds doclists of (none for a nil pc).
func (pc *postingsCache) convs() []int64 {
	if pc == nil {
		return nil
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	out := make([]int64, 0, len(pc.entries))
	for conv := range pc.entries {
		out = append(out, conv)
	}
	return out
}

// sweep drops the entries of conversations whose search_gen is no longer
// theirs in gens (a purge, an edit, a message moved), or that gens lacks
// (deleted), unless a search holds them (it brings them up to date).
func (pc *postingsCache) sweep(gens map[int64]int64) {
	if pc == nil {
		return
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for conv, e := range pc.entries {
		if !e.mu.TryLock() {
			continue
		}
		if gen, ok := gens[conv]; !ok || gen != e.state.gen {
			delete(pc.entries, conv)
			pc.bytes -= e.bytes
			e.bytes = 0
		}
		e.mu.Unlock()
	}
}

// cachedTermRows is termRows through the entry: the cached doclist, then the
// index past it when fn wants more; a term not cached yet is read from the
// index and cached.
func (r *searchRun) cachedTermRows(term string, fn func(rowid int64) bool) error {
	if p, ok := r.pe.text[term]; ok {
		r.pcache.served.Add(1)
		r.pe.touch(&p.postingsLink, p.bytes)
		for _, rowid := range p.rows {
			if !fn(rowid) {
				return nil
			}
		}
		if p.complete {
			return nil
		}
		return readPast(r, p.rows, r.pcache.rowsCap, r.termRows, term, fn, func(rows []int64, complete bool) {
			p.rows, p.complete = rows, complete
			r.pe.setText(term, p)
		})
	}
	return readPast(r, nil, r.pcache.rowsCap, r.termRows, term, fn, func(rows []int64, complete bool) {
		r.pe.setText(term, &textPostings{rows: rows, complete: complete})
	})
}

// readPast reads a term's doclist from the index past the cached rows (none
// when the term is not cached), giving fn the rows after them, and keeps
// what it read in the cache (up to limit rows) with keep.
func readPast[T any](r *searchRun, cached []T, limit int, read func(string, func(T) bool) error, term string, fn func(T) bool, keep func(rows []T, complete bool)) error {
	skip, rows, complete := len(cached), cached, true
	err := read(term, func(row T) bool {
		if skip > 0 {
			skip--
			return true
		}
		if len(rows) < limit {
			rows = append(rows, row)
		} else {
			complete = false
		}
		if !fn(row) {
			complete = false
			return false
		}
		return true
	})
	if err == nil && skip == 0 {
		keep(slices.Clip(rows), complete)
	}
	return err
}

// cachedOtherRows is cachedTermRows for otherRows.
func (r *searchRun) cachedOtherRows(term string, fn func(c docRow) bool) error {
	if p, ok := r.pe.other[term]; ok {
		r.pcache.served.Add(1)
		r.pe.touch(&p.postingsLink, p.bytes)
		for _, c := range p.rows {
			if !fn(c) {
				return nil
			}
		}
		if p.complete {
			return nil
		}
		return readPast(r, p.rows, r.pcache.rowsCap, r.otherRows, term, fn, func(rows []docRow, complete bool) {
			p.rows, p.complete = rows, complete
			r.pe.setOther(term, p)
		})
	}
	return readPast(r, nil, r.pcache.rowsCap, r.otherRows, term, fn, func(rows []docRow, complete bool) {
		r.pe.setOther(term, &otherPostings{rows: rows, complete: complete})
	})
}
