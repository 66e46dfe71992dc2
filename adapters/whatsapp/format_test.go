package whatsapp

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// wj is the invisible word joiner that guards a literal marker character.
const wj = "\u2060"

func TestFormatMarkdown(t *testing.T) {
	tests := []struct {
		name, md, want string
	}{
		{"plain", "Hello, world.", "Hello, world."},
		{"bold", "this is **bold** text", "this is *bold* text"},
		{"bold underscores", "__bold__", "*bold*"},
		{"italic star", "an *italic* word", "an _italic_ word"},
		{"italic underscore", "an _italic_ word", "an _italic_ word"},
		{"strike", "~~gone~~ now", "~gone~ now"},
		{"nested", "*a **b** c*", "_a *b* c_"},
		{"bold italic", "***both***", "*_both_*"},
		{"inline code", "run `go test` now", "run ```go test``` now"},
		{"code keeps markers", "`a*b_c`", "```a*b_c```"},
		{"fenced code", "```go\nfunc main() {\n\tprintln(\"*\")\n}\n```", "```func main() {\n\tprintln(\"*\")\n}```"},
		{"code with triple backticks", "````\nx ``` y\n````", "```x ``" + wj + "` y```"},
		{"heading", "# Title\n\ntext", "*Title*\n\ntext"},
		{"heading with bold", "## **Big** news", "*Big news*"},
		{"bullets", "- one\n- two\n- three", "• one\n• two\n• three"},
		{"star bullets", "* one\n* two", "• one\n• two"},
		{"ordered", "3. c\n4. d", "3. c\n4. d"},
		{"nested list", "- a\n  - b\n- c", "• a\n  • b\n• c"},
		{"loose list", "- a\n\n- b", "• a\n\n• b"},
		{"task list", "- [x] done\n- [ ] todo", "• ☑ done\n• ☐ todo"},
		{"link", "see [the docs](https://example.com/docs)", "see the docs (https://example.com/docs)"},
		{"link same as url", "[https://example.com](https://example.com)", "https://example.com"},
		{"autolink", "<https://example.com/a_b_>", "https://example.com/a_b_"},
		{"bare url", "go to https://example.com/x now", "go to https://example.com/x now"},
		{"bare url with underscore and parens", "see https://en.wikipedia.org/wiki/Go_(programming_language) for more", "see https://en.wikipedia.org/wiki/Go_(programming_language) for more"},
		{"bare url with dunder", "https://github.com/a/b/blob/main/pkg/__init__.py", "https://github.com/a/b/blob/main/pkg/__init__.py"},
		{"bare url with underscores", "open https://example.com/a_b_c today", "open https://example.com/a_b_c today"},
		{"bare url with trailing underscore", "open https://example.com/a_b_ today", "open https://example.com/a_b_ today"},
		{"bare url with markers after parens", "see https://example.com/)__x__ ok", "see https://example.com/)__x__ ok"},
		{"bare url in code stays code", "`https://example.com/a_b`", "```https://example.com/a_b```"},
		{"url in a link label", "[https://example.com/a_b](https://example.com/a_b)", "https://example.com/a_b"},
		{"url as link destination", "[docs](https://example.com/a_b_)", "docs (https://example.com/a_b_)"},
		{"bare url with tilde", "https://example.com/~user/page", "https://example.com/~user/page"},
		{"bare url then period", "see https://example.com/x_y.", "see https://example.com/x_y."},
		{"bare url in parens", "(see https://example.com/a_(b))", "(see https://example.com/a_(b))"},
		{"bare www", "www.example.com/a_b_c", "www.example.com/a_b_c"},
		{"bare email", "mail foo_bar@example.com", "mail foo_bar@example.com"},
		{"bold url", "**https://example.com/a_b**", "*https://example.com/a_b*"},
		{"dunder file", "edit __init__.py now", "edit " + wj + "_" + wj + wj + "_" + wj + "init" + wj + "_" + wj + wj + "_" + wj + ".py now"},
		{"dunder call", "__init__(self)", wj + "_" + wj + wj + "_" + wj + "init" + wj + "_" + wj + wj + "_" + wj + "(self)"},
		{"image", "![a cat](https://example.com/cat.png)", "a cat (https://example.com/cat.png)"},
		{"quote", "> wise words\n> more *words*", "> wise words\n> more _words_"},
		{"quote paragraphs", "> one\n>\n> two", "> one\n> \n> two"},
		{"thematic break", "a\n\n---\n\nb", "a\n\n———\n\nb"},
		{"table", "| a | b |\n|---|---|\n| 1 | **2** |", "*a | b*\n1 | *2*"},
		{"soft break", "line one\nline two", "line one\nline two"},
		{"hard break", "line one  \nline two", "line one\nline two"},
		{"bold across lines", "**one\ntwo**", "*one*\n*two*"},
		{"spaces inside markers move out", "** bold **", wj + "*" + wj + wj + "*" + wj + " bold " + wj + "*" + wj + wj + "*" + wj},
		{"escaped stars", `\*not bold\*`, wj + "*" + wj + "not bold" + wj + "*" + wj},
		{"lone star", "a * b", "a " + wj + "*" + wj + " b"},
		{"snake case untouched", "use snake_case_name here", "use snake_case_name here"},
		{"underscore at word edge", "_private var", wj + "_" + wj + "private var"},
		{"tilde", "~5 minutes", wj + "~" + wj + "5 minutes"},
		{"backtick", "a \\` b", "a " + wj + "`" + wj + " b"},
		{"entities", "a &amp; b &lt;c&gt; &#42;", "a & b <c> " + wj + "*" + wj},
		{"html br", "a<br>b", "a\nb"},
		{"html kept as text", "<div>hi</div>", "<div>hi</div>"},
		{"blank", "  \n\n ", ""},
		{"leading blank lines", "\n\n  hi", "hi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(formatMarkdown(tt.md, 4000), "\n---part---\n")
			if got != tt.want {
				t.Errorf("formatMarkdown(%q)\n got %q\nwant %q", tt.md, show(got), show(tt.want))
			}
		})
	}
}

// show makes word joiners visible in failure messages.
func show(s string) string { return strings.ReplaceAll(s, wj, "⁞") }

func TestFormatPlain(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Sorry, this bot is private. Your id is whatsapp:4915112345678.", "Sorry, this bot is private. Your id is whatsapp:4915112345678."},
		{"access.allowed_users in config.yaml", "access.allowed_users in config.yaml"},
		{"**not markdown**", wj + "*" + wj + wj + "*" + wj + "not markdown" + wj + "*" + wj + wj + "*" + wj},
		{`{"key": "_x_"}`, `{"key": "` + wj + "_" + wj + "x" + wj + "_" + wj + `"}`},
	}
	for _, tt := range tests {
		if got := strings.Join(formatPlain(tt.in, 4000), "|"); got != tt.want {
			t.Errorf("formatPlain(%q) = %q, want %q", tt.in, show(got), show(tt.want))
		}
	}
}

func TestSplit(t *testing.T) {
	para := strings.Repeat("word ", 30) // 150 chars
	tests := []struct {
		name  string
		md    string
		limit int
		want  []string
	}{
		{
			name: "paragraphs", limit: 80,
			md:   "first paragraph here.\n\nsecond paragraph, a little longer than the first.\n\nthird one.",
			want: []string{"first paragraph here.\n\nsecond paragraph, a little longer than the first.", "third one."},
		},
		{
			name: "lines", limit: 30,
			md:   "line one is here\nline two is here\nline three",
			want: []string{"line one is here", "line two is here\nline three"},
		},
		{
			name: "words", limit: 30,
			md:   "alpha beta gamma delta epsilon zeta eta theta",
			want: []string{"alpha beta gamma delta epsilon", "zeta eta theta"},
		},
		{
			name: "bold span reopened", limit: 30,
			md:   "**alpha beta gamma delta epsilon zeta eta**",
			want: []string{"*alpha beta gamma delta*", "*epsilon zeta eta*"},
		},
		{
			name: "code block reopened", limit: 45,
			md:   "```\nline 1 of the code\nline 2 of the code\nline 3 of the code\n```",
			want: []string{"```line 1 of the code\nline 2 of the code```", "```line 3 of the code```"},
		},
		{
			name: "no break at all", limit: 30,
			md:   strings.Repeat("x", 70),
			want: []string{strings.Repeat("x", 30), strings.Repeat("x", 30), strings.Repeat("x", 10)},
		},
		{
			name: "long text in one paragraph", limit: 100,
			md:   para,
			want: []string{strings.TrimSpace(strings.Repeat("word ", 20)), strings.TrimSpace(strings.Repeat("word ", 10))},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := formatMarkdown(tt.md, tt.limit)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("parts:\n got %q\nwant %q", got, tt.want)
			}
			for _, p := range got {
				if n := utf8.RuneCountInString(p); n > tt.limit {
					t.Errorf("part of %d > %d runes: %q", n, tt.limit, p)
				}
			}
		})
	}
}

// A guarded marker character is never cut from its word joiners.
func TestSplitKeepsGuards(t *testing.T) {
	in := strings.Repeat("*", 200)
	for limit := 24; limit < 60; limit++ {
		for _, p := range formatPlain(in, limit) {
			if utf8.RuneCountInString(p) > limit {
				t.Fatalf("limit %d: part too long: %q", limit, show(p))
			}
			r := []rune(p)
			for i, c := range r {
				if c == '*' && (i == 0 || i == len(r)-1 || string(r[i-1]) != wj || string(r[i+1]) != wj) {
					t.Fatalf("limit %d: unguarded * at %d in %q", limit, i, show(p))
				}
			}
		}
	}
}

// checkParts verifies what every rendering must hold: parts within the
// limit, valid UTF-8, not blank, and monospace markers paired.
func checkParts(t *testing.T, in string, parts []string, limit int) {
	t.Helper()
	for _, p := range parts {
		if n := utf8.RuneCountInString(p); n > limit {
			t.Fatalf("%q: part of %d runes > %d", in, n, limit)
		}
		if !utf8.ValidString(p) {
			t.Fatalf("%q: invalid UTF-8 in part %q", in, p)
		}
		if strings.TrimSpace(p) == "" {
			t.Fatalf("%q: blank part", in)
		}
		if n := strings.Count(p, "```"); n%2 != 0 {
			t.Fatalf("%q: unpaired ``` in part %q", in, show(p))
		}
	}
}

// essence is what of s a reader must get: s without white space, word
// joiners and the formatting marker characters (which the renderer adds,
// drops or guards).
func essence(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == wordJoiner || isMarkerChar(r) {
			return -1
		}
		return r
	}, s)
}

// checkText verifies that the parts hold the text, in order, once: nothing
// lost or duplicated at the cuts (white space and markers aside).
func checkText(t *testing.T, in, text string, parts []string) {
	t.Helper()
	if got, want := essence(strings.Join(parts, "")), essence(text); got != want {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%q: the parts' text differs from the text at byte %d:\n got …%q\nwant …%q", in, i, got[i:min(len(got), i+40)], want[i:min(len(want), i+40)])
	}
}

func FuzzFormat(f *testing.F) {
	for _, s := range []string{
		"**bold** _it_ ~~s~~ `c`", "# h\n\n- a\n- b\n\n```\ncode\n```", "a * b _ c ~ d ` e",
		"> q\n> **b\nc**", "| a | b |\n|---|---|\n| 1 | 2 |", "````\n```\n````", "[x](http://y) <http://z>",
		"see https://en.wikipedia.org/wiki/Go_(programming_language).", "www.a.com/__init__.py **https://x.y/a_b** __init__.py",
		"(https://a.b/c_(d)_e) foo@b.c https://a.b/~x/*y*",
	} {
		f.Add(s, 100)
	}
	f.Fuzz(func(t *testing.T, md string, limit int) {
		if len(md) > 20000 || !utf8.ValidString(md) {
			return
		}
		limit = 24 + (limit%500+500)%500
		parts := formatMarkdown(md, limit)
		checkParts(t, md, parts, limit)
		checkText(t, md, string(renderMarkdown(md).r), parts)
		plain := formatPlain(md, limit)
		checkParts(t, md, plain, limit)
		checkText(t, md, md, plain)
		if strings.TrimSpace(md) != "" && len(formatPlain(md, limit)) == 0 {
			t.Fatalf("%q: plain text lost", md)
		}
	})
}

// TestSplitKeepsText splits a long reply of every construct at many limits:
// the parts hold its text once, in order (what FuzzFormat checks on any
// input).
func TestSplitKeepsText(t *testing.T) {
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "## Part %d\n\nSome **bold x%d** and _italic_ text with `code` and ~~strike~~, snake_case and 2*3.\n\n", i, i)
		fmt.Fprintf(&b, "- item x%d one\n- item two with a [link](https://example.com/%d)\n\n> quoted x%d line\n\n```\ncode block x%d\n```\n\n", i, i, i, i)
	}
	md := b.String()
	for limit := 24; limit < 400; limit += 7 {
		parts := formatMarkdown(md, limit)
		checkParts(t, md, parts, limit)
		checkText(t, md, string(renderMarkdown(md).r), parts)
		plain := formatPlain(md, limit)
		checkText(t, md, md, plain)
	}
}

// FuzzBareURL: a bare URL in a reply reaches WhatsApp as written — its
// "_", "~" and parentheses are never read as formatting (word joiners
// aside, which WhatsApp does not show).
func FuzzBareURL(f *testing.F) {
	for _, s := range []string{"wiki/Go_(programming_language)", "pkg/__init__.py", "~user/a_b_c", "a_(b)_c", "x__y__z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		for _, c := range path {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_~()./-", c)) {
				return
			}
		}
		url := "https://example.com/" + path
		got := strings.ReplaceAll(strings.Join(formatMarkdown("see "+url+" now", 4000), ""), wj, "")
		if got != "see "+url+" now" {
			t.Fatalf("%q became %q", url, got)
		}
	})
}
