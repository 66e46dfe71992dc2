package format

import (
	"testing"
	"unicode/utf8"
)

// Seed corpora live in testdata/fuzz/<Target>/; the Render and Split tables
// are added as seeds too.

func FuzzRender(f *testing.F) {
	for _, tt := range renderTests {
		f.Add(tt.md)
	}
	f.Fuzz(func(t *testing.T, md string) {
		html := Render(md)
		if err := validTelegramHTML(html); err != nil {
			t.Fatalf("Render(%q) = %q: %v", md, html, err)
		}
		if plain := Plain(md); !utf8.ValidString(plain) {
			t.Fatalf("Plain(%q) = %q: invalid UTF-8", md, plain)
		}
	})
}

// fuzzLimit maps any int to a small limit in [lo, hi].
func fuzzLimit(n, lo, hi int) int {
	return lo + int(uint(n)%uint(hi-lo+1))
}

func FuzzSplit(f *testing.F) {
	for i, tt := range renderTests {
		f.Add(tt.md, 20+i)
	}
	f.Fuzz(func(t *testing.T, md string, n int) {
		limit := fuzzLimit(n, 20, 300)
		html := Render(md)
		parts := Split(html, limit)
		if _, err := checkParts(html, parts, limit, true); err != nil {
			t.Fatalf("Split(Render(%q), %d) = %q: %v", md, limit, parts, err)
		}
		// Any input, even not HTML, must not make Split panic.
		_ = Split(md, limit)
	})
}

func FuzzSplitPlain(f *testing.F) {
	for i, tt := range plainTests {
		f.Add(tt.md, 2+i)
	}
	f.Fuzz(func(t *testing.T, text string, n int) {
		limit := fuzzLimit(n, 2, 300)
		parts := SplitPlain(text, limit)
		if _, err := checkParts(text, parts, limit, false); err != nil {
			t.Fatalf("SplitPlain(%q, %d) = %q: %v", text, limit, parts, err)
		}
		plain := Plain(text)
		parts = SplitPlain(plain, limit)
		if _, err := checkParts(plain, parts, limit, false); err != nil {
			t.Fatalf("SplitPlain(Plain(%q), %d) = %q: %v", text, limit, parts, err)
		}
	})
}
