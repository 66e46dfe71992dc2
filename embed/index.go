package embed

import (
	"math/bits"
)

// codes is the compact index of one conversation's vectors by one model:
// one sign bit per dimension, words uint64s per message.
type codes struct {
	dims  int
	words int
	ids   []int64
	bits  []uint64
	pos   map[int64]int // message id → its place in ids
}

func newCodes(dims int) *codes {
	return &codes{dims: dims, words: (dims + 63) / 64, pos: map[int64]int{}}
}

// code writes v's sign bits into dst (words long).
func code(dst []uint64, v []float32) {
	clear(dst)
	for i, x := range v {
		if x > 0 {
			dst[i/64] |= 1 << (i % 64)
		}
	}
}

// put adds or replaces a message's vector.
func (c *codes) put(id int64, v []float32) {
	if len(v) != c.dims {
		return // another size: a changed dimensions setting; the new rows replace these
	}
	i, ok := c.pos[id]
	if !ok {
		i = len(c.ids)
		c.pos[id] = i
		c.ids = append(c.ids, id)
		c.bits = append(c.bits, make([]uint64, c.words)...)
	}
	code(c.bits[i*c.words:(i+1)*c.words], v)
}

// remove drops messages (purged since they were loaded).
func (c *codes) remove(ids []int64) {
	for _, id := range ids {
		i, ok := c.pos[id]
		if !ok {
			continue
		}
		last := len(c.ids) - 1
		if i != last {
			c.ids[i] = c.ids[last]
			copy(c.bits[i*c.words:(i+1)*c.words], c.bits[last*c.words:])
			c.pos[c.ids[i]] = i
		}
		c.ids = c.ids[:last]
		c.bits = c.bits[:last*c.words]
		delete(c.pos, id)
	}
}

func (c *codes) bytes() int { return len(c.ids)*8 + len(c.bits)*8 + len(c.pos)*16 }

// nearest returns up to n message ids whose codes are nearest to q's (by
// Hamming distance, nearest first), none of skip.
func (c *codes) nearest(q []float32, n int, skip map[int64]bool) []int64 {
	if n <= 0 || len(c.ids) == 0 || len(q) != c.dims {
		return nil
	}
	qc := make([]uint64, c.words)
	code(qc, q)
	dist := make([]uint16, len(c.ids))
	hist := make([]int, c.words*64+1)
	w := c.words
	for i := range c.ids {
		d := 0
		row := c.bits[i*w : (i+1)*w]
		for j, x := range row {
			d += bits.OnesCount64(x ^ qc[j])
		}
		dist[i] = uint16(d)
		hist[d]++
	}
	// The distance below which n messages lie (a counting selection).
	limit, seen := 0, 0
	for limit < len(hist) && seen+hist[limit] < n+len(skip) {
		seen += hist[limit]
		limit++
	}
	type cand struct {
		id int64
		d  uint16
	}
	var out []cand
	for i, d := range dist {
		if int(d) <= limit && !skip[c.ids[i]] {
			out = append(out, cand{c.ids[i], d})
		}
	}
	// Nearest first (a counting sort over the few distances).
	byDist := make([][]int64, limit+1)
	for _, x := range out {
		byDist[x.d] = append(byDist[x.d], x.id)
	}
	ids := make([]int64, 0, n)
	for _, l := range byDist {
		for _, id := range l {
			if len(ids) == n {
				return ids
			}
			ids = append(ids, id)
		}
	}
	return ids
}
