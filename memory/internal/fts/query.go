package fts

import (
	"strings"
	"unicode"
)

// MaxQueryTerms caps how many words of free text become search terms, so a
// megabyte of input costs no more than a sentence.
const MaxQueryTerms = 32

// Terms extracts the search words of free text: letters and digits split on
// everything else, lowercased, stopwords and one-letter words dropped,
// duplicates removed, at most MaxQueryTerms, in order of first appearance.
func Terms(text string) []string {
	var terms []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		w = strings.ToLower(w)
		if len([]rune(w)) < 2 || len(w) > MaxTermBytes || stopwords[w] || seen[w] {
			continue
		}
		seen[w] = true
		terms = append(terms, w)
		if len(terms) == MaxQueryTerms {
			break
		}
	}
	return terms
}

// Phrases turns free text into FTS5 phrases: one per search term (see
// Terms), each tokenized like the index (Tokens). A term may yield no token
// (it then matches nothing) or several (a phrase).
func Phrases(text string) [][]string {
	terms := Terms(text)
	if len(terms) == 0 {
		return nil
	}
	phrases := make([][]string, len(terms))
	for i, t := range terms {
		phrases[i] = phrase(t)
	}
	return phrases
}

// phrase is a term's tokens, or none when one of them is too long to be
// indexed (Indexed): no index holds it, so the phrase matches nothing.
func phrase(term string) []string {
	toks := Tokens(term)
	for _, t := range toks {
		if !Indexed(t) {
			return nil
		}
	}
	return toks
}

// Match builds an FTS5 MATCH expression that ORs the terms, each one a
// quoted string, so no user text ever reaches FTS5 syntax. It returns "" when
// there is nothing to search.
func Match(terms []string) string {
	if len(terms) == 0 {
		return ""
	}
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(t, `"`, `""`))
		b.WriteByte('"')
	}
	return b.String()
}

// stopwords are common English words that carry no search value.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are aren as at be
because been before being below between both but by can cannot could did didn do does doesn doing don
down during each few for from further had hadn has hasn have haven having he her here hers herself him
himself his how i if in into is isn it its itself just let me more most my myself no nor not now of off
on once only or other our ours ourselves out over own same she should so some such than that the their
theirs them themselves then there these they this those through to too under until up very was wasn we
were weren what when where which while who whom why will with won would you your yours yourself
yourselves also ok okay yes yeah hi hello hey please thanks thank tell know like get got want really
still even much many well ll re ve`) {
		m[w] = true
	}
	return m
}()
