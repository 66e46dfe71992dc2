package format

import (
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/recallbot/recall/adapters/mdlimit"
)

// hostileSize is the size of the hostile replies: 100 KB.
const hostileSize = 100 << 10

// hostile returns Markdown of about n bytes on which goldmark parses in
// super-linear time when given as one document.
func hostile(n int) map[string]string {
	fill := func(line string) string { return strings.Repeat(line, n/len(line)+1)[:n] }
	return map[string]string{
		"link_openers_one_line": fill("[a]("),
		"link_openers_lines":    fill(strings.Repeat("[a](", 20) + "\n"),
		"nested_quotes_lines":   fill(strings.Repeat("> ", 40) + "x\n"),
		"brackets_lines":        fill(strings.Repeat("[", 60) + "\n"),
		"emphasis_lines":        fill(strings.Repeat("*a **b _c ", 8) + "\n"),
		"prose":                 fill("Some **bold** and _italic_ text with a [link](https://example.com) and `code`.\n\n"),
	}
}

// BenchmarkRenderHostile renders 100 KB hostile replies as the adapter does
// (pieces) and, side by side, as one goldmark document (whole): the ratio
// is what the cap saves. Run:
//
//	go test ./adapters/telegram/format -run '^$' -bench RenderHostile -benchtime 1x
func BenchmarkRenderHostile(b *testing.B) {
	for name, md := range hostile(hostileSize) {
		for _, mode := range []string{"pieces", "whole"} {
			b.Run(fmt.Sprintf("%s/%s", name, mode), func(b *testing.B) {
				b.SetBytes(int64(len(md)))
				for b.Loop() {
					if mode == "pieces" {
						Render(md)
					} else {
						renderDoc(normalize(md), true)
					}
				}
			})
		}
	}
}

// TestRenderHostile: a 100 KB hostile reply is rendered piece by piece
// (never handed to goldmark whole), as valid Telegram HTML that keeps its
// text and splits into valid messages.
func TestRenderHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: renders 100 KB hostile replies (7 s on a busy 2-core machine); go test without -short runs it")
	}
	for name, md := range hostile(hostileSize) {
		t.Run(name, func(t *testing.T) {
			for _, p := range mdlimit.Pieces(normalize(md), mdlimit.MaxPiece) {
				if !p.Plain && len(p.Text) > mdlimit.MaxPiece {
					t.Fatalf("a piece of %d bytes is parsed whole", len(p.Text))
				}
			}
			html := Render(md)
			if err := validTelegramHTML(html); err != nil {
				t.Fatal(err)
			}
			// Every letter is kept (the replies other than prose hold no
			// link targets, which are not text).
			if got, want := alnums(textOf(html)), alnums(md); !strings.Contains(md, "https:") && got != want {
				t.Errorf("Render keeps %d letters of %d", got, want)
			}
			parts := Split(html, Limit)
			if _, err := checkParts(html, parts, Limit, true); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func alnums(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			n++
		}
	}
	return n
}
