package embed

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// randomUnit is a random unit vector.
func randomUnit(r *rand.Rand, dims int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return normalize(v)
}

// BenchmarkScan is the in-memory part of a question's similarity ranking
// over one conversation's archive: the sign-bit scan of every message, and
// the 8-bit scoring of 4 candidates per wanted hit (60 hits), beside the
// plain float32 scan of every vector it replaces. It reports the bytes the
// index holds per message.
//
//	go test -run='^$' -bench=Scan ./embed/
func BenchmarkScan(b *testing.B) {
	for _, dims := range []int{256, 768} {
		for _, n := range []int{10_000, 100_000, 1_000_000} {
			if dims == 768 && n == 1_000_000 {
				continue // 3 GB of float32 for the baseline
			}
			r := rand.New(rand.NewPCG(1, uint64(n)))
			c := newCodes(dims)
			flat := make([]float32, 0, n*dims)
			for i := range n {
				v := randomUnit(r, dims)
				c.put(int64(i+1), v)
				flat = append(flat, v...)
			}
			q := randomUnit(r, dims)
			b.Run(fmt.Sprintf("dims=%d/n=%d/signbits+int8", dims, n), func(b *testing.B) {
				for b.Loop() {
					if len(c.best(q, 60, 4, nil)) == 0 {
						b.Fatal("no hits")
					}
				}
				b.ReportMetric(float64(c.bytes())/float64(n), "B/msg")
			})
			b.Run(fmt.Sprintf("dims=%d/n=%d/float32-all", dims, n), func(b *testing.B) {
				for b.Loop() {
					var best float32
					for i := range n {
						best = max(best, dot(q, flat[i*dims:(i+1)*dims]))
					}
					if best == 0 {
						b.Fatal("no similarity")
					}
				}
				b.ReportMetric(float64(4*dims), "B/msg")
			})
		}
	}
}
