package fts

import (
	"math"
	"sort"
)

const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Doc is one indexed row: its tokens per column.
type Doc struct {
	Cols [][]string
}

// Length is the row's length in tokens over all columns, plus extra.
func (d *Doc) Length(extra int) int {
	n := extra
	for _, c := range d.Cols {
		n += len(c)
	}
	return n
}

// Score is a matching document (its index in the docs ranked) and its bm25
// score (positive, higher is better).
type Score struct {
	Doc   int
	Score float64
}

// Rank scores every document that matches at least one phrase. docs are
// all rows of the index: they all count toward N and avgdl. weights are the
// column weights; extra is the length of unindexed-for-ranking columns.
func Rank(docs []*Doc, phrases [][]string, weights []float64, extra int) []Score {
	if len(docs) == 0 || len(phrases) == 0 {
		return nil
	}
	// Single-token phrases are counted with one pass over each column.
	single := map[string][]int{}
	var multi []int
	for i, p := range phrases {
		switch len(p) {
		case 0:
		case 1:
			single[p[0]] = append(single[p[0]], i)
		default:
			multi = append(multi, i)
		}
	}
	nPhrase := len(phrases)
	type match struct {
		doc  int
		freq []float64
	}
	var matches []match
	hits := make([]int64, nPhrase)
	var total int64
	freq := make([]float64, nPhrase)
	seen := make([]bool, nPhrase)
	for di, d := range docs {
		total += int64(d.Length(extra))
		any := false
		for i := range freq {
			freq[i], seen[i] = 0, false
		}
		for ci, col := range d.Cols {
			w := 1.0
			if ci < len(weights) {
				w = weights[ci]
			}
			if len(single) > 0 {
				for _, tok := range col {
					for _, pi := range single[tok] {
						freq[pi] += w
						seen[pi] = true
						any = true
					}
				}
			}
			for _, pi := range multi {
				if n := PhraseInstances(col, phrases[pi]); n > 0 {
					freq[pi] += w * float64(n)
					seen[pi] = true
					any = true
				}
			}
		}
		if !any {
			continue
		}
		for i, s := range seen {
			if s {
				hits[i]++
			}
		}
		matches = append(matches, match{di, append([]float64(nil), freq...)})
	}
	if len(matches) == 0 {
		return nil
	}
	nRow := float64(len(docs))
	avgdl := float64(total) / nRow
	idf := make([]float64, nPhrase)
	for i, n := range hits {
		idf[i] = IDF(nRow, float64(n))
	}
	out := make([]Score, len(matches))
	for mi, m := range matches {
		D := float64(docs[m.doc].Length(extra))
		score := 0.0
		for i, f := range m.freq {
			score += TermScore(idf[i], f, D, avgdl)
		}
		out[mi] = Score{Doc: m.doc, Score: score}
	}
	return out
}

// IDF is FTS5's idf of a phrase in n of nRow documents.
func IDF(nRow, n float64) float64 {
	v := math.Log((nRow - n + 0.5) / (n + 0.5))
	if v <= 0 {
		v = 1e-6
	}
	return v
}

// TermScore is one phrase's part of a document's score: f its weighted
// instances, D the document's length. Every backend sums these in phrase
// order, so they compute the same floating-point score.
func TermScore(idf, f, D, avgdl float64) float64 {
	return idf * ((f * (bm25K1 + 1.0)) / (f + bm25K1*(1-bm25B+bm25B*D/avgdl)))
}

// PhraseInstances counts where the phrase occurs as consecutive tokens of col.
func PhraseInstances(col, phrase []string) int {
	n := 0
	for i := 0; i+len(phrase) <= len(col); i++ {
		ok := true
		for j, t := range phrase {
			if col[i+j] != t {
				ok = false
				break
			}
		}
		if ok {
			n++
		}
	}
	return n
}

// SortScores orders by score, best first, then by the tie-break key,
// highest first (message or fact id: most recent first).
func SortScores(s []Score, key func(doc int) int64) {
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].Score != s[j].Score {
			return s[i].Score > s[j].Score
		}
		return key(s[i].Doc) > key(s[j].Doc)
	})
}
