package format

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

const goPre = `<pre><code class="language-go">`

var splitTests = []struct {
	name  string
	html  string
	limit int
	want  []string
}{
	{"empty", "", 10, nil},
	{"white space only", " \n\n \t", 3, nil},
	{"fits", "<b>hi</b> there", 10, []string{"<b>hi</b> there"}},
	{"fits exactly", "abcde", 5, []string{"abcde"}},
	{"tags do not count", "<b>abc</b><i>de</i>", 5, []string{"<b>abc</b><i>de</i>"}},
	{"entity counts one", "&amp;&lt;&gt;&quot;x", 5, []string{"&amp;&lt;&gt;&quot;x"}},
	{"surrogate pair counts two", "😀😀x", 4, []string{"😀😀", "x"}},
	{"paragraph preferred", "aaaa bbbb\ncc\n\ndddd eeee", 14, []string{"aaaa bbbb\ncc", "dddd eeee"}},
	{"paragraph run dropped", "aaaa\n\n\n\nbbbb", 6, []string{"aaaa", "bbbb"}},
	{"line preferred over space", "aaaa bbbb\ncccc dddd", 12, []string{"aaaa bbbb", "cccc dddd"}},
	{"space when no line", "aaaa bbbb cccc", 11, []string{"aaaa bbbb", "cccc"}},
	{"space run dropped", "aaaa    bbbb", 6, []string{"aaaa", "bbbb"}},
	{"boundary too early is not used", "a\n\nbbbbbbbbbbbb", 8, []string{"a\n\nbbbbb", "bbbbbbb"}},
	{"hard cut in long word", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
	{"leading indentation kept", "aaaa\n  bb", 5, []string{"aaaa", "  bb"}},
	{"bold reopened", "<b>aaaa bbbb cccc</b>", 9, []string{"<b>aaaa bbbb</b>", "<b>cccc</b>"}},
	{"nested reopened in order", "<b>x <i>aaaa bbbb</i> y</b>", 8,
		[]string{"<b>x <i>aaaa</i></b>", "<b><i>bbbb</i> y</b>"}},
	{"close tag stays with its text", "<b>aaaa</b> <i>bbbb</i>", 6, []string{"<b>aaaa</b>", "<i>bbbb</i>"}},
	{"open tag goes with its text", "aaaa<b>bbbb</b>", 4, []string{"aaaa", "<b>bbbb</b>"}},
	{"link reopened with href", `<a href="https://x.y/?a=1&amp;b=2">one two three</a>`, 8,
		[]string{`<a href="https://x.y/?a=1&amp;b=2">one two</a>`, `<a href="https://x.y/?a=1&amp;b=2">three</a>`}},
	{"pre code reopened", goPre + "line1\nline2\nline3</code></pre>", 12,
		[]string{goPre + "line1\nline2</code></pre>", goPre + "line3</code></pre>"}},
	{"code indentation kept", "<pre>if x {\n\ty\n}</pre>", 8, []string{"<pre>if x {</pre>", "<pre>\ty\n}</pre>"}},
	{"blockquote reopened", "<blockquote>q1 q2 q3 q4</blockquote>", 5,
		[]string{"<blockquote>q1 q2</blockquote>", "<blockquote>q3 q4</blockquote>"}},
	{"element emptied by cut is dropped", "aaaa<b>\n\n</b>bbbb", 5, []string{"aaaa", "bbbb"}},
	{"never inside an entity", "ab&amp;cd", 3, []string{"ab&amp;", "cd"}},
	{"numeric entity astral counts two", "a&#128512;b", 2, []string{"a", "&#128512;", "b"}},
	{"never inside a surrogate pair", "a😀b", 2, []string{"a", "😀", "b"}},
	{"combining marks kept", "abcde\u0301fg", 5, []string{"abcd", "e\u0301fg"}},
	{"ZWJ sequence kept", "ab👨\u200d👩\u200d👧", 8, []string{"ab", "👨\u200d👩\u200d👧"}},
	{"flag pair kept", "a🇺🇦🇺🇦", 6, []string{"a🇺🇦", "🇺🇦"}},
	{"skin tone kept", "abc👍🏽", 5, []string{"abc", "👍🏽"}},
	{"white space window skipped", "x" + strings.Repeat(" ", 10) + "y", 4, []string{"x   ", "y"}},
	{"zero limit means Limit", "short", 0, []string{"short"}},
}

func TestSplit(t *testing.T) {
	for _, tt := range splitTests {
		t.Run(tt.name, func(t *testing.T) {
			got := Split(tt.html, tt.limit)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Split(%q, %d)\n got %q\nwant %q", tt.html, tt.limit, got, tt.want)
			}
			limit := tt.limit
			if limit < 1 {
				limit = Limit
			}
			if _, err := checkParts(tt.html, got, limit, true); err != nil {
				t.Error(err)
			}
		})
	}
}

var splitPlainTests = []struct {
	name  string
	text  string
	limit int
	want  []string
}{
	{"empty", "", 5, nil},
	{"fits", "a <b> &amp;", 11, []string{"a <b> &amp;"}},
	{"markup is text", "<b>aaaa</b>", 6, []string{"<b>aaa", "a</b>"}},
	{"entity is text", "&amp;&amp;", 3, []string{"&am", "p;&", "amp", ";"}},
	{"paragraph preferred", "aaaa bbbb\ncc\n\ndddd eeee", 14, []string{"aaaa bbbb\ncc", "dddd eeee"}},
	{"line then space", "aaaa bbbb\ncccc dddd eeee", 11, []string{"aaaa bbbb", "cccc dddd", "eeee"}},
	{"hard cut", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
	{"surrogate pairs", "😀😀😀", 3, []string{"😀", "😀", "😀"}},
	{"CJK counts one", "中文字符测试", 4, []string{"中文字符", "测试"}},
}

func TestSplitPlain(t *testing.T) {
	for _, tt := range splitPlainTests {
		t.Run(tt.name, func(t *testing.T) {
			got := SplitPlain(tt.text, tt.limit)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("SplitPlain(%q, %d)\n got %q\nwant %q", tt.text, tt.limit, got, tt.want)
			}
			if _, err := checkParts(tt.text, got, tt.limit, false); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestSplitLongReply splits the rendered 9,000-character reply at several
// limits and checks every guarantee: parts within the limit (UTF-16 text),
// valid on their own, and together the whole text with only white space
// dropped between parts.
func TestSplitLongReply(t *testing.T) {
	md := longReply()
	if n := utf8.RuneCountInString(md); n != replyLength {
		t.Fatalf("longReply has %d characters, want %d", n, replyLength)
	}
	html := Render(md)
	for _, limit := range []int{Limit, 1000, 300, 20} {
		parts := Split(html, limit)
		gaps, err := checkParts(html, parts, limit, true)
		if err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
		checkSeparators(t, limit, gaps)
		if limit == Limit && len(parts) != 3 {
			t.Errorf("limit %d: %d parts, want 3", limit, len(parts))
		}
		t.Logf("limit %d: %d parts", limit, len(parts))
	}

	// The code block crosses the first cut: closed and reopened with its
	// language.
	parts := Split(html, Limit)
	if !strings.HasSuffix(parts[0], "</code></pre>") || !strings.HasPrefix(parts[1], goPre+"if x") {
		t.Errorf("code block not closed and reopened at the cut:\n...%q\n%q...",
			parts[0][len(parts[0])-40:], parts[1][:60])
	}
	// The link text is longer than 300: the link is reopened with its href.
	const link = `<a href="https://example.com/long?a=1&amp;b=2">`
	reopened := 0
	for _, p := range Split(html, 300) {
		if strings.HasPrefix(p, link) {
			reopened++
		}
	}
	if reopened < 2 {
		t.Errorf("link reopened %d times at limit 300, want at least 2", reopened)
	}
}

// TestSplitPlainLongReply does the same for the plain-text fallback.
func TestSplitPlainLongReply(t *testing.T) {
	text := Plain(longReply())
	for _, limit := range []int{Limit, 1000, 300, 20} {
		parts := SplitPlain(text, limit)
		gaps, err := checkParts(text, parts, limit, false)
		if err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
		checkSeparators(t, limit, gaps)
	}
}

// separator is what a cut may drop: nothing (a cut inside a word), a run
// of newlines, or a run of spaces and tabs.
var separator = regexp.MustCompile(`^(|\n+|[ \t]+)$`)

// checkSeparators asserts that, in a text with no leading or trailing white
// space and no white space run longer than the limit, exactly the
// separators the parts were cut at were dropped, and nothing else.
func checkSeparators(t *testing.T, limit int, gaps []string) {
	t.Helper()
	if gaps[0] != "" || gaps[len(gaps)-1] != "" {
		t.Errorf("limit %d: white space dropped before or after the text: %q, %q", limit, gaps[0], gaps[len(gaps)-1])
	}
	for i, gap := range gaps[1 : len(gaps)-1] {
		if !separator.MatchString(gap) {
			t.Errorf("limit %d: %q dropped between parts %d and %d, not a separator", limit, gap, i, i+1)
		}
	}
}

func TestValidTelegramHTML(t *testing.T) {
	valid := []string{
		"", "text &lt;&gt;&amp;&quot; &#65; &#x1F600;", "<b>b <i>i <u>u <s>s</s></u></i></b>",
		`<a href="https://x.y/?a=1&amp;b=2"><b>l</b></a>`, "<code>c</code>", "<pre>p</pre>",
		`<pre><code class="language-go">x</code></pre>`, "<blockquote><b>q</b> <pre>c</pre></blockquote>",
		"<tg-spoiler>s</tg-spoiler>", "<b><code>c</code></b>",
	}
	invalid := []string{
		"a < b", "a > b", "a & b", "&nbsp;", "&#0;", "&#xD800;", "<script>x</script>", "<b>x", "x</b>",
		"<b><i>x</b></i>", `<b class="x">y</b>`, `<a href="x" onclick="y">z</a>`, `<a>x</a>`,
		`<code class="language-go">x</code>`, `<pre><code class="lang">x</code></pre>`,
		"<code><b>x</b></code>", "<pre><b>x</b></pre>", `<pre>a<code class="language-go">x</code></pre>`,
		`<a href="x"><a href="y">z</a></a>`, `<a href="x"><code>z</code></a>`,
		"<blockquote><blockquote>x</blockquote></blockquote>", "<b><pre>x</pre></b>", "\xff",
	}
	for _, s := range valid {
		if err := validTelegramHTML(s); err != nil {
			t.Errorf("validTelegramHTML(%q) = %v, want nil", s, err)
		}
	}
	for _, s := range invalid {
		if validTelegramHTML(s) == nil {
			t.Errorf("validTelegramHTML(%q) = nil, want an error", s)
		}
	}
}
