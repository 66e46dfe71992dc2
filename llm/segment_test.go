package llm

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCountLongRunEncodedInBoundedPieces: a 65,536-character message
// without spaces cost seconds of CPU per count (tiktoken's byte-pair merge
// is quadratic in the length of a run without spaces, and assembling a
// prompt counts the message about twenty times). No encode call may see
// more than maxSegment bytes, whatever the text.
func TestCountLongRunEncodedInBoundedPieces(t *testing.T) {
	for _, text := range []string{
		strings.Repeat("a", 65536),
		strings.Repeat("😀", 16384),
		strings.Repeat(" ", 65536),
		strings.Repeat("\n", 65536),
		strings.Repeat("!", 65536),
		"hello " + strings.Repeat("ab1é", 16384) + " bye",
	} {
		longest, total := 0, 0
		countSegments(text, func(seg string) int {
			longest = max(longest, len(seg))
			total += len(seg)
			return 1
		})
		if longest > maxSegment {
			t.Errorf("%q…: an encode call got %d bytes, want at most %d", text[:8], longest, maxSegment)
		}
		if total != len(text) {
			t.Errorf("%q…: encoded %d bytes of %d", text[:8], total, len(text))
		}
	}
}

// TestCountSegmentsExactForOrdinaryText: cutting where a word starts does
// not change the count of ordinary text, however long.
func TestCountSegmentsExactForOrdinaryText(t *testing.T) {
	c, err := sharedCounter("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	whole := func(s string) int { return len(c.enc.EncodeOrdinary(s)) }
	for _, text := range []string{
		strings.Repeat("Recall remembers what you told it last week, so it can answer in context. ", 40),
		strings.Repeat("It's 12:30 — we're at 1234 Main St.  Don't forget: https://example.com/a?b=c&d=e!\n", 30),
		strings.Repeat("Ich heiße Jürgen, und du?  Привет, как дела?  日本語 のテキスト 😀 ok\n\n", 30),
		strings.Repeat("- item one\n- item two\n\n```go\nfunc main() { fmt.Println(\"hi\") }\n```\n", 30),
	} {
		if got, want := countSegments(text, whole), whole(text); got != want {
			t.Errorf("%q…: segmented count %d, whole %d", text[:20], got, want)
		}
	}
}

// FuzzCutSegment: segments cover the text exactly, in order, each at most
// maxSegment bytes, cut on rune boundaries when the text is valid UTF-8.
// Seeds include long runs; run with -fuzz for more.
func FuzzCutSegment(f *testing.F) {
	for _, s := range []string{"", "a", strings.Repeat("a", 70000), strings.Repeat("é", 300) + " x",
		strings.Repeat("ab ", 200), strings.Repeat(" ", 600), strings.Repeat("a", maxSegment) + " b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var b strings.Builder
		for rest := text; rest != ""; {
			seg, r := cutSegment(rest)
			if seg == "" || len(seg) > maxSegment {
				t.Fatalf("segment of %d bytes", len(seg))
			}
			if utf8.ValidString(text) && !utf8.ValidString(seg) {
				t.Fatalf("segment %q cuts a rune", seg)
			}
			b.WriteString(seg)
			rest = r
		}
		if b.String() != text {
			t.Fatal("segments do not rebuild the text")
		}
	})
}
