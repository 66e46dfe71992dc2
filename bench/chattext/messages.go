package chattext

import (
	"math/rand/v2"
	"strings"
	"unicode"
	"unicode/utf8"
)

// messageVocab is the vocabulary of Messages in rank order: function words,
// then content words. Rank k is drawn with probability ∝ 1/(k+1)^1.05.
var messageVocab = append(append([]string(nil), messageFunctionWords...), messageContentWords...)

// Messages generates chat messages and search queries.
type Messages struct {
	r    *rand.Rand
	zipf *rand.Zipf
}

// NewMessages returns a generator seeded with seed.
func NewMessages(seed uint64) *Messages {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &Messages{r: r, zipf: rand.NewZipf(r, 1.05, 1, uint64(len(messageVocab)-1))}
}

// Word draws one word of running text.
func (g *Messages) Word() string { return messageVocab[g.zipf.Uint64()] }

// ContentWord draws a word a user would search for: the same Zipf
// distribution restricted to content words.
func (g *Messages) ContentWord() string {
	for {
		if k := g.zipf.Uint64(); int(k) >= len(messageFunctionWords) {
			return messageVocab[k]
		}
	}
}

// Sentence is n words; with probability 3% a word slot holds a name.
func (g *Messages) Sentence(n int, names []string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		w := g.Word()
		if len(names) > 0 && g.r.IntN(100) < 3 {
			w = names[g.r.IntN(len(names))]
		}
		if w == "i" || w == "i'm" {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		if i == 0 {
			r, size := utf8.DecodeRuneInString(w)
			w = string(unicode.ToUpper(r)) + w[size:]
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		if i > 4 && i < n-3 && g.r.IntN(12) == 0 {
			b.WriteByte(',')
		}
	}
	switch p := g.r.IntN(10); {
	case p < 7:
		b.WriteByte('.')
	case p < 9:
		b.WriteByte('?')
	default:
		b.WriteByte('!')
	}
	return b.String()
}

// Message is a chat message: users write 3–22 words, the assistant 12–56,
// in one to three sentences.
func (g *Messages) Message(assistant bool, names []string) string {
	n := 3 + g.r.IntN(20)
	if assistant {
		n = 12 + g.r.IntN(45)
	}
	var parts []string
	for n > 0 {
		k := n
		if n > 8 && g.r.IntN(2) == 0 {
			k = 4 + g.r.IntN(n-6)
		}
		parts = append(parts, g.Sentence(k, names))
		n -= k
	}
	return strings.Join(parts, " ")
}

// Query is what a user might search the archive for: 1–4 content words,
// one in ten with a person's name.
func (g *Messages) Query(names []string) string {
	n := 1 + g.r.IntN(4)
	words := make([]string, n)
	for i := range words {
		words[i] = g.ContentWord()
	}
	if len(names) > 0 && g.r.IntN(10) == 0 {
		words[g.r.IntN(n)] = names[g.r.IntN(len(names))]
	}
	return strings.Join(words, " ")
}

// HostileQueries are inputs that must neither break nor stall search.
func HostileQueries() []string {
	g := NewMessages(99)
	var paste []string
	for len(paste) < 3000 {
		paste = append(paste, g.Word())
	}
	return []string{
		`"unbalanced quote AND OR NOT (`,
		`conv:c1 OR * NEAR(time work, 2) ^first`,
		`'; DROP TABLE messages; --`,
		`%_% \% [a-z]* _`,
		`🙂🙂🙂 ¿¿?? … — «»`,
		`what is it that you were about to do with them`,                       // stopwords only
		strings.Repeat("time ", 2000),                                          // one word 2,000 times
		strings.Join(paste, " "),                                               // a pasted page of text: 32 terms
		strings.Repeat("x", 5000) + " " + strings.Repeat("long", 40) + " work", // over-long "words"
		`Maria Tomás Ana João Sofia Rui`,                                       // names only
	}
}
