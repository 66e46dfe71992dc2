package format

import (
	"strings"
	"sync"
	"testing"
)

var renderTests = []struct {
	name, md, want string
}{
	{"empty", "", ""},
	{"white space only", "  \n\t\n ", ""},
	{"plain text", "hello world", "hello world"},
	{"bold", "**bold** and __bold__", "<b>bold</b> and <b>bold</b>"},
	{"italic", "*it* and _it_", "<i>it</i> and <i>it</i>"},
	{"bold italic", "***both***", "<i><b>both</b></i>"},
	{"nested same tag not reopened", "**a **b** c**", "<b>a b c</b>"},
	{"strikethrough", "~~gone~~ stays", "<s>gone</s> stays"},
	{"single tilde is literal", "~5 min to ~10 min", "~5 min to ~10 min"},
	{"strike around bold", "~~**bs**~~", "<s><b>bs</b></s>"},
	{"inline code escaped", "use `a<b && c>d`", "use <code>a&lt;b &amp;&amp; c&gt;d</code>"},
	{"inline code with backtick", "`` ` ``", "<code>`</code>"},
	{"code inside bold", "**`x` y**", "<b><code>x</code> y</b>"},
	{"fenced code with language", "```go\nif a < b && c {\n\treturn\n}\n```",
		"<pre><code class=\"language-go\">if a &lt; b &amp;&amp; c {\n\treturn\n}</code></pre>"},
	{"fenced code without language", "```\n**not bold** <b>\n```", "<pre>**not bold** &lt;b&gt;</pre>"},
	{"fenced code hostile language", "```go\"><script>\nx\n```", "<pre>x</pre>"},
	{"fenced code language first word", "```c++ extra\nx\n```", "<pre><code class=\"language-c++\">x</code></pre>"},
	{"indented code", "    x := 1\n    y := 2", "<pre>x := 1\ny := 2</pre>"},
	{"empty code block dropped", "a\n\n```\n```\n\nb", "a\n\nb"},
	{"link", "[Go](https://go.dev/doc?a=1&b=2)", `<a href="https://go.dev/doc?a=1&amp;b=2">Go</a>`},
	{"link with formatting", "[a *b* `c`](https://x.y)", `<a href="https://x.y">a <i>b</i> c</a>`},
	{"link with quote in url", `[q](https://x.y/"a")`, `<a href="https://x.y/%22a%22">q</a>`},
	{"link with space in url", "[x](<https://a.b/c d>)", `<a href="https://a.b/c%20d">x</a>`},
	{"link mailto and tg", "[m](mailto:a@b.c) [t](tg://resolve?domain=x)",
		`<a href="mailto:a@b.c">m</a> <a href="tg://resolve?domain=x">t</a>`},
	{"link javascript is text", "[click](javascript:alert(1))", "click"},
	{"link data is text", "[d](data:text/html,<b>)", "d"},
	{"link ftp is text", "[f](ftp://x.y)", "f"},
	{"link relative is text", "[r](/docs)", "r"},
	{"link without host is text", "[h](http:///x)", "h"},
	{"empty link shows url", "[](https://e.com)", `<a href="https://e.com">https://e.com</a>`},
	{"reference link", "[ref]\n\n[ref]: https://r.example", `<a href="https://r.example">ref</a>`},
	{"autolink", "<https://a.b/c>", `<a href="https://a.b/c">https://a.b/c</a>`},
	{"autolink email", "<foo@bar.com>", `<a href="mailto:foo@bar.com">foo@bar.com</a>`},
	{"bare url", "see https://go.dev/doc.", `see <a href="https://go.dev/doc">https://go.dev/doc</a>.`},
	{"bare www", "www.example.org", `<a href="http://www.example.org">www.example.org</a>`},
	{"image becomes link", "![a diagram](https://i.example/x.png)", `<a href="https://i.example/x.png">a diagram</a>`},
	{"image without alt", "![](https://i.example/x.png)", `<a href="https://i.example/x.png">https://i.example/x.png</a>`},
	{"image unsafe is alt text", "![x](javascript:alert(1))", "x"},
	{"image inside link not nested", "[![img](https://i)](https://l)", `<a href="https://l">img</a>`},
	{"code inside link is text", "[`code`](https://x.y)", `<a href="https://x.y">code</a>`},
	{"heading", "# Title", "<b>Title</b>"},
	{"headings with formatting", "# H1\n## H2 *x* **y**", "<b>H1</b>\n\n<b>H2 <i>x</i> y</b>"},
	{"setext heading", "Title\n=====\n\ntext", "<b>Title</b>\n\ntext"},
	{"paragraphs", "one\ntwo\n\nthree", "one\ntwo\n\nthree"},
	{"hard break", "a  \nb\\\nc", "a\nb\nc"},
	{"bullet list", "- a\n- b\n* c", "• a\n• b\n\n• c"},
	{"nested list", "- a\n  - b\n    - c\n- d", "• a\n  • b\n    • c\n• d"},
	{"ordered list", "1. x\n2. y\n   - z\n3. w", "1. x\n2. y\n   • z\n3. w"},
	{"ordered list start", "7. seven\n8. eight", "7. seven\n8. eight"},
	{"ordered list paren", "1) one", "1. one"},
	{"loose list", "- a\n\n- b", "• a\n\n• b"},
	{"list item paragraphs", "- para\n\n  second", "• para\n\n  second"},
	{"list item continuation line", "- a\n  b", "• a\n  b"},
	{"list with code block", "- x\n\n  ```\n  code\n  ```", "• x\n\n<pre>code</pre>"},
	{"task list", "- [ ] todo\n- [x] done", "• ☐ todo\n• ☑ done"},
	{"blockquote", "> a\n> **b**\n>\n> c", "<blockquote>a\n<b>b</b>\n\nc</blockquote>"},
	{"nested blockquote flattened", "> q\n>> qq", "<blockquote>q\n\nqq</blockquote>"},
	{"code in blockquote", "> ```\n> x\n> ```", "<blockquote><pre>x</pre></blockquote>"},
	{"list in blockquote", "> - a\n> - b", "<blockquote>• a\n• b</blockquote>"},
	{"thematic break", "a\n\n---\n\nb", "a\n\n──────────\n\nb"},
	{"table", "| Name | Age |\n|------|----:|\n| Alice | 30 |\n| Bob | 4 |",
		"<pre>Name  | Age\n------+----\nAlice |  30\nBob   |   4</pre>"},
	{"table center and wide", "| a | b |\n|:-:|---|\n| 東京 | 🙂 |\n| x | <y> & |",
		"<pre> a   | b\n-----+------\n東京 | 🙂\n x   | &lt;y&gt; &amp;</pre>"},
	{"table cell formatting dropped", "| *a* | [l](https://x.y) |\n|---|---|\n| `c` | d |",
		"<pre>a | l (https://x.y)\n--+----------------\nc | d</pre>"},
	{"raw html script", "<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"},
	{"raw html inline attributes", `hi <b onclick="x()">there</b>`, `hi &lt;b onclick="x()"&gt;there&lt;/b&gt;`},
	{"raw html block", "<div>\nblock\n</div>", "&lt;div&gt;\nblock\n&lt;/div&gt;"},
	{"raw html link", `<a href="javascript:x">y</a>`, `&lt;a href="javascript:x"&gt;y&lt;/a&gt;`},
	{"ampersands", "a & b &amp; c &copy; &#128512; &bogus;", "a &amp; b &amp; c © 😀 &amp;bogus;"},
	{"bad numeric references", "&#0; &#xD800;", "\uFFFD \uFFFD"},
	{"lone less than", "<", "&lt;"},
	{"lone greater than", ">", "&gt;"},
	{"comparisons", "a < b > c", "a &lt; b &gt; c"},
	{"backslash escapes", `\*not italic\* \<b\>`, "*not italic* &lt;b&gt;"},
	{"emoji", "emoji 😀🎉 👍🏽 👨‍👩‍👧 🇺🇦", "emoji 😀🎉 👍🏽 👨‍👩‍👧 🇺🇦"},
	{"CJK", "中文 **粗体** テスト", "中文 <b>粗体</b> テスト"},
	{"RTL", "שלום **עולם** مرحبا", "שלום <b>עולם</b> مرحبا"},
	{"snake case not italic", "snake_case_name and a_b_c", "snake_case_name and a_b_c"},
	{"unclosed bold", "**bold", "**bold"},
	{"unclosed italic", "*it and _it", "*it and _it"},
	{"unclosed code", "`code", "`code"},
	{"unclosed fence", "```go\nx", `<pre><code class="language-go">x</code></pre>`},
	{"nothing visible shows source", "#", "#"},
	{"unsafe empty link shows source", "[](javascript:x)", "[](javascript:x)"},
	{"invalid UTF-8 and NUL", "a\xffb\x00c", "a\uFFFDb\uFFFDc"},
	{"CRLF", "a\r\nb\r\n\r\nc", "a\nb\n\nc"},
}

func TestRender(t *testing.T) {
	for _, tt := range renderTests {
		t.Run(tt.name, func(t *testing.T) {
			got := Render(tt.md)
			if got != tt.want {
				t.Errorf("Render(%q)\n got %q\nwant %q", tt.md, got, tt.want)
			}
			if err := validTelegramHTML(got); err != nil {
				t.Errorf("Render(%q) = %q: invalid: %v", tt.md, got, err)
			}
		})
	}
}

func TestRenderLongReplyValid(t *testing.T) {
	got := Render(longReply())
	if err := validTelegramHTML(got); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<b>Migration plan</b>", `<pre><code class="language-go">if x0 := f(0); x0 &lt; limit &amp;&amp; ok`,
		`<a href="https://example.com/long?a=1&amp;b=2">a very long`, "<blockquote>A closing quote with <b>bold</b>",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Render(longReply()) lacks %q", want)
		}
	}
}

var plainTests = []struct {
	name, md, want string
}{
	{"empty", "", ""},
	{"emphasis dropped", "**b** *i* ~~s~~ `c`", "b i s c"},
	{"heading", "# Title\n\ntext", "Title\n\ntext"},
	{"link with url", "[Go](https://go.dev)", "Go (https://go.dev)"},
	{"link text is url", "[https://go.dev](https://go.dev)", "https://go.dev"},
	{"unsafe link text only", "[x](javascript:y)", "x"},
	{"autolink", "<https://a.b> www.c.d", "https://a.b www.c.d"},
	{"image", "![alt](https://i.png)", "alt (https://i.png)"},
	{"lists", "- a\n  - b\n1. c", "• a\n  • b\n\n1. c"},
	{"code block kept", "```go\nif a < b {\n}\n```", "if a < b {\n}"},
	{"code block in list indented", "- x\n\n  ```\n  a\n  b\n  ```", "• x\n\n  a\n  b"},
	{"quote", "> a\n> b\n>\n>> c", "│ a\n│ b\n\n│ │ c"},
	{"table", "| a | b |\n|---|---|\n| 1 | 2 |", "a | b\n--+--\n1 | 2"},
	{"raw html kept as text", "<b>x</b> & y", "<b>x</b> & y"},
	{"entities decoded", "&amp; &lt; &#65;", "& < A"},
	{"unclosed markers literal", "**bold", "**bold"},
	{"nothing visible shows source", "#", "#"},
}

func TestPlain(t *testing.T) {
	for _, tt := range plainTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Plain(tt.md); got != tt.want {
				t.Errorf("Plain(%q)\n got %q\nwant %q", tt.md, got, tt.want)
			}
		})
	}
}

// TestRenderConcurrent lets the race detector check that the shared
// parser keeps no state between calls.
func TestRenderConcurrent(t *testing.T) {
	md := longReply()
	want := Render(md)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got := Render(md); got != want {
				t.Error("concurrent Render differs")
			}
			_ = Plain(md)
		})
	}
	wg.Wait()
}
