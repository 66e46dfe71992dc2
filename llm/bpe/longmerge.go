package bpe

import (
	"container/heap"
	"math"
)

// longPiece is the piece length from which countPiece merges with a heap:
// the scan of tiktoken's algorithm is quadratic in the piece's length, and
// a piece is a run without spaces (a 65,536-letter "word" took seconds, and
// assembling a prompt counts a message about twenty times).
const longPiece = 256

// pairHeap orders candidate merges as tiktoken's scan picks them: lowest
// rank first, and among equal ranks the leftmost (the lowest start offset).
type pairHeap []pairEntry

type pairEntry struct {
	rank, at, ver int // at: the boundary the pair starts at
}

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].at < h[j].at
}
func (h pairHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pairEntry)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// countLongPiece is countPiece's byte-pair merge in O(n log n): the same
// merges in the same order (lowest rank, leftmost first), on a linked list
// of part boundaries with a heap of candidate pairs; a pair whose parts
// changed since it was pushed is skipped when it comes up.
func (e *Encoding) countLongPiece(piece string) int {
	n := len(piece)
	// Boundaries 0..n; part i runs from boundary i to next[i].
	next := make([]int, n+1)
	prev := make([]int, n+1)
	ver := make([]int, n+1)
	for i := range next {
		next[i], prev[i] = i+1, i-1
	}
	rankAt := func(i int) int {
		j := next[i]
		if j >= n {
			return math.MaxInt
		}
		if r := e.rank(piece[i:next[j]]); r >= 0 {
			return r
		}
		return math.MaxInt
	}
	h := make(pairHeap, 0, n)
	for i := 0; i < n-1; i++ {
		if r := rankAt(i); r != math.MaxInt {
			h = append(h, pairEntry{r, i, 0})
		}
	}
	heap.Init(&h)
	parts := n
	for h.Len() > 0 {
		p := heap.Pop(&h).(pairEntry)
		if p.ver != ver[p.at] {
			continue // its parts changed since
		}
		i := p.at
		j := next[i] // merge part j into part i
		next[i] = next[j]
		if next[j] <= n {
			prev[next[j]] = i
		}
		ver[j] = -1 // boundary j is gone
		parts--
		ver[i]++
		if r := rankAt(i); r != math.MaxInt {
			heap.Push(&h, pairEntry{r, i, ver[i]})
		}
		if k := prev[i]; k >= 0 {
			ver[k]++
			if r := rankAt(k); r != math.MaxInt {
				heap.Push(&h, pairEntry{r, k, ver[k]})
			}
		}
	}
	return parts
}
