package figures

import (
	"math"
	"slices"
	"time"
	"unicode/utf8"
)

// Pct returns the p-th percentile (0 < p ≤ 1, nearest rank) of d.
func Pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// Sum is the total of d.
func Sum(d []time.Duration) time.Duration {
	var t time.Duration
	for _, x := range d {
		t += x
	}
	return t
}

// MS is d in milliseconds.
func MS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// US is d in microseconds.
func US(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// estimateTokens approximates tokens as ceil(runes/4), as memory does for a
// message stored without a count, for fixture rows (the real tokenizer
// would triple the build time; new messages are counted by the real counter
// as usual).
func estimateTokens(s string) int { return max(1, (utf8.RuneCountInString(s)+3)/4) }
