package config

import "strings"

// nearest returns the index of the candidate most like s, for "did you
// mean": the one holding a run of words (split at "_" and ".") closest to s
// in edit distance, so that TOKEN finds TELEGRAM_TOKEN and DATA finds
// DATA_DIR; among equals the one closest as a whole, then the first. Case
// is ignored. It returns -1 when there is no candidate.
func nearest(s string, candidates []string) int {
	s = normalizeName(s)
	best, bestPart, bestWhole := -1, 0, 0
	for i, c := range candidates {
		c = normalizeName(c)
		whole := editDistance(s, c)
		part := whole
		words := strings.Split(c, "_")
		for from := range words {
			for to := from + 1; to <= len(words); to++ {
				part = min(part, editDistance(s, strings.Join(words[from:to], "_")))
			}
		}
		if best < 0 || part < bestPart || part == bestPart && whole < bestWhole {
			best, bestPart, bestWhole = i, part, whole
		}
	}
	return best
}

// normalizeName upper-cases a key or variable name and writes its
// separators as "_", so "memory.budget" and "MEMORY_BUDGET" compare equal.
func normalizeName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, ".", "_"))
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
