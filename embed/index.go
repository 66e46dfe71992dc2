package embed

import (
	"math"
	"math/bits"
	"slices"
)

// codes is the compact index of one conversation's vectors by one model:
// one sign bit per dimension (words uint64s per message) for the scan, and
// the vector itself in 8 bits per dimension (with its scale) to score the
// scan's candidates.
type codes struct {
	dims  int
	words int
	ids   []int64
	bits  []uint64
	q8    []int8
	scale []float32
	pos   map[int64]int // message id → its place in ids
	dist  []uint16      // nearest's scratch (the index is used under convIndex.mu)
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
		c.q8 = append(c.q8, make([]int8, c.dims)...)
		c.scale = append(c.scale, 0)
	}
	code(c.bits[i*c.words:(i+1)*c.words], v)
	c.scale[i] = quantize(c.q8[i*c.dims:(i+1)*c.dims], v)
}

// quantize writes v in 8 bits per dimension into dst and returns the scale
// that multiplies them back.
func quantize(dst []int8, v []float32) float32 {
	var m float32
	for _, x := range v {
		m = max(m, x, -x)
	}
	if m == 0 {
		clear(dst)
		return 0
	}
	f := 127 / m
	for i, x := range v {
		dst[i] = int8(math.Round(float64(x * f)))
	}
	return m / 127
}

// similarity is the dot product of q with the stored vector at i (the
// cosine for unit vectors), within about 1% of the exact value.
func (c *codes) similarity(q []float32, i int) float32 {
	row := c.q8[i*c.dims : (i+1)*c.dims]
	q = q[:len(row)]
	var s0, s1, s2, s3 float32
	j := 0
	for ; j+4 <= len(row); j += 4 {
		s0 += q[j] * float32(row[j])
		s1 += q[j+1] * float32(row[j+1])
		s2 += q[j+2] * float32(row[j+2])
		s3 += q[j+3] * float32(row[j+3])
	}
	for ; j < len(row); j++ {
		s0 += q[j] * float32(row[j])
	}
	return (s0 + s1 + s2 + s3) * c.scale[i]
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
			copy(c.q8[i*c.dims:(i+1)*c.dims], c.q8[last*c.dims:])
			c.scale[i] = c.scale[last]
			c.pos[c.ids[i]] = i
		}
		c.ids = c.ids[:last]
		c.bits = c.bits[:last*c.words]
		c.q8 = c.q8[:last*c.dims]
		c.scale = c.scale[:last]
		delete(c.pos, id)
	}
}

func (c *codes) bytes() int {
	return len(c.ids)*8 + len(c.bits)*8 + len(c.q8) + len(c.scale)*4 + len(c.pos)*24 + cap(c.dist)*2
}

// scored is a message and its similarity to a question.
type scored struct {
	id  int64
	sim float32
}

// best returns up to n messages most similar to q (unit length, dims
// long), best first, with a similarity above 0, none of skip: the sign-bit
// scan picks candidates per wanted message, their 8-bit vectors
// score them.
func (c *codes) best(q []float32, n, candidates int, skip map[int64]bool) []scored {
	ids := c.nearest(q, n*candidates, skip)
	out := make([]scored, 0, len(ids))
	for _, id := range ids {
		if sim := c.similarity(q, c.pos[id]); sim > 0 {
			out = append(out, scored{id, sim})
		}
	}
	slices.SortStableFunc(out, func(a, b scored) int {
		switch {
		case a.sim > b.sim:
			return -1
		case a.sim < b.sim:
			return 1
		case a.id > b.id: // newer first on ties
			return -1
		case a.id < b.id:
			return 1
		}
		return 0
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// nearest returns up to n message ids whose codes are nearest to q's (by
// Hamming distance, nearest first), none of skip.
func (c *codes) nearest(q []float32, n int, skip map[int64]bool) []int64 {
	if n <= 0 || len(c.ids) == 0 || len(q) != c.dims {
		return nil
	}
	qc := make([]uint64, c.words)
	code(qc, q)
	if cap(c.dist) < len(c.ids) {
		c.dist = make([]uint16, len(c.ids), len(c.ids)+len(c.ids)/4)
	}
	dist := c.dist[:len(c.ids)]
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
