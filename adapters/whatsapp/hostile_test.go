package whatsapp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/yuin/goldmark/text"
)

// hostile returns Markdown of about n bytes on which goldmark parses in
// super-linear time when given as one document.
func hostile(n int) map[string]string {
	fill := func(line string) string { return strings.Repeat(line, n/len(line)+1)[:n] }
	return map[string]string{
		"link_openers_one_line": fill("[a]("),
		"link_openers_lines":    fill(strings.Repeat("[a](", 20) + "\n"),
		"nested_quotes_lines":   fill(strings.Repeat("> ", 40) + "x\n"),
		"prose":                 fill("Some **bold** and _italic_ text with a [link](https://example.com) and `code`.\n\n"),
	}
}

// renderWhole is renderMarkdown without pieces: md parsed as one document.
func renderWhole(md string) doc {
	src := []byte(md)
	root := markdown.Parser().Parse(text.NewReader(src))
	r := &renderer{src: src}
	r.blocks(root, "\n\n")
	return r.d.guard()
}

// BenchmarkFormatHostile formats 100 KB hostile replies as the adapter does
// (pieces) and, side by side, parsed whole. Run:
//
//	go test ./adapters/whatsapp -run '^$' -bench FormatHostile -benchtime 1x
func BenchmarkFormatHostile(b *testing.B) {
	for name, md := range hostile(100 << 10) {
		for _, mode := range []string{"pieces", "whole"} {
			b.Run(fmt.Sprintf("%s/%s", name, mode), func(b *testing.B) {
				b.SetBytes(int64(len(md)))
				for b.Loop() {
					if mode == "pieces" {
						split(renderMarkdown(md), 4000)
					} else {
						split(renderWhole(md), 4000)
					}
				}
			})
		}
	}
}

// TestFormatHostile: a 100 KB hostile reply is formatted into parts that
// hold the whole text, each within the limit.
func TestFormatHostile(t *testing.T) {
	for name, md := range hostile(100 << 10) {
		t.Run(name, func(t *testing.T) {
			parts := formatMarkdown(md, 4000)
			checkParts(t, name, parts, 4000)
			checkText(t, name, string(renderMarkdown(md).r), parts)
			if got, want := strings.Count(strings.Join(parts, ""), "a"), strings.Count(md, "a"); !strings.Contains(md, "https:") && got != want {
				t.Errorf("the parts hold %d letters a of %d", got, want)
			}
		})
	}
}
