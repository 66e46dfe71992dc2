// Package excerpt picks what a reader sees of a text too long to show
// whole: the parts holding most of a question's words, then the beginning,
// within a size, in the text's order.
package excerpt

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// chunkBytes is the size of the parts a long document is cut into to pick
// what the model reads.
const chunkBytes = 1000

// chunks cuts text into parts of about chunkBytes, at paragraph, then
// line, then rune boundaries.
func chunks(text string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	for _, para := range strings.SplitAfter(text, "\n") {
		for len(para) > chunkBytes {
			cut := chunkBytes
			if i := strings.LastIndexAny(para[:cut], " \t"); i > chunkBytes/2 {
				cut = i + 1
			}
			for cut > 0 && !utf8.RuneStart(para[cut]) {
				cut--
			}
			flush()
			cur.WriteString(para[:cut])
			flush()
			para = para[cut:]
		}
		if cur.Len()+len(para) > chunkBytes {
			flush()
		}
		cur.WriteString(para)
	}
	flush()
	return out
}

// queryTerms are the words of a question worth looking for: lower case,
// at least 3 letters or digits, without the commonest words.
func queryTerms(q string) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if utf8.RuneCountInString(w) < 3 || commonWords[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

var commonWords = map[string]bool{
	"the": true, "and": true, "for": true, "are": true, "was": true, "what": true, "who": true, "how": true,
	"why": true, "when": true, "where": true, "which": true, "this": true, "that": true, "these": true,
	"there": true, "does": true, "did": true, "can": true, "could": true, "would": true, "should": true,
	"with": true, "about": true, "from": true, "into": true, "have": true, "has": true, "had": true,
	"you": true, "your": true, "our": true, "not": true, "but": true, "all": true, "any": true, "its": true,
	"document": true, "file": true, "text": true, "please": true, "tell": true, "say": true, "says": true,
}

// Of returns what the model reads of a text longer than max bytes:
// the parts most relevant to the question (the parts holding most of its
// words), then the beginning, up to max bytes, in the text's order with
// "[…]" where parts were left out. Without a question, or when no part
// holds its words, it is the beginning.
func Of(text, question string, max int) string {
	parts := chunks(text)
	terms := queryTerms(question)
	score := make([]int, len(parts))
	for i, p := range parts {
		low := strings.ToLower(p)
		for _, t := range terms {
			if n := strings.Count(low, t); n > 0 {
				score[i] += 100 + min(n, 20)
			}
		}
	}
	order := make([]int, len(parts))
	for i := range order {
		order[i] = i
	}
	// Relevant parts first, best first; then the rest from the beginning.
	sort.SliceStable(order, func(a, b int) bool { return score[order[a]] > score[order[b]] })
	keep := make([]bool, len(parts))
	used := 0
	for _, i := range order {
		if used+len(parts[i])+2 > max {
			if score[i] > 0 {
				continue // a smaller relevant part may still fit
			}
			break
		}
		keep[i] = true
		used += len(parts[i]) + 2
	}
	if used == 0 && len(order) > 0 {
		// Not even one part fits: the best one, cut to max.
		return cut(parts[order[0]], max)
	}
	var b strings.Builder
	gap := false
	for i, p := range parts {
		if !keep[i] {
			gap = true
			continue
		}
		if b.Len() > 0 || gap {
			b.WriteString("\n\n")
		}
		if gap {
			b.WriteString("[…]\n\n")
			gap = false
		}
		b.WriteString(p)
	}
	if gap {
		b.WriteString("\n\n[…]")
	}
	return strings.TrimSpace(b.String())
}

// cut is s shortened to at most max bytes, at a space where one is near
// the end, with "…" when something was left out.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const ell = "…"
	n := max - len(ell)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	if i := strings.LastIndexByte(s[:n], ' '); i > n/2 {
		n = i
	}
	if n <= 0 {
		return ""
	}
	return s[:n] + ell
}
