package memory

import (
	"strings"

	"github.com/recallbot/recall/memory/internal/fts"
)

// Message search ranks alike in every backend: the tokens, query phrases and
// bm25() of package fts over two columns, a message's text and its sender's
// name, with the statistics (N, n, avgdl) of the one conversation searched
// (SQLite keeps per-conversation terms and counters, see search_index.go and
// SQLite.Search; PostgreSQL per-conversation postings, postgres_search.go;
// JSON ranks the conversation's messages in memory), so they rank and score
// alike. Facts are ranked by the same rules; SQLite's statistics cover the
// whole facts table and the others' one owner, so absolute fact scores differ.

// MaxQueryTerms caps how many words of free text become search terms, so a
// megabyte of input costs no more than a sentence.
const MaxQueryTerms = fts.MaxQueryTerms

// Terms extracts the search words of free text: letters and digits split on
// everything else, lowercased, stopwords and one-letter words dropped,
// duplicates removed, at most MaxQueryTerms, in order of first appearance.
func Terms(text string) []string { return fts.Terms(text) }

// Column weights of message search: 1.0 for the text, 0.5 for the sender's
// name.
var messageWeights = []float64{1.0, 0.5}

// messageExtraTokens is what a message's length counts besides its text and
// sender name: nothing (the SQLite index's rowid carries the same length).
const messageExtraTokens = 0

// MatchExpr is the FTS5 MATCH expression of free text: its Terms, each a
// quoted phrase, ORed; "" when there is nothing to search. Facts are
// searched with it, and the benchmarks' stock FTS5 baseline.
func MatchExpr(text string) string { return fts.Match(fts.Terms(text)) }

// Stem is how the search reads a word (of Terms): its tokens, stemmed
// ("moving" and "moved" are "move"), joined by spaces.
func Stem(word string) string { return strings.Join(fts.Tokens(word), " ") }
