package assemble

import (
	"testing"
	"time"

	"github.com/recallbot/recall/memory"
)

// BenchmarkDayScores: what ranking by the day's matches adds to a turn,
// for the 90 hits of a search widened once (1,500-token budget).
func BenchmarkDayScores(b *testing.B) {
	a := &Assembler{loc: time.UTC}
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	hits := make([]memory.Hit, 90)
	for i := range hits {
		hits[i] = memory.Hit{Message: memory.Message{ID: int64(i), Time: t0.Add(time.Duration(i*7) * time.Hour)}, Score: float64(90 - i)}
	}
	work := make([]memory.Hit, len(hits))
	b.ReportAllocs()
	for b.Loop() {
		copy(work, hits)
		a.dayScores(work)
	}
}
