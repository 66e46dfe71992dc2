package memory

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
)

// Limits shared by every backend and the commands that enforce them.
const (
	MinThreshold     = 1
	MaxThreshold     = 500
	MaxMemoryKeyLen  = 64
	MaxMemoryContent = 2000 // characters
)

var memoryKeyPattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

var reservedPrefixes = []string{"system_", "internal_"}

// ValidateMemoryKey applies the memory key rules: ^[a-z][a-z0-9_]*$, at most
// 64 characters, not starting with a reserved prefix (system_, internal_).
// The error says what is expected, for the user.
func ValidateMemoryKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: the key is empty", ErrBadMemoryKey)
	case len(key) > MaxMemoryKeyLen:
		return fmt.Errorf("%w: %d characters, at most %d allowed", ErrBadMemoryKey, len(key), MaxMemoryKeyLen)
	case !memoryKeyPattern.MatchString(key):
		return fmt.Errorf("%w: %q — use lowercase letters, digits and _, starting with a letter", ErrBadMemoryKey, key)
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(key, p) {
			return fmt.Errorf("%w: keys starting with %q are reserved", ErrBadMemoryKey, p)
		}
	}
	return nil
}

// ValidateThreshold checks a summary threshold.
func ValidateThreshold(n int) error {
	if n < MinThreshold || n > MaxThreshold {
		return fmt.Errorf("threshold must be a number from %d to %d, got %d", MinThreshold, MaxThreshold, n)
	}
	return nil
}

// NormalizeFact folds a fact to the form compared for exact duplicates:
// lowercase words joined by single spaces, punctuation dropped.
func NormalizeFact(s string) string {
	return strings.Join(factWords(s), " ")
}

func factWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// SimilarFacts reports whether two facts say nearly the same thing: equal
// after normalization, or a Jaccard similarity of their word sets of at least
// 0.8 (seed 003's deduplication rule).
func SimilarFacts(a, b string) bool {
	wa, wb := factWords(a), factWords(b)
	if strings.Join(wa, " ") == strings.Join(wb, " ") {
		return true
	}
	set := make(map[string]int8, len(wa)+len(wb))
	for _, w := range wa {
		set[w] |= 1
	}
	for _, w := range wb {
		set[w] |= 2
	}
	if len(set) == 0 {
		return false
	}
	both := 0
	for _, v := range set {
		if v == 3 {
			both++
		}
	}
	return float64(both)/float64(len(set)) >= 0.8
}

// mergeFact folds a near-duplicate into an existing fact: the newer wording,
// the union of sources and tags, the later time.
func mergeFact(old, f Fact) Fact {
	old.Content = f.Content
	old.Sources = unionStrings(old.Sources, f.Sources)
	old.Tags = unionStrings(old.Tags, f.Tags)
	if f.Updated.After(old.Updated) {
		old.Updated = f.Updated
	}
	return old
}

func unionStrings(a, b []string) []string {
	seen := make(map[string]bool, len(a)+len(b))
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// ms truncates a time to the millisecond precision both backends store, in UTC.
func ms(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}

// estimateTokens is the fallback token count for a message stored without
// one: a chars/4 estimate, at least 1.
func estimateTokens(text string) int {
	n := (len([]rune(text)) + 3) / 4
	if n < 1 {
		n = 1
	}
	return n
}
