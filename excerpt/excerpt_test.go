package excerpt

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestOf(t *testing.T) {
	var doc strings.Builder
	for i := range 40 {
		if i == 25 {
			doc.WriteString("The boiler was serviced by Müller & Sons in March.\n\n")
			continue
		}
		doc.WriteString(strings.Repeat("Nothing much happened on this ordinary day. ", 5) + "\n\n")
	}
	text := doc.String()
	for _, tt := range []struct {
		name     string
		question string
		max      int
		want     string
	}{
		{"the relevant part within the size", "who serviced the boiler?", 2000, "Müller & Sons"},
		{"the beginning without a match", "what about the garden?", 2000, "Nothing much happened"},
		{"a part larger than the size is cut", "who serviced the boiler?", 120, "Nothing much"},
	} {
		got := Of(text, tt.question, tt.max)
		if !strings.Contains(got, tt.want) || len(got) > tt.max || !utf8.ValidString(got) {
			t.Errorf("%s: Of(…, %q, %d) = %q (%d bytes), want %q within the size", tt.name, tt.question, tt.max, got, len(got), tt.want)
		}
	}
}
