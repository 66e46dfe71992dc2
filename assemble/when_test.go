package assemble

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestParseWhen: each time expression of a question, read with a fixed
// clock (Wednesday 2026-05-20 15:30 in Berlin), names its range in the
// user's time zone; a question without time words names none.
func TestParseWhen(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	now := time.Date(2026, 5, 20, 15, 30, 0, 0, berlin)
	d := func(y int, m time.Month, day int) time.Time { return time.Date(y, m, day, 0, 0, 0, 0, berlin) }
	for _, c := range []struct {
		text     string
		from, to time.Time
		rest     string
	}{
		{"what did I do yesterday?", d(2026, 5, 19), d(2026, 5, 20), "what did I do ?"},
		{"what did we say today", d(2026, 5, 20), d(2026, 5, 21), "what did we say"},
		{"the film we saw last week", d(2026, 5, 11), d(2026, 5, 18), "the film we saw"},
		{"what did I do last weekend", d(2026, 5, 16), d(2026, 5, 18), "what did I do"},
		{"the bakery I found in May", d(2026, 5, 1), d(2026, 6, 1), "the bakery I found"},
		{"the trip in August", d(2025, 8, 1), d(2025, 9, 1), "the trip"}, // the last August
		{"the trip in August 2023", d(2023, 8, 1), d(2023, 9, 1), "the trip"},
		{"the dentist two weeks ago", d(2026, 5, 3), d(2026, 5, 10), "the dentist"},
		{"the call 3 days ago", d(2026, 5, 17), d(2026, 5, 18), "the call"},
		{"where did we travel in 2023", d(2023, 1, 1), d(2024, 1, 1), "where did we travel"},
		{"what did Anna cook on Monday", d(2026, 5, 18), d(2026, 5, 19), "what did Anna cook"},
		{"what happened on Wednesday", d(2026, 5, 13), d(2026, 5, 14), "what happened"}, // not today: a week ago
		{"did Elise spend 7 Jan 2024 alone?", d(2024, 1, 7), d(2024, 1, 9), "did Elise spend alone?"},
		{"the match on December 28, 2023", d(2023, 12, 28), d(2023, 12, 30), "the match"},
		{"notes from 2024-02-29", d(2024, 2, 29), d(2024, 3, 2), "notes from"},
		{"where was Paola going on 16.01.2024?", d(2024, 1, 16), d(2024, 1, 18), "where was Paola going ?"},
		{"the party of 2.3.24", d(2024, 3, 2), d(2024, 3, 4), "the party of"},
		{"last month's rent", d(2026, 4, 1), d(2026, 5, 1), "'s rent"},
	} {
		w, ok := parseWhen(c.text, now, berlin)
		if !ok || !w.from.Equal(c.from) || !w.to.Equal(c.to) || w.rest != c.rest {
			t.Errorf("parseWhen(%q) = [%s, %s) %q, %v; want [%s, %s) %q", c.text, w.from, w.to, w.rest, ok, c.from, c.to, c.rest)
		}
	}
	for _, text := range []string{
		"may I ask about the concert tickets?",
		"what is Anna's favourite book",
		"the 3 of us went to the lake",
		"remember the weekend plans",
		"version 1.13.2 of the app",
	} {
		if w, ok := parseWhen(text, now, berlin); ok {
			t.Errorf("parseWhen(%q) = [%s, %s); want no time", text, w.from, w.to)
		}
	}
	// The same words at the same instant, in another zone: "yesterday" is
	// the day before in that zone (it is already Thursday in Tokyo).
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skip(err)
	}
	late := time.Date(2026, 5, 20, 23, 30, 0, 0, berlin)
	if w, _ := parseWhen("yesterday", late, tokyo); !w.from.Equal(time.Date(2026, 5, 20, 0, 0, 0, 0, tokyo)) {
		t.Errorf("yesterday in Tokyo at %s starts %s, want 2026-05-20 in Tokyo", late, w.from)
	}
}

// FuzzParseWhen: any text is read without panicking; a range it finds is
// not empty, and the rest is the text without the expression.
func FuzzParseWhen(f *testing.F) {
	for _, s := range []string{"what did I do yesterday?", "in May 2023", "two weeks ago", "on 31 February", "on Monday", "2024-13-45", "", "last weekend in 2023"} {
		f.Add(s)
	}
	now := time.Date(2026, 5, 20, 15, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, text string) {
		w, ok := parseWhen(text, now, time.UTC)
		if !ok {
			return
		}
		if !w.from.Before(w.to) {
			t.Errorf("parseWhen(%q): empty range [%s, %s)", text, w.from, w.to)
		}
		if len(w.rest) >= len(text) {
			t.Errorf("parseWhen(%q): rest %q is no shorter", text, w.rest)
		}
	})
}

// TestMayNameTimeNeverHidesAMatch: the quick check before the rules never
// turns away a text one of them matches, whatever its case.
func TestMayNameTimeNeverHidesAMatch(t *testing.T) {
	words := []string{"on", "in", "the", "last", "past", "this", "of", "ago", "two", "a", "few", "7th", "2024", "16.01.2024", "2024-01-07",
		"JANUARY", "Feb", "march", "Apr", "MAY", "june", "Jul", "august", "Sept", "october", "Nov", "December",
		"yesterday", "TODAY", "Morning", "week", "weekend", "Month", "YEAR", "days", "weeks", "Monday", "sunday", "SATURDAY",
		"dinner", "with", "Anna", "what", "did", "we", "say"}
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		var b []string
		for range 1 + r.IntN(6) {
			b = append(b, words[r.IntN(len(words))])
		}
		text := strings.Join(b, " ")
		if mayNameTime(text) {
			continue
		}
		for _, rule := range whenRules {
			if rule.re.MatchString(text) {
				t.Fatalf("%q: a rule matches, but mayNameTime says no time", text)
			}
		}
	}
}
