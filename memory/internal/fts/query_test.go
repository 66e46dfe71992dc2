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
			if utf8.RuneCountInString(term) < 2 || len(term) > maxTermLen || stopwords[term] || strings.ToLower(term) != term {
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
