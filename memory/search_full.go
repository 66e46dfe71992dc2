package memory

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/recallbot/recall/memory/internal/fts"
)

// convIndex is a whole conversation's doclists in memory, in the shape the
// index holds them (search_index.go's derivation, computed by the same
// code), so that a search of a big conversation reads no doclist from
// SQLite at all: every term of the conversation is here, and a term that is
// not is in none of its messages.
//
// Reading doclists from FTS5 was most of a big conversation's search: a
// statement per term and kind, each seeking the term in every segment of
// the index, in a page cache that every commit of another connection
// empties (docs/figures.md, note 19). The postings cache (search_cache.go) kept the
// doclists a conversation's searches had read, but most of a search's words
// are ones no search of it has asked for yet.
//
// Compact: a message is an ordinal (its place in rows, oldest first), and a
// doclist is its ordinals' gaps, ascending, as unsigned LEB128 varints,
// which read backwards as well as forwards (each value's last byte is the
// only one without its high bit), so that new messages are appended at
// its end and the search reads it newest first. The other doclists (the
// sender's name, a stem's repeats in the text) put the entry's two counts
// after each gap. The bench's conversation of 100,000 messages (32 tokens
// each) takes 7.8 MiB and 0.6 s of one core to build.
//
// A convIndex describes one state of its conversation (state), as the
// postings cache's entries do: it is built in a read transaction, and a
// search adds the messages added since its state; anything else that
// changes the conversation's rows (its search_gen) retires it.
type convIndex struct {
	state postingsState
	rows  []int64               // the messages' rowids, ascending
	terms map[string]*termLists // by stem
	bytes int                   // as size measured it
}

// termLists are a stem's two doclists.
type termLists struct{ text, other ordList }

// ordList is a doclist of ordinals (see convIndex).
type ordList struct {
	buf  []byte
	last int32 // the newest ordinal
}

func newConvIndex() *convIndex {
	return &convIndex{terms: map[string]*termLists{}}
}

// docTerms is one message's part of the index: its rowid, its text's
// distinct stems, and the entries of its other doclists.
type docTerms struct {
	rowid int64
	text  []string
	other map[string]docRow
	// scratch: the stems seen in this message, the tokens of its text and
	// sender, and (a build's) the stems of tokens met before
	seen               map[string]bool
	textToks, nameToks []string
	stems              *fts.Stems
}

// derive fills d with what the index holds of a message (what
// ftsIndexDoc computes, read back as doclist entries).
func (d *docTerms) derive(id int64, text, sender string) error {
	var textToks, senderToks []string
	if d.stems != nil {
		d.textToks = d.stems.Tokens(text, d.textToks[:0])
		d.nameToks = d.stems.Tokens(sender, d.nameToks[:0])
		textToks, senderToks = d.textToks, d.nameToks
	} else {
		textToks, senderToks = fts.Tokens(text), fts.Tokens(sender)
	}
	rowid, err := ftsRowid(id, len(textToks)+len(senderToks))
	if err != nil {
		return err
	}
	if d.seen == nil {
		d.seen, d.other = map[string]bool{}, map[string]docRow{}
	}
	clear(d.seen)
	clear(d.other)
	d.rowid, d.text = rowid, d.text[:0]
	for _, t := range textToks {
		t = ftsIndexStem(t)
		if d.seen[t] {
			c := d.other[t]
			c.rowid = rowid
			c.extra++
			d.other[t] = c
			continue
		}
		d.seen[t] = true
		d.text = append(d.text, t)
	}
	for _, t := range senderToks {
		t = ftsIndexStem(t)
		c := d.other[t]
		c.rowid = rowid
		c.sender++
		d.other[t] = c
	}
	return nil
}

// add appends a message newer than every other of x, and counts what
// it adds to x.bytes (size's measure).
func (x *convIndex) add(d *docTerms) {
	ord := int32(len(x.rows))
	c0 := cap(x.rows)
	x.rows = append(x.rows, d.rowid)
	x.bytes += 8 * (cap(x.rows) - c0)
	for _, t := range d.text {
		l := &x.lists(t).text
		c0 := cap(l.buf)
		l.add(ord)
		x.bytes += cap(l.buf) - c0
	}
	for t, c := range d.other {
		l := &x.lists(t).other
		c0 := cap(l.buf)
		l.add(ord)
		l.buf = binary.AppendUvarint(l.buf, uint64(c.sender))
		l.buf = binary.AppendUvarint(l.buf, uint64(c.extra))
		x.bytes += cap(l.buf) - c0
	}
}

// termOverhead is what a stem costs x besides its doclists' arrays: its
// lists' headers and its share of the map.
const termOverhead = 2*(24+8) + 48

func (x *convIndex) lists(stem string) *termLists {
	l := x.terms[stem]
	if l == nil {
		l = &termLists{text: ordList{last: -1}, other: ordList{last: -1}}
		x.terms[stem] = l
		x.bytes += len(stem) + termOverhead
	}
	return l
}

func (l *ordList) add(ord int32) {
	l.buf = binary.AppendUvarint(l.buf, uint64(ord-l.last))
	l.last = ord
}

// prevUvarint decodes the varint that ends just before buf[end], and
// returns it and where it starts.
func prevUvarint(buf []byte, end int) (uint64, int) {
	start := end - 1
	for start > 0 && buf[start-1]&0x80 != 0 {
		start--
	}
	v, _ := binary.Uvarint(buf[start:end])
	return v, start
}

// textRows calls fn with the rowids of stem's text doclist, newest first,
// until it returns false.
func (x *convIndex) textRows(stem string, fn func(rowid int64) bool) {
	l := x.terms[stem]
	if l == nil {
		return
	}
	ord, end := l.text.last, len(l.text.buf)
	for end > 0 {
		if !fn(x.rows[ord]) {
			return
		}
		var gap uint64
		gap, end = prevUvarint(l.text.buf, end)
		ord -= int32(gap)
	}
}

// otherRows is textRows for the other doclist.
func (x *convIndex) otherRows(stem string, fn func(docRow) bool) {
	l := x.terms[stem]
	if l == nil {
		return
	}
	ord, end := l.other.last, len(l.other.buf)
	for end > 0 {
		var extra, sender, gap uint64
		extra, end = prevUvarint(l.other.buf, end)
		sender, end = prevUvarint(l.other.buf, end)
		gap, end = prevUvarint(l.other.buf, end)
		if !fn(docRow{rowid: x.rows[ord], sender: int32(sender), extra: int32(extra)}) {
			return
		}
		ord -= int32(gap)
	}
}

// measure is x's size in bytes (what add keeps in x.bytes): its arrays,
// and per stem the string, the lists and the map's share.
func (x *convIndex) measure() int {
	n := 8*cap(x.rows) + 64
	for t, l := range x.terms {
		n += len(t) + cap(l.text.buf) + cap(l.other.buf) + termOverhead
	}
	return n
}

// compact gives every doclist an array of its length (a build's appends
// leave up to a quarter of each unused).
func (x *convIndex) compact() {
	x.rows = append([]int64(nil), x.rows...)
	for _, l := range x.terms {
		l.text.buf = append([]byte(nil), l.text.buf...)
		if l.other.buf != nil {
			l.other.buf = append([]byte(nil), l.other.buf...)
		}
	}
}

const sqlConvState = `SELECT search_docs, search_gen FROM conversations WHERE id = ?1`

// errIndexTooBig: a conversation's index would take more than the budget
// of all of them.
var errIndexTooBig = errors.New("the conversation's search index exceeds its memory budget")

// buildConvIndex reads a conversation's messages in one read transaction
// and indexes them; limit bounds its size in bytes (errIndexTooBig past it).
func (s *SQLite) buildConvIndex(ctx context.Context, conv int64, limit int) (*convIndex, error) {
	var x *convIndex
	err := s.read(ctx, func(c *sqlite3.Conn, sc *searchConn) error {
		r := &searchRun{c: c, sc: sc}
		defer r.close()
		var docs, gen, maxID int64
		found := false
		if err := r.each(sqlConvState, func(st *sqlite3.Stmt) bool {
			docs, gen, found = st.ColumnInt64(0), st.ColumnInt64(1), true
			return true
		}, conv); err != nil || !found {
			return err
		}
		if err := r.each(sqlConvMaxID, func(st *sqlite3.Stmt) bool {
			maxID = max(st.ColumnInt64(0), st.ColumnInt64(1))
			return true
		}, conv); err != nil {
			return err
		}
		x = newConvIndex()
		x.rows = make([]int64, 0, docs)
		x.bytes = x.measure()
		d := docTerms{stems: &fts.Stems{}}
		var bad error
		if err := r.each(sqlConvAdded, func(st *sqlite3.Stmt) bool {
			if bad = d.derive(st.ColumnInt64(0), st.ColumnText(1), st.ColumnText(2)); bad != nil {
				return false
			}
			x.add(&d)
			// Appends leave room in the arrays (compact gives it back):
			// measured exactly once built.
			if x.bytes > limit+limit/2 {
				bad = errIndexTooBig
				return false
			}
			return true
		}, conv, int64(math.MinInt64)); err != nil {
			return err
		}
		if bad != nil {
			return bad
		}
		if int64(len(x.rows)) != docs {
			return errors.New("the conversation's messages do not match its search statistics")
		}
		x.state = postingsState{gen: gen, docs: docs, maxID: maxID}
		return nil
	})
	if err != nil || x == nil {
		return nil, err
	}
	x.compact()
	if x.bytes = x.measure(); x.bytes > limit {
		return nil, errIndexTooBig
	}
	return x, nil
}

// advance brings x to the search's snapshot (gen and docs read in its
// transaction): the messages added since are added. False when it cannot:
// the snapshot is older than x, or the conversation changed otherwise.
func (x *convIndex) advance(r *searchRun, gen int64) (bool, error) {
	if x.state.gen != gen || x.state.docs > r.nDocs {
		return false, nil
	}
	if x.state.docs == r.nDocs {
		return true, nil
	}
	news, maxID, err := r.addedSince(x.state.maxID)
	if err != nil || int64(len(news)) != r.nDocs-x.state.docs {
		return false, err
	}
	for i := range news {
		x.add(&news[i])
	}
	x.state.docs, x.state.maxID = r.nDocs, maxID
	return true, nil
}

// addedSince reads the conversation's messages of greater id than since,
// in id order, as the index holds them, and the greatest id among them and
// since.
func (r *searchRun) addedSince(since int64) ([]docTerms, int64, error) {
	var news []docTerms
	maxID := since
	var bad error
	err := r.each(sqlConvAdded, func(st *sqlite3.Stmt) bool {
		var d docTerms
		id := st.ColumnInt64(0)
		if bad = d.derive(id, st.ColumnText(1), st.ColumnText(2)); bad != nil {
			return false
		}
		news = append(news, d)
		maxID = max(maxID, id)
		return true
	}, r.conv, since)
	if err == nil {
		err = bad
	}
	return news, maxID, err
}

// fullTermRows is termRows through the conversation's index in memory.
func (r *searchRun) fullTermRows(term string, fn func(rowid int64) bool) error {
	r.fe.x.textRows(term[len(r.prefix)+1:], fn)
	return nil
}

// fullOtherRows is otherRows through the conversation's index in memory.
func (r *searchRun) fullOtherRows(term string, fn func(docRow) bool) error {
	r.fe.x.otherRows(term[len(r.prefix)+1:], fn)
	return nil
}

// fullWindowRows is what readWindow reads of a single term, through the
// conversation's index in memory: its rows in the window, newest first,
// each with the term's instances in the text and half those in the
// sender's name.
func (r *searchRun) fullWindowRows(p *searchPhrase) {
	stem := p.toks[0]
	text := r.sc.rows[:0]
	defer func() { r.sc.rows = text[:0] }()
	r.fe.x.textRows(stem, func(rowid int64) bool {
		if rowid < r.cutRowid {
			return false
		}
		text = append(text, rowid)
		return true
	})
	var others []docRow
	r.fe.x.otherRows(stem, func(c docRow) bool {
		if c.rowid < r.cutRowid {
			return false
		}
		others = append(others, c)
		return true
	})
	for i, j := 0, 0; i < len(text) || j < len(others); {
		switch {
		case j == len(others) || i < len(text) && text[i] > others[j].rowid:
			p.list = append(p.list, posting{text[i], 1})
			i++
		case i == len(text) || others[j].rowid > text[i]:
			if c := others[j]; c.sender > 0 {
				p.list = append(p.list, posting{c.rowid, 0.5 * float64(c.sender)})
			}
			j++
		default:
			c := others[j]
			p.list = append(p.list, posting{text[i], float64(1+c.extra) + 0.5*float64(c.sender)})
			i++
			j++
		}
	}
}

// findWindowFull is findWindow through the conversation's index in
// memory, which lists its messages (the window's are the newest): only
// which are active is read. False when there are too many of those.
func (r *searchRun) findWindowFull() (bool, error) {
	active, err := r.activeIDs()
	if err != nil || active == nil {
		return false, err
	}
	rows := r.fe.x.rows
	// The window-th newest archived message (or active, when there are
	// fewer archived), and how many of the others are at least as new.
	for _, isActive := range []bool{false, true} {
		seen, others := 0, int64(0)
		for i := len(rows) - 1; i >= 0; i-- {
			id := ftsRowidID(rows[i])
			if active[id] != isActive {
				others++
				continue
			}
			if seen++; seen == r.tune.window {
				r.cutRowid, r.winSize = id<<ftsLenBits, int64(r.tune.window)+others
				return true, nil
			}
		}
	}
	return true, nil
}

// fullIndexes owns the conversations' in-memory indexes (convIndex): the
// goroutine that builds them in the background, one at a time, in the order
// asked; which conversations have one, within a budget of memory for all
// (the least recently searched goes first; a conversation whose index alone
// exceeds it is never indexed, and is searched as before: search_cache.go).
// A search uses a conversation's index when it describes the search's
// snapshot or an older one (the messages added since are added first); one
// search at a time (its lock).
type fullIndexes struct {
	from   int64 // conversations of at least this many messages are indexed
	budget int   // bytes, for all of them

	mu      sync.Mutex
	entries map[int64]*fullEntry
	bytes   int // of every entry, as last counted
	queue   []int64
	queued  map[int64]bool
	tooBig  map[int64]bool
	// rest: after a build of d, the conversation is not built again for
	// rest × d (a conversation whose messages are deleted or edited turn
	// after turn is rebuilt now and then, not every turn); notBefore is
	// when it may be.
	rest      int
	notBefore map[int64]time.Time
	// keep: an index searched within keep is not retired to make room for
	// another (makeRoom).
	keep time.Duration
	// holdUntil: no build starts before (the store's open plus fullHold).
	holdUntil time.Time
	busy      bool       // a build is running
	idle      *sync.Cond // signalled when the queue empties and no build runs
	wake      chan struct{}
	ctx       context.Context
	stop      context.CancelFunc
	done      chan struct{}
	started   bool
	// sweepEvery: how often the indexes are checked against their
	// conversations (sweep), through gens, from sweepC.
	sweepEvery time.Duration
	gens       func(ctx context.Context, convs []int64) (map[int64]int64, error)
	sweepC     <-chan time.Time
	postings   *postingsCache // swept too (nil: none)
	// built counts the indexes built, served the searches that used one,
	// retired those dropped (tests).
	built, served, retired int
}

// fullEntry is one conversation's index.
type fullEntry struct {
	mu      sync.Mutex
	conv    int64
	x       *convIndex // nil once retired
	bytes   int        // as the budget counts it
	lastUse time.Time  // when last searched (or built)
}

const (
	// fullFrom: smaller conversations are searched through FTS5 (their
	// search reads little). A search of 3,000 messages takes 0.19 ms
	// through the index in memory (0.38 MB), 0.59–0.65 through FTS5.
	fullFrom = 1_000
	// fullBudget: the bench's conversation of 100,000 messages takes
	// 7.8 MiB.
	fullBudget = 16 << 20
	// fullRest: a conversation is built again at most every 10 builds'
	// time: at most a tenth of a core for one that changes all the time.
	fullRest = 10
	// fullSweep: how often the indexes are checked against their
	// conversations.
	fullSweep = 5 * time.Second
	// fullKeep: see fullIndexes.keep.
	fullKeep = 10 * time.Minute
	// fullRetry: a conversation not indexed for want of room is asked
	// again by its searches after this long.
	fullRetry = time.Minute
	// fullHold: the builds queued at open start this long after it, once
	// the bot's start-up is over (~25 ms): started at once, on two cores,
	// they made it 20–50% slower on the bench's 1 GB database.
	fullHold = time.Second
)

func newFullIndexes() *fullIndexes {
	f := &fullIndexes{from: fullFrom, budget: fullBudget, rest: fullRest, keep: fullKeep, sweepEvery: fullSweep, entries: map[int64]*fullEntry{}, queued: map[int64]bool{}, tooBig: map[int64]bool{},
		notBefore: map[int64]time.Time{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	f.idle = sync.NewCond(&f.mu)
	f.ctx, f.stop = context.WithCancel(context.Background())
	return f
}

// start runs the builder: build indexes one conversation within a limit
// of bytes; gens reads conversations' search_gen (those gone are left
// out), for the sweep every f.sweepEvery.
func (f *fullIndexes) start(build func(ctx context.Context, conv int64, limit int) (*convIndex, error), gens func(ctx context.Context, convs []int64) (map[int64]int64, error), pc *postingsCache) {
	f.mu.Lock()
	f.started = true
	f.gens, f.postings = gens, pc
	f.mu.Unlock()
	tick := time.NewTicker(f.sweepEvery)
	f.sweepC = tick.C
	go func() {
		defer close(f.done)
		defer tick.Stop()
		for {
			conv, ok := f.next()
			if !ok {
				return
			}
			t0 := time.Now()
			x, err := build(f.ctx, conv, f.budget)
			f.mu.Lock()
			delete(f.queued, conv)
			f.notBefore[conv] = time.Now().Add(time.Duration(f.rest) * time.Since(t0))
			switch {
			case errors.Is(err, errIndexTooBig):
				f.tooBig[conv] = true
			case err == nil && x != nil && f.ctx.Err() == nil:
				f.install(conv, x)
			}
			// Another error (the conversation gone, a read failing): its
			// searches read the index, and ask again.
			f.mu.Unlock()
		}
	}()
}

// next waits for a conversation to index; false when the store closes.
func (f *fullIndexes) next() (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.queue) == 0 {
		f.busy = false
		f.idle.Broadcast()
		f.mu.Unlock()
		select {
		case <-f.ctx.Done():
			f.mu.Lock()
			return 0, false
		case <-f.wake:
		case <-f.sweepC:
			f.sweep(f.ctx, f.postings)
		}
		f.mu.Lock()
	}
	for wait := time.Until(f.holdUntil); wait > 0 && f.ctx.Err() == nil; wait = time.Until(f.holdUntil) {
		// Start-up first (see fullHold).
		f.busy = true
		f.mu.Unlock()
		select {
		case <-f.ctx.Done():
		case <-time.After(wait):
		}
		f.mu.Lock()
	}
	if f.ctx.Err() != nil {
		f.busy = false
		f.idle.Broadcast()
		return 0, false
	}
	conv := f.queue[0]
	f.queue = f.queue[1:]
	f.busy = true
	return conv, true
}

// sweep retires the indexes of conversations that changed otherwise than
// by an append (a purge, an edit, a message moved: their search_gen) or
// are gone, searched since or not: what was purged leaves memory within
// sweepEvery, and so does the index of a conversation no one searches
// again. The postings cache's entries (pc, when not nil) go the same way.
func (f *fullIndexes) sweep(ctx context.Context, pc *postingsCache) {
	f.mu.Lock()
	convs := make([]int64, 0, len(f.entries))
	for conv := range f.entries {
		convs = append(convs, conv)
	}
	f.mu.Unlock()
	convs = append(convs, pc.convs()...)
	if len(convs) == 0 {
		return
	}
	gens, err := f.gens(ctx, convs)
	if err != nil {
		return // the next sweep tries again
	}
	pc.sweep(gens)
	f.mu.Lock()
	defer f.mu.Unlock()
	for conv, e := range f.entries {
		if !e.mu.TryLock() {
			continue // a search is bringing it up to date
		}
		if gen, ok := gens[conv]; !ok || gen != e.x.state.gen {
			f.retire(e)
		}
		e.mu.Unlock()
	}
}

// install keeps x as conv's index (f.mu held), making room for it: the
// least recently searched indexes not in use go first.
func (f *fullIndexes) install(conv int64, x *convIndex) {
	if old := f.entries[conv]; old != nil {
		if !old.mu.TryLock() {
			return // in use: the index there stays
		}
		f.retire(old)
		old.mu.Unlock()
	}
	if !f.makeRoom(x.bytes, nil) {
		f.notBefore[conv] = time.Now().Add(fullRetry) // asked again by a search then
		return
	}
	f.entries[conv] = &fullEntry{conv: conv, x: x, bytes: x.bytes, lastUse: time.Now()}
	f.bytes += x.bytes
	f.built++
}

// makeRoom retires indexes until need more bytes fit the budget (f.mu
// held), the least recently searched first, but none searched within
// f.keep (a bot with more conversations than the budget holds keeps the
// ones it indexed, and searches the others through FTS5, rather than
// building one conversation's index after another's) and not except. False
// when the room cannot be made.
func (f *fullIndexes) makeRoom(need int, except *fullEntry) bool {
	cutoff := time.Now().Add(-f.keep)
	for f.bytes+need > f.budget {
		var lru *fullEntry
		for _, e := range f.entries {
			if e != except && e.lastUse.Before(cutoff) && (lru == nil || e.lastUse.Before(lru.lastUse)) {
				lru = e
			}
		}
		if lru == nil || !lru.mu.TryLock() {
			return false
		}
		f.retire(lru)
		lru.mu.Unlock()
	}
	return true
}

// evictable is what makeRoom could retire now (f.mu held).
func (f *fullIndexes) evictable() int {
	cutoff, n := time.Now().Add(-f.keep), 0
	for _, e := range f.entries {
		if e.lastUse.Before(cutoff) {
			n += e.bytes
		}
	}
	return n
}

// retire drops e's index (f.mu and e.mu held).
func (f *fullIndexes) retire(e *fullEntry) {
	if f.entries[e.conv] == e {
		delete(f.entries, e.conv)
		f.bytes -= e.bytes
	}
	e.x, e.bytes = nil, 0
	f.retired++
}

// ask queues conv for a build (f.mu held), unless it is queued already,
// too small or too big: toks (its tokens, at least its doclists' entries,
// each at least a byte) and 8 bytes a message beyond the budget, or beyond
// the room the indexes in use leave.
func (f *fullIndexes) ask(conv, docs, toks int64) {
	if !f.started || f.queued[conv] || f.tooBig[conv] || docs < f.from {
		return
	}
	if t, ok := f.notBefore[conv]; ok && time.Now().Before(t) {
		return // searched through the index meanwhile
	}
	least := 8*docs + toks/2
	if least > int64(f.budget) {
		f.tooBig[conv] = true
		return
	}
	if int64(f.bytes-f.evictable())+least > int64(f.budget) {
		f.notBefore[conv] = time.Now().Add(fullRetry) // no room without evicting what is in use
		return
	}
	f.queued[conv] = true
	f.queue = append(f.queue, conv)
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// acquire returns the search's conversation's index, locked and brought to
// the search's snapshot (gen and docs read in its transaction), or nil when
// the search reads the index (queuing a build when the conversation has
// none). The caller releases it.
func (f *fullIndexes) acquire(r *searchRun, gen int64) (*fullEntry, error) {
	if f == nil || r.nDocs < f.from {
		return nil, nil
	}
	f.mu.Lock()
	e := f.entries[r.conv]
	if e == nil {
		f.ask(r.conv, r.nDocs, r.nToks)
	}
	f.mu.Unlock()
	if e == nil {
		return nil, nil
	}
	e.mu.Lock()
	if e.x == nil { // retired meanwhile
		e.mu.Unlock()
		return nil, nil
	}
	ok, err := e.x.advance(r, gen)
	if err != nil || !ok {
		f.mu.Lock()
		if err == nil && e.x.state.gen != gen {
			// The conversation changed (or, rarely, the search's snapshot
			// is older than the index's other state): built again.
			f.retire(e)
			f.ask(r.conv, r.nDocs, r.nToks)
		}
		f.mu.Unlock()
		e.mu.Unlock()
		return nil, err
	}
	return e, nil
}

// release unlocks e, counting what its index grew by; an index that no
// longer fits the budget is dropped.
func (f *fullIndexes) release(e *fullEntry) {
	f.mu.Lock()
	e.lastUse = time.Now()
	f.served++
	if f.entries[e.conv] == e {
		f.bytes += e.x.bytes - e.bytes
		e.bytes = e.x.bytes
		if !f.makeRoom(0, e) {
			// Grown past the budget: dropped (for good when alone it is
			// too big).
			if e.bytes > f.budget {
				f.tooBig[e.conv] = true
			} else {
				f.notBefore[e.conv] = time.Now().Add(fullRetry)
			}
			f.retire(e)
		}
	}
	f.mu.Unlock()
	e.mu.Unlock()
}

// wait returns when no build is queued or running, or ctx ends.
func (f *fullIndexes) wait(ctx context.Context) error {
	if f == nil {
		return nil
	}
	stop := context.AfterFunc(ctx, func() {
		f.mu.Lock()
		f.idle.Broadcast()
		f.mu.Unlock()
	})
	defer stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	for (len(f.queue) > 0 || f.busy) && ctx.Err() == nil && f.ctx.Err() == nil {
		f.idle.Wait()
	}
	return ctx.Err()
}

// close stops the builder and waits for it.
func (f *fullIndexes) close() {
	if f == nil {
		return
	}
	f.stop()
	f.mu.Lock()
	started := f.started
	f.mu.Unlock()
	if started {
		<-f.done
	}
}

// sqlBigConvs: the conversations big enough to index in memory, the most
// recently written first.
const sqlBigConvs = `SELECT id, search_docs, search_tokens FROM conversations WHERE search_docs >= ?1
	ORDER BY max(coalesce((SELECT max(id) FROM messages WHERE conv = conversations.id AND is_active = 0), 0),
		coalesce((SELECT max(id) FROM messages WHERE conv = conversations.id AND is_active = 1), 0)) DESC`

// indexBigConversations queues the conversations big enough for an index
// in memory, at open, the most recently written first, as many as the
// budget likely holds (fullEstimate): they are built in the background, so
// the first search of a big conversation does not read its doclists from
// the index. The others are built when searched, room permitting.
func (s *SQLite) indexBigConversations(ctx context.Context) error {
	rows, err := s.r.QueryContext(ctx, sqlBigConvs, s.full.from)
	if err != nil {
		return fmt.Errorf("listing the conversations to index: %w", err)
	}
	defer rows.Close()
	s.full.mu.Lock()
	defer s.full.mu.Unlock()
	room := int64(s.full.budget)
	for rows.Next() {
		var conv, docs, toks int64
		if err := rows.Scan(&conv, &docs, &toks); err != nil {
			return fmt.Errorf("listing the conversations to index: %w", err)
		}
		if est := fullEstimate(docs, toks); est <= room {
			room -= est
			s.full.ask(conv, docs, toks)
		}
	}
	return rows.Err()
}

// fullEstimate is about what the index in memory of a conversation of docs
// messages and toks tokens takes: a message's rowid, a byte or so a token,
// and ~150 bytes a stem, of which there are about 10·√toks (Heaps' law; the
// bench's 100,000 messages of 32 tokens: 6.7 MB estimated, 7.8 MiB built;
// 3,000 messages of 24: 0.50 and 0.38 MB).
func fullEstimate(docs, toks int64) int64 {
	return 8*docs + toks + int64(1500*math.Sqrt(float64(toks)))
}

// searchGens reads the search_gen of the conversations convs that still
// exist.
func (s *SQLite) searchGens(ctx context.Context, convs []int64) (map[int64]int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, search_gen FROM conversations WHERE id IN (SELECT value FROM json_each(?))`, jsonIDs(convs))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[int64]int64, len(convs))
	for rows.Next() {
		var id, gen int64
		if err := rows.Scan(&id, &gen); err != nil {
			return nil, err
		}
		out[id] = gen
	}
	return out, rows.Err()
}

// WaitSearchIndexes returns once the conversations' indexes in memory
// asked for so far are built (or found too big), or ctx ends.
func (s *SQLite) WaitSearchIndexes(ctx context.Context) error {
	return s.full.wait(ctx)
}
