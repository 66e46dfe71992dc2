package mdlimit

import (
	"strings"
	"testing"
)

func join(ps []Piece) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Sep + p.Text)
	}
	return b.String()
}

// squeeze drops blank lines, which cuts may move.
func squeeze(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestPieces(t *testing.T) {
	para := strings.Repeat("word ", 30) // 150 bytes
	code := "```go\n" + strings.Repeat("x := [a](\n\n", 40) + "```"
	tests := []struct {
		name string
		md   string
		max  int
		want []Piece
	}{
		{"short is one piece", "a\n\nb", 100, []Piece{{Text: "a\n\nb"}}},
		{"cut at blank line", para + "\n\n" + para, 200, []Piece{{Text: para}, {Text: para, Sep: "\n\n"}}},
		{"cut at line end", para + "\n" + para, 200, []Piece{{Text: para}, {Text: para, Sep: "\n"}}},
		{"long line is plain", "intro\n" + strings.Repeat("[a](", 100) + "\nend", 100,
			[]Piece{{Text: "intro"}, {Text: strings.Repeat("[a](", 100), Sep: "\n", Plain: true}, {Text: "end", Sep: "\n"}}},
		{"code block stays whole", "intro\n\n" + code + "\n\nafter", 100,
			[]Piece{{Text: "intro"}, {Text: code, Sep: "\n\n"}, {Text: "after", Sep: "\n\n"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Pieces(tt.md, tt.max)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d pieces %+v, want %d", len(got), got, len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("piece %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// FuzzPieces: the pieces give the reply back (blank lines at cuts aside);
// each piece parsed as Markdown is at most max bytes unless it is a code
// block.
func FuzzPieces(f *testing.F) {
	f.Add("a\n\nb\n```\nc\n\nd\n```\ne", 8)
	f.Add(strings.Repeat("> ", 200)+"\n"+strings.Repeat("[a](\n", 50), 64)
	f.Fuzz(func(t *testing.T, md string, max int) {
		max = 8 + int(uint(max)%512)
		ps := Pieces(md, max)
		if got, want := squeeze(join(ps)), squeeze(md); got != want {
			t.Fatalf("Pieces(%q, %d) = %+v: joined %q, want %q", md, max, ps, got, want)
		}
		for _, p := range ps {
			if !p.Plain && len(p.Text) > max && !strings.Contains(p.Text, "```") && !strings.Contains(p.Text, "~~~") {
				t.Fatalf("Pieces(%q, %d): piece of %d bytes parsed: %q", md, max, len(p.Text), p.Text)
			}
		}
	})
}
