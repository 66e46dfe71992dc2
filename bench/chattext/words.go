package chattext

import (
	"math/rand/v2"
	"strings"
	"unicode"
	"unicode/utf8"
)

// vocabSize is how many distinct words Words knows. Past the real words come
// made-up ones ("kelvaro"): the long tail of rare words (names of things,
// places, typos) that real chat has, so that common words are not
// over-represented in the search index.
const vocabSize = 20_000

// wordsVocab is the vocabulary of Words in rank order; word k is drawn with
// probability ∝ 1/(k+1)^1.07 (Zipf): the first 1,000 words make about 78% of
// the text, as in English.
var wordsVocab = func() []string {
	v := append(append([]string(nil), functionWords...), contentWords...)
	seen := make(map[string]bool, vocabSize)
	for _, w := range v {
		seen[w] = true
	}
	r := rand.New(rand.NewPCG(5, 6))
	const cons, vows = "bcdfghjklmnprstvz", "aeiou"
	for len(v) < vocabSize {
		var b strings.Builder
		for range 2 + r.IntN(2) {
			b.WriteByte(cons[r.IntN(len(cons))])
			b.WriteByte(vows[r.IntN(len(vows))])
			if r.IntN(3) == 0 {
				b.WriteByte(cons[r.IntN(len(cons))])
			}
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			v = append(v, w)
		}
	}
	return v
}()

// WordsNames are people's names for Words' text.
func WordsNames() []string { return wordsNames }

// Words generates running text of a given length.
type Words struct {
	r    *rand.Rand
	zipf *rand.Zipf
}

// NewWords returns a generator seeded with seed.
func NewWords(seed uint64) *Words {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &Words{r: r, zipf: rand.NewZipf(r, 1.07, 1, uint64(len(wordsVocab)-1))}
}

// Text returns n words of running text in sentences of 4–12 words; 3% of
// the word slots hold a name from people.
func (g *Words) Text(n int, people []string) string {
	var b strings.Builder
	start := true
	left := 0
	for i := 0; i < n; i++ {
		if left == 0 {
			left = 4 + g.r.IntN(9)
		}
		w := wordsVocab[g.zipf.Uint64()]
		if len(people) > 0 && g.r.IntN(100) < 3 {
			w = people[g.r.IntN(len(people))]
		}
		if w == "i" || w == "i'm" {
			w = "I" + w[1:]
		}
		if start {
			r, size := utf8.DecodeRuneInString(w)
			w = string(unicode.ToUpper(r)) + w[size:]
			start = false
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		left--
		if left == 0 || i == n-1 {
			switch p := g.r.IntN(10); {
			case p < 7:
				b.WriteByte('.')
			case p < 9:
				b.WriteByte('?')
			default:
				b.WriteByte('!')
			}
			start = true
		}
	}
	return b.String()
}

// Between returns a length in [lo, hi].
func (g *Words) Between(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

// Pool pre-generates n texts of lo–hi words.
func (g *Words) Pool(n, lo, hi int, people []string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = g.Text(g.Between(lo, hi), people)
	}
	return out
}
