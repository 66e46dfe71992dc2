package fts

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostileQueries are texts that must never make a search fail.
func hostileQueries() []string {
	return []string{`"`, `""`, `NEAR(a b)`, `NEAR(lisbon moving, 2)`, `*`, `lisbon*`, `-x`, `-lisbon`, `a:b`, `text:lisbon`,
		`conv:c1`, `^x`, `^lisbon`, `((`, `))`, `AND OR NOT`, `lisbon AND`, `OR`, `NOT lisbon`, `{text}: x`, `+`, `'`, `\`,
		`🎉🎉`, `lisbon 🎉`, "\x00", "lis\x00bon", "\xff\xfe\xfd", "lisbon\xc3", "\u0301", "c1 c2 c3", "e\u0301te",
		strings.Repeat("lisbon ", 1500), strings.Repeat("x", 4000), strings.Repeat("ab ", 1000),
		`SELECT * FROM messages; --`, `%`, `_`, "  ", ""}
}

// FuzzQuery: any text is a valid query. Terms are at most MaxQueryTerms
// lowercase words of two letters or more, no stopwords; Phrases has one
// phrase per term; Match quotes them so that SQLite's FTS5 accepts the
// expression whatever the text (no user text reaches FTS5 syntax).
func FuzzQuery(f *testing.F) {
	for _, q := range hostileQueries() {
		f.Add(q)
	}
	db := newFTS5Oracle(f).db
	if _, err := db.Exec(`CREATE VIRTUAL TABLE q USING fts5(x, tokenize='porter unicode61');
		INSERT INTO q(x) VALUES ('I am moving to Lisbon next month'), ('NEAR(a b) AND OR NOT "quoted" col:umn'), ('Crème brûlée');`); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		terms := Terms(q)
		if len(terms) > MaxQueryTerms {
			t.Fatalf("%d terms", len(terms))
		}
		for _, term := range terms {
			if utf8.RuneCountInString(term) < 2 || len(term) > MaxTermBytes || stopwords[term] || strings.ToLower(term) != term {
				t.Fatalf("bad term %q", term)
			}
		}
		if n := len(slices.Compact(slices.Sorted(slices.Values(terms)))); n != len(terms) {
			t.Fatalf("repeated terms %q", terms)
		}
		if p := Phrases(q); len(p) != len(terms) {
			t.Fatalf("%d phrases for terms %q", len(p), terms)
		}
		match := Match(terms)
		if (match == "") != (len(terms) == 0) {
			t.Fatalf("match %q for terms %q", match, terms)
		}
		if match == "" {
			return
		}
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM q WHERE q MATCH ?`, match).Scan(&n); err != nil {
			t.Fatalf("FTS5 refuses %q (from %q): %v", match, q, err)
		}
	})
}

// TestPhraseOverBoundMatchesNothing: a term whose token is longer than
// MaxTermBytes becomes an empty phrase (Terms drops such words before, but
// folding may lengthen a word's token); one at the bound stays.
func TestPhraseOverBoundMatchesNothing(t *testing.T) {
	at := strings.Repeat("ab", MaxTermBytes/2)
	if got := phrase(at); !slices.Equal(got, []string{at}) {
		t.Fatalf("phrase of a %d-byte term: %q", len(at), got)
	}
	over := at + "c"
	if got := phrase(over); got != nil {
		t.Fatalf("phrase of a %d-byte term: %q, want none", len(over), got)
	}
	if got := phrase("lisbon " + over); got != nil {
		t.Fatalf("phrase holding a %d-byte token: %q, want none", len(over), got)
	}
	if p := Phrases("moving to lisbon " + over); len(p) != 2 || !slices.Equal(p[1], []string{"lisbon"}) {
		t.Fatalf("Phrases: %q", p)
	}
}

// TestStemsForgetsLongTokens: Stems remembers no token over MaxTermBytes (a
// 30 MB word would be held twice, as key and stem, for as long as Stems).
func TestStemsForgetsLongTokens(t *testing.T) {
	var s Stems
	long := strings.Repeat("x", 1<<20)
	for range 2 {
		if got := s.Tokens("word "+long, nil); len(got) != 2 || got[1] != long {
			t.Fatalf("Tokens: %d tokens", len(got))
		}
	}
	for k := range s.m {
		if !Indexed(k) {
			t.Fatalf("Stems remembers a %d-byte token", len(k))
		}
	}
}
