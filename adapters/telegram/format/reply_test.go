package format

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

const replyLength = 9000

// longReply is a 9,000-character LLM reply in Markdown: paragraphs with
// formatting, a list, a long Go code block (with & and <) that crosses the
// first 4096 boundary, a link whose text is longer than a small limit, a
// word with no spaces longer than a small limit, emoji (surrogate pairs,
// ZWJ sequences), CJK and RTL text.
func longReply() string {
	var b strings.Builder
	b.WriteString("# Migration plan\n\n")
	for i := range 9 {
		fmt.Fprintf(&b, "Paragraph %d explains **step %d** of the plan with *some* emphasis, "+
			"a `snake_case_name`, an ampersand & a less-than < sign, and an emoji 🚀 "+
			"so that surrogate pairs appear everywhere 👨‍👩‍👧. 中文句子也在这里。 שלום עולם.\n\n", i+1, i+1)
	}
	b.WriteString("- first item with a [link](https://example.com/one)\n- second item\n  - nested item\n\n")
	b.WriteString("```go\n")
	for i := range 72 {
		fmt.Fprintf(&b, "if x%d := f(%d); x%d < limit && ok { fmt.Println(\"<%d>\") }\n", i, i, i, i)
	}
	b.WriteString("```\n\n")
	b.WriteString("See [" + strings.Repeat("a very long link text ", 40) + "](https://example.com/long?a=1&b=2) for details.\n\n")
	b.WriteString("Token: " + strings.Repeat("QWxhZGRpbjpvcGVuIHNlc2FtZQ", 40) + "\n\n")
	b.WriteString(strings.Repeat("😀", 300) + "\n\n")
	b.WriteString("> A closing quote with **bold** text that goes on for a while,")
	// Pad to exactly replyLength characters.
	for n := utf8.RuneCountInString(b.String()); n < replyLength-1; n++ {
		if n%4 == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteByte('o')
		}
	}
	b.WriteString(".")
	return b.String()
}
