package bpe

import (
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dlclark/regexp2"
	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/pkoukk/tiktoken-go-loader/assets"

	"github.com/recallbot/recall/bench/chattext"
)

// The reference: tiktoken-go with its offline tables, the tokenizer Recall
// used before this package. Tests only.
var (
	refOnce sync.Once
	refMu   sync.Mutex
	refs    = map[string]*tiktoken.Tiktoken{}
)

func reference(t testing.TB, name string) *tiktoken.Tiktoken {
	t.Helper()
	refOnce.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	refMu.Lock()
	defer refMu.Unlock()
	if r, ok := refs[name]; ok {
		return r
	}
	r, err := tiktoken.GetEncoding(name)
	if err != nil {
		t.Fatalf("reference %s: %v", name, err)
	}
	refs[name] = r
	return r
}

func get(t testing.TB, name string) *Encoding {
	t.Helper()
	e, err := Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// corpus is chat text as the bench generates it, plus multilingual text,
// emoji (with skin tones and joiners), code, numbers, odd whitespace and
// invalid UTF-8.
func corpus() []string {
	texts := []string{
		"hello world", "", " ", "\n\n\n", "  \t \r\n x", "<|endoftext|>", "<|endofprompt|> and <|fim_prefix|>",
		"Привет, как дела? Всё хорошо, спасибо!",
		"東京は晴れです。明日は雨が降るでしょう。",
		"北京欢迎你！我们明天见。", "안녕하세요, 만나서 반갑습니다.",
		"مرحبا بالعالم، كيف حالك؟", "שלום עולם", "नमस्ते दुनिया, आप कैसे हैं?",
		"Ελληνικά γράμματα: αβγδε ΑΒΓΔΕ", "ภาษาไทยไม่มีช่องว่างระหว่างคำ",
		"Ça va? Où est la bibliothèque? Größe, Straße, ÆØÅ æøå, Ñandú", "İstanbul ıi Iİ",
		"👋🏽 hi! 👨‍👩‍👧‍👦 family 🏳️‍🌈 flag 🇵🇹🇯🇵 ❤️‍🔥 🧑🏿‍💻 keycap 1️⃣ #️⃣",
		"😀😁😂🤣😃😄😅😆😉😊😋😎😍😘🥰😗😙😚🙂🤗🤩🤔🤨😐😑😶🙄😏😣😥😮🤐😯😪😫🥱😴😌😛😜😝🤤",
		"I'm sure you've heard they'll say we'd DON'T can't Y'ALL'S", "it's IT'S It'S",
		"func main() {\n\tfmt.Println(\"hi\")\n}\n", "x := map[string]int{\"a\": 1} // comment",
		"3.14159265358979 1,234,567.89 12345678901234567890 ٣٤٥ ¾ Ⅻ",
		"https://example.com/path?q=1&r=two#frag user@example.org",
		strings.Repeat("a", 300), strings.Repeat("ab", 200), strings.Repeat("🙂", 100),
		strings.Repeat(" ", 100) + "x" + strings.Repeat("\n", 50), strings.Repeat("=-", 150),
		"\xff\xfe invalid \xc3\x28 bytes \xe2\x82 end\x80", "tab\tsep\tvalues\r\nwindows\rmac",
		"\u200b\u200d\ufeff zero widths \u00a0nbsp\u3000ideographic space",
		"combining: e\u0301 a\u0308 n\u0303 ﬁ ligature ｆｕｌｌｗｉｄｔｈ",
	}
	texts = append(texts, chattext.HostileQueries()...)
	g := chattext.NewMessages(7)
	for i := range 300 {
		texts = append(texts, g.Message(i%2 == 1, chattext.Names))
	}
	w := chattext.NewWords(11)
	for i := range 100 {
		texts = append(texts, w.Text(5+i, chattext.WordsNames()))
	}
	// A long conversation pasted as one text, with the headers the
	// assembler puts on archive snippets.
	var b strings.Builder
	for i, t := range texts {
		b.WriteString("[2025-03-0" + strconv.Itoa(1+i%9) + " 10:4" + strconv.Itoa(i%10) + ", user] ")
		b.WriteString(t)
		b.WriteString("\n")
	}
	return append(texts, b.String())
}

func TestCountMatchesTiktoken(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: counts the bench text with both tokenizers (8 s on a busy 2-core machine); go test without -short runs it")
	}
	texts := append(corpus(), asciiCorpus()...)
	for _, name := range Names() {
		e, ref := get(t, name), reference(t, name)
		total := 0
		for _, text := range texts {
			want := len(ref.EncodeOrdinary(text))
			if got := e.Count(text); got != want {
				t.Errorf("%s: Count(%.60q) = %d, tiktoken-go says %d", name, text, got, want)
			}
			total += want
		}
		t.Logf("%s: %d texts, %d tokens, identical", name, len(texts), total)
	}
}

// TestTablesMatchTiktokenFiles checks every token of the embedded tables
// against the .tiktoken files the reference loads: same bytes, same rank,
// and each found by its bytes.
// asciiCorpus is ASCII text meant to find where the hand-written splitter
// and the pattern part: contractions in any case, runs of spaces and line
// breaks, slashes, control characters.
func asciiCorpus() []string {
	return []string{
		"'S'T'RE'Ve'm'LL'd 's 't 're 've 'm 'll 'd 'x 'r 'l 'v '",
		"don't I'M we'RE they'Ve YOU'LL he'D it'S o'clock rock'n'roll 'tis", "a'", "'", "''s", "x''ll",
		"  \n\n  x", "\t\vx\f y", "a \n b \r\n c \n\r d", "end with spaces   ", "end with break \n", " \n \n ",
		"a/b//c\r\n/ d/ /e ./\n/", "http://x.y/z?a=1&b=2", "path/to/file.go:12:3",
		"ABCdef GHI jkl MNOp QRStu VWxyZ aBC ABc X Y Z", "HTTPServer getHTTPResponse iOS macOS",
		"123456 1 12 1234 12345678 3.14 -5 +7 1e10 0x1F", "v1.2.3-rc4+build.5",
		"\x00\x01 \x1f\x7f x\x00y", "!!! ?? ... --- *** ### @@@ $$$ %%% ^^^ &&& ((( )))",
		" !x !\n \t. .\t", "[2025-03-01 10:40, Maria] hello there", "(so-called) \"quoted\" `code` {braces} <angle>",
	}
}

// The pre-tokenization patterns, as tiktoken-go v0.1.8 writes them.
var (
	o200kPattern = strings.Join([]string{
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`\p{N}{1,3}`,
		` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
		`\s*[\r\n]+`,
		`\s+(?!\S)`,
		`\s+`,
	}, "|")
	cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

var patterns = map[string]*regexp2.Regexp{
	"o200k_base":  regexp2.MustCompile(o200kPattern, regexp2.None),
	"cl100k_base": regexp2.MustCompile(cl100kPattern, regexp2.None),
}

// pieces returns how the pattern (tiktoken's, compiled with regexp2)
// splits text, and how the splitter does: the ASCII one when ascii, else
// the one for any text.
func pieces(e *Encoding, text string, ascii bool) (pattern, split []string) {
	runes := []rune(text)
	pat := patterns[e.Name()]
	m, _ := pat.FindStringMatch(text)
	for m != nil {
		pattern = append(pattern, string(runes[m.Index:m.Index+m.Length]))
		m, _ = pat.FindNextMatch(m)
	}
	sp := e.usplit
	if ascii {
		sp = e.split
	}
	for i := 0; i < len(text); {
		j := sp(text, i)
		split = append(split, text[i:j])
		i = j
	}
	return pattern, split
}

// TestSplitterMatchesPattern: on ASCII text the hand-written splitter
// gives the pattern's pieces, one for one.
func TestSplitterMatchesPattern(t *testing.T) {
	texts := append(asciiCorpus(), corpus()...)
	for _, name := range Names() {
		e := get(t, name)
		checked := 0
		for _, text := range texts {
			if !isASCII(text) {
				continue
			}
			checked++
			if p, a := pieces(e, text, true); !slices.Equal(p, a) {
				t.Errorf("%s: %.60q splits into\n%q, the pattern gives\n%q", name, text, a, p)
			}
		}
		if checked < 300 {
			t.Fatalf("only %d ASCII texts", checked)
		}
	}
}

// TestUnicodeSplitterMatchesPattern: on any text (valid UTF-8) the
// splitter for non-ASCII text gives the pattern's pieces, one for one.
func TestUnicodeSplitterMatchesPattern(t *testing.T) {
	texts := append(append(asciiCorpus(), corpus()...), unicodeCorpus()...)
	for _, name := range Names() {
		e := get(t, name)
		for _, text := range texts {
			text = strings.ToValidUTF8(text, "\uFFFD")
			if p, u := pieces(e, text, false); !slices.Equal(p, u) {
				t.Errorf("%s: %.60q splits into\n%q, the pattern gives\n%q", name, text, u, p)
			}
		}
	}
}

// unicodeCorpus is text meant to find where the splitter for any text and
// the pattern part: marks before and after capitals and small letters,
// modifier and other letters between capitals, titlecase letters,
// numbers that are not digits, spaces that are not ASCII.
func unicodeCorpus() []string {
	return []string{
		"\u0301ABC", "\u0301Abc", "\u0301abc", "A\u0301BC", "AB\u0301C", "ABC\u0301", "ABC\u0301d", "ABC\u0301D",
		"ǅungla ǅUNGLA ǈ ǋa", "Aʰb AʰB ʰʰA Aʰ ʰ", "A中B 中A A中 中a a中", "ÉCOLE École éCOLE",
		"\u0301 \u0301\u0301 x\u0301\u0301y", "!\u0301A", "\u00a0A\u00a0a", "\u3000Ab", "\u2028x\u2029y",
		"ⅫⅫⅫⅫ ①②③④ ٣٤٥٦ ¾¾¾¾", "x  \u3000\u00a0y", "a\u00a0\u00a0\nb", "\u0085\u0085x",
		"'S ǅ'S A\u0301'll ʰ'd", "\u0301's", "MÜNCHEN's", "αΒγΔ ΣΊΣΥΦΟΣ",
		"A\u0301\u0301'S", "\U0001D400\U0001D41A \U0001D400B", "x\u200dy \u200d\u200d", "\uff21\uff41 ｆｕｌｌ",
	}
}

func TestTablesMatchTiktokenFiles(t *testing.T) {
	for _, name := range Names() {
		e := get(t, name)
		raw, err := assets.Assets.ReadFile(name + ".tiktoken")
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		if e.Len() != len(lines) {
			t.Fatalf("%s: %d tokens, the file has %d", name, e.Len(), len(lines))
		}
		for _, line := range lines {
			tok64, rankS, _ := strings.Cut(line, " ")
			tok, _ := base64.StdEncoding.DecodeString(tok64)
			rank, _ := strconv.Atoi(rankS)
			if got := e.token(rank); got != string(tok) {
				t.Fatalf("%s: token %d = %q, want %q", name, rank, got, tok)
			}
			if got := e.rank(string(tok)); got != rank {
				t.Fatalf("%s: rank(%q) = %d, want %d", name, tok, got, rank)
			}
		}
		for _, absent := range []string{"", "not one token at all", "\xff\xff\xff\xff"} {
			if r := e.rank(absent); r != -1 {
				t.Errorf("%s: rank(%q) = %d, want -1", name, absent, r)
			}
		}
	}
}

func TestGetSharesAndRejectsUnknown(t *testing.T) {
	a, b := get(t, "o200k_base"), get(t, "o200k_base")
	if a != b {
		t.Error("two Gets built two encodings")
	}
	if _, err := Get("p50k_base"); err == nil || !strings.Contains(err.Error(), `"p50k_base"`) {
		t.Errorf("Get(p50k_base) error = %v", err)
	}
}

func TestCountConcurrent(t *testing.T) {
	e := get(t, "cl100k_base")
	texts := corpus()[:60]
	want := make([]int, len(texts))
	for i, s := range texts {
		want[i] = e.Count(s)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i, s := range texts {
				if got := e.Count(s); got != want[i] {
					t.Errorf("concurrent Count(%.40q) = %d, want %d", s, got, want[i])
				}
			}
		})
	}
	wg.Wait()
}

func FuzzCountMatchesTiktoken(f *testing.F) {
	for _, s := range append(corpus()[:80], asciiCorpus()...) {
		f.Add(s)
	}
	o200k, cl100k := get(f, "o200k_base"), get(f, "cl100k_base")
	ro, rc := reference(f, "o200k_base"), reference(f, "cl100k_base")
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := o200k.Count(text), len(ro.EncodeOrdinary(text)); got != want {
			t.Errorf("o200k_base: Count(%q) = %d, tiktoken-go says %d", text, got, want)
		}
		if got, want := cl100k.Count(text), len(rc.EncodeOrdinary(text)); got != want {
			t.Errorf("cl100k_base: Count(%q) = %d, tiktoken-go says %d", text, got, want)
		}
		for _, e := range []*Encoding{o200k, cl100k} {
			valid := strings.ToValidUTF8(text, "\uFFFD")
			if p, u := pieces(e, valid, false); !slices.Equal(p, u) {
				t.Errorf("%s: %q splits into %q, the pattern gives %q", e.Name(), valid, u, p)
			}
			if isASCII(text) {
				if p, a := pieces(e, text, true); !slices.Equal(p, a) {
					t.Errorf("%s: %q splits into %q, the pattern gives %q", e.Name(), text, a, p)
				}
			}
		}
	})
}

// Benchmarks: this package beside tiktoken-go on the same texts.

var sink int

func benchTexts() []string {
	g := chattext.NewWords(3)
	texts := make([]string, 2000)
	for i := range texts {
		texts[i] = g.Text(20+i%40, chattext.WordsNames())
	}
	return texts
}

func BenchmarkCount(b *testing.B) {
	texts := benchTexts()
	for _, name := range Names() {
		e := get(b, name)
		b.Run(name+"/bpe", func(b *testing.B) {
			i := 0
			for b.Loop() {
				sink = e.Count(texts[i%len(texts)])
				i++
			}
		})
		ref := reference(b, name)
		b.Run(name+"/tiktoken-go", func(b *testing.B) {
			i := 0
			for b.Loop() {
				sink = len(ref.EncodeOrdinary(texts[i%len(texts)]))
				i++
			}
		})
	}
}

func mustCl100k(tb testing.TB) string {
	d, err := cl100kData()
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// BenchmarkLoad builds an encoding's indexes from the embedded table, as
// the first Get does; heap_bytes is what they keep.
func BenchmarkLoad(b *testing.B) {
	for _, tc := range []struct {
		name, data    string
		split, usplit splitter
	}{
		{"o200k_base", o200kData, splitO200k, splitO200kUnicode}, {"cl100k_base", mustCl100k(b), splitCl100k, splitCl100kUnicode},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var e *Encoding
			for b.Loop() {
				var err error
				if e, err = build(tc.name, tc.data, tc.split, tc.usplit); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(4*len(e.start)+4*len(e.slots)), "heap_bytes")
		})
	}
}

// TestLongPiecesMergeLikeTheScan: the heap merge of long pieces gives the
// scan's count, on long runs of many kinds (the scan is quadratic, so it is
// only run here).
func TestLongPiecesMergeLikeTheScan(t *testing.T) {
	for _, name := range Names() {
		e, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, piece := range []string{
			strings.Repeat("a", 3000), strings.Repeat("ab", 700), strings.Repeat("xyz123", 300),
			strings.Repeat("😀", 400), strings.Repeat("é", 900), strings.Repeat("!?", 500),
			strings.Repeat("supercalifragilistic", 60), strings.Repeat("Привет", 120), strings.Repeat("日本語", 200),
		} {
			if got, want := e.countLongPiece(piece), e.countScan(piece); got != want {
				t.Errorf("%s %q…: heap %d, scan %d", name, piece[:12], got, want)
			}
		}
	}
}
