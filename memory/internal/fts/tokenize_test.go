package fts

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/ncruces/go-sqlite3"
	_ "github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"
)

// registerFTS5 adds FTS5 to the driver's connections once: the oracle is
// SQLite's own tokenizer.
var registerFTS5 sync.Once

// fts5Oracle tokenizes text with SQLite's own FTS5 'porter unicode61'
// tokenizer, through an fts5vocab table.
type fts5Oracle struct{ db *sql.DB }

func newFTS5Oracle(t testing.TB) *fts5Oracle {
	t.Helper()
	registerFTS5.Do(func() { sqlite3.AutoExtension(fts5.Register) })
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return &fts5Oracle{db}
}

// tokens returns each text's tokens in order.
func (o *fts5Oracle) tokens(t testing.TB, texts []string) [][]string {
	t.Helper()
	for _, q := range []string{`DROP TABLE IF EXISTS v`, `DROP TABLE IF EXISTS t`,
		`CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61')`,
		`CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')`} {
		if _, err := o.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := o.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range texts {
		if _, err := tx.Exec(`INSERT INTO t(rowid, x) VALUES (?, ?)`, i+1, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	rows, err := o.db.Query(`SELECT term, doc, offset FROM v`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	type inst struct {
		term     string
		doc, off int
	}
	var all []inst
	for rows.Next() {
		var in inst
		if err := rows.Scan(&in.term, &in.doc, &in.off); err != nil {
			t.Fatal(err)
		}
		all = append(all, in)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].doc != all[j].doc {
			return all[i].doc < all[j].doc
		}
		return all[i].off < all[j].off
	})
	out := make([][]string, len(texts))
	for _, in := range all {
		out[in.doc-1] = append(out[in.doc-1], in.term)
	}
	return out
}

// TestTokensMatchSQLite compares Tokens (the unicode61 tokenizer and the
// Porter stemmer) with SQLite's own on English words, random words built
// from Porter suffixes, other scripts, diacritics and malformed UTF-8. Set
// RECALL_FULL_DICT=1 to add every word of /usr/share/dict/words.
func TestTokensMatchSQLite(t *testing.T) {
	o := newFTS5Oracle(t)
	var texts []string
	if b, err := os.ReadFile("/usr/share/dict/words"); err == nil && os.Getenv("RECALL_FULL_DICT") != "" {
		texts = append(texts, strings.Fields(string(b))...)
	}
	texts = append(texts, strings.Fields(`caresses ponies ties caress cats feed agreed plastered bled
		motoring sing conflated troubled sized hopping tanned falling hissing fizzed failing filing happy sky
		relational conditional rational valenci hesitanci digitizer conformabli radicalli differentli vileli
		analogousli vietnamization predication operator feudalism decisiveness hopefulness callousness
		formaliti sensitiviti sensibiliti triplicate formative formalize electriciti electrical hopeful
		goodness revival allowance inference airliner gyroscopic adjustable defensible irritant replacement
		adjustment dependent adoption homologou communism activate angulariti homologous effective bowdlerize
		probate rate cease controll roll generalizations oscillators eed ied ies sses aed aing ying yed y yy
		moving moved mover moves move running runs ran agreement agreements lisbon's`)...)
	rng := rand.New(rand.NewPCG(1, 2))
	letters := "aeiouybcdlmnrstgz"
	suffixes := []string{"", "s", "es", "ies", "sses", "ed", "eed", "ing", "y", "ational", "tional", "enci", "anci",
		"izer", "logi", "bli", "alli", "entli", "eli", "ousli", "ization", "ation", "ator", "alism", "iveness",
		"fulness", "ousness", "aliti", "iviti", "biliti", "ical", "ness", "icate", "iciti", "ful", "ative", "alize",
		"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "sion", "tion", "ou",
		"ism", "ate", "iti", "ous", "ive", "ize", "e", "ll", "at", "bl", "iz"}
	for range 6000 {
		n := 1 + rng.IntN(7)
		var b strings.Builder
		for range n {
			b.WriteByte(letters[rng.IntN(len(letters))])
		}
		b.WriteString(suffixes[rng.IntN(len(suffixes))])
		texts = append(texts, b.String())
	}
	// Unicode: diacritics, other scripts, case, combining marks, malformed
	// UTF-8, long tokens.
	texts = append(texts, "Crème BRÛLÉE à la française", "naïve café résumé", "ŞİŞLİ İstanbul", "Ǆemal ǅ ǆ",
		"straße STRASSE", "Ελληνικά ΆΈΉ", "Москва ЁЖИК", "日本語のテキスト", "عربى", "a\u0301b e\u0300\u0301x",
		"\u0301start", "x\u200dy", "1²3½4", "µ ÿ Ÿ ﬁ ﬀ", "emoji 🎉 party🎉time", "\x00nul\x00bytes", "bad\xffutf\xc3",
		"\xa9\xaa\xba stray", "\xc3\xa9\xa9", "\xe0\x80\x80overlong", "\xed\xa0\x80surrogate", "\xf4\x90\x80\x80big",
		"\xf8\x88\x80\x80\x80five", "\xef\xbf\xbe", strings.Repeat("abcdefghij", 7)+"ing", strings.Repeat("é", 40)+"s",
		"ǅemaling", "ꂂꂂed", "ȸed", "AbC-dEf_gh.ij", "don't won't l'été", "ÀÉÎÕÜ àéîõü ÇçÑñ", "ǖǘǚ ậấ ḯ")
	for range 1500 {
		n := 1 + rng.IntN(6)
		var b strings.Builder
		for range n {
			switch rng.IntN(6) {
			case 0:
				b.WriteByte(byte(rng.IntN(256)))
			case 1:
				b.WriteRune(rune(0x80 + rng.IntN(0x2400)))
			case 2:
				b.WriteRune(rune(rng.IntN(0x110000)))
			default:
				b.WriteByte(letters[rng.IntN(len(letters))])
			}
		}
		texts = append(texts, b.String())
	}
	want := o.tokens(t, texts)
	bad := 0
	for i, s := range texts {
		got := Tokens(s)
		if !slices.Equal(got, want[i]) {
			bad++
			if bad <= 20 {
				t.Errorf("%q: got %q, SQLite %q", s, got, want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d texts tokenized differently", bad, len(texts))
	}
}

// TestGenerateTables regenerates tables.go from SQLite's own
// tokenizer: every code point below U+100000 is tokenized as "<c>q" and is
// a token character when it starts a token. It also checks fts5Fold against
// SQLite for every token character. Run with RECALL_GENERATE_FTS5=1.
func TestGenerateTables(t *testing.T) {
	if os.Getenv("RECALL_GENERATE_FTS5") == "" {
		t.Skip("set RECALL_GENERATE_FTS5=1 to regenerate tables.go")
	}
	o := newFTS5Oracle(t)
	var cps []rune
	for c := rune(0x80); c < 0x100000; c++ {
		if c >= 0xD800 && c <= 0xDFFF || c == 0xFFFE || c == 0xFFFF {
			continue // decoded as U+FFFD by SQLite
		}
		cps = append(cps, c)
	}
	const batch = 4096
	var docs []string
	for i := 0; i < len(cps); i += batch {
		var b strings.Builder
		for _, c := range cps[i:min(i+batch, len(cps))] {
			b.WriteRune(c)
			b.WriteString("q ")
		}
		docs = append(docs, b.String())
	}
	var toks []string
	for _, d := range o.tokens(t, docs) {
		toks = append(toks, d...)
	}
	if len(toks) != len(cps) {
		t.Fatalf("%d tokens for %d code points", len(toks), len(cps))
	}
	var ranges [][2]uint32
	for i, c := range cps {
		if toks[i] == "q" {
			continue // a separator: the token is the q alone
		}
		if f := strings.TrimSuffix(toks[i], "q"); string(fts5WriteUTF8(nil, fts5Fold(uint32(c)))) != f {
			r, _ := utf8.DecodeRuneInString(f)
			t.Errorf("fold %U: SQLite %U, fts5Fold %U", c, r, fts5Fold(uint32(c)))
		}
		if n := len(ranges); n > 0 && ranges[n-1][1] == uint32(c)-1 {
			ranges[n-1][1] = uint32(c)
		} else {
			ranges = append(ranges, [2]uint32{uint32(c), uint32(c)})
		}
	}
	var b strings.Builder
	b.WriteString(`// Code generated from SQLite's FTS5 unicode61 tokenizer (TestGenerateTables); DO NOT EDIT.

package fts

// fts5TokenRanges are the non-ASCII code points unicode61 takes as token
// characters (Unicode 6.1 categories L*, N* and Co, below U+100000), as
// inclusive ranges in ascending order.
var fts5TokenRanges = [...][2]uint32{
`)
	for i, r := range ranges {
		if i%4 == 0 {
			b.WriteString("\t")
		}
		fmt.Fprintf(&b, "{0x%X, 0x%X},", r[0], r[1])
		if i%4 == 3 || i == len(ranges)-1 {
			b.WriteString("\n")
		} else {
			b.WriteString(" ")
		}
	}
	b.WriteString("}\n")
	if err := os.WriteFile("tables.go", []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d ranges written", len(ranges))
}

// FuzzTokensMatchSQLite: Tokens gives SQLite's own 'porter unicode61'
// tokens for any text, and so does Stems, once knowing none of its tokens
// and once knowing them all.
func FuzzTokensMatchSQLite(f *testing.F) {
	for _, s := range []string{"Crème BRÛLÉE à la française", "caresses ponies ties", "generalizations oscillators",
		"ŞİŞLİ İstanbul", "Ǆemal ǅ ǆ", "a\u0301b e\u0300\u0301x", "\u0301start", "1²3½4", "µ ÿ Ÿ ﬁ ﬀ",
		"emoji 🎉 party🎉time", "\x00nul\x00bytes", "bad\xffutf\xc3", "\xe0\x80\x80overlong", "\xed\xa0\x80surrogate",
		"\xf4\x90\x80\x80big", "\xf8\x88\x80\x80\x80five", strings.Repeat("é", 40) + "s", "don't won't l'été"} {
		f.Add(s)
	}
	o := newFTS5Oracle(f)
	f.Fuzz(func(t *testing.T, s string) {
		want := o.tokens(t, []string{s})[0]
		if got := Tokens(s); !slices.Equal(got, want) {
			t.Fatalf("%q: got %q, SQLite %q", s, got, want)
		}
		var st Stems
		for round := range 2 {
			if got := st.Tokens(s, nil); !slices.Equal(got, want) {
				t.Fatalf("%q, round %d: Stems gave %q, SQLite %q", s, round, got, want)
			}
		}
	})
}

// TestStemsTokensAsTokens: Stems gives the tokens Tokens gives, text after
// text with one memory of stems (the tokens met before taken from it), in
// every script the tokenizer folds, and past its size bound.
func TestStemsTokensAsTokens(t *testing.T) {
	texts := []string{
		"Running runners ran; the RUNNING man runs.",
		"Ça va? Déjà vu — naïve café, Straße, ĲSSELMEER, ǅemal",
		"Привет, как дела? Всё хорошо. 東京タワー 🎉 emoji 😀 mixed",
		"connected connecting connection connections",
		"e-mail co-operate 3.14 v2 x86_64 user@example.com",
		"", "   ", "a",
	}
	for i := range stemsMax/2 + 100 { // past stemsMax with distinct tokens
		texts = append(texts, fmt.Sprintf("token%dx relational%d conditional generalizations", i*37, i))
	}
	var s Stems
	var out []string
	for round := range 2 {
		for _, text := range texts {
			out = s.Tokens(text, out[:0])
			if want := Tokens(text); !slices.Equal(out, want) && (len(out) > 0 || len(want) > 0) {
				t.Fatalf("round %d, %q: Stems gave %q, Tokens %q", round, text, out, want)
			}
		}
	}
}
