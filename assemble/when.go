package assemble

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// when is a time range named in a question, and the question without it.
type when struct {
	from, to time.Time // [from, to)
	rest     string
}

var months = map[string]time.Month{
	"jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4, "april": 4, "may": 5,
	"jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8, "sep": 9, "sept": 9, "september": 9,
	"oct": 10, "october": 10, "nov": 11, "november": 11, "dec": 12, "december": 12,
}

var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}

var numbers = map[string]int{
	"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
	"couple of": 2, "few": 3,
}

const (
	monthRE = `(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?`
	dayRE   = `(\d{1,2})(?:st|nd|rd|th)?`
	yearRE  = `((?:19|20)\d\d)`
	numRE   = `(\d{1,2}|an?|one|two|three|four|five|six|seven|eight|nine|ten|couple of|few)`
)

// whenRule is one kind of time expression.
type whenRule struct {
	re *regexp.Regexp
	// span returns the range for a match (m: the submatches) at now, in
	// now's location; ok false when the match is no date after all.
	span func(m []string, now time.Time) (from, to time.Time, ok bool)
}

func startOfDay(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

// weekStart is the Monday that starts t's week.
func weekStart(t time.Time) time.Time {
	d := startOfDay(t)
	back := (int(d.Weekday()) + 6) % 7
	return d.AddDate(0, 0, -back)
}

func monthRange(y int, m time.Month, loc *time.Location) (time.Time, time.Time) {
	from := time.Date(y, m, 1, 0, 0, 0, 0, loc)
	return from, from.AddDate(0, 1, 0)
}

// dayRange is the range of a date a question names: that day and the next,
// since what happened on a day is often told the day after ("yesterday
// we…", "last night…").
func dayRange(y int, m time.Month, d int, loc *time.Location) (time.Time, time.Time, bool) {
	from := time.Date(y, m, d, 0, 0, 0, 0, loc)
	if from.Day() != d { // 31 February
		return from, from, false
	}
	return from, from.AddDate(0, 0, 2), true
}

// pastYear is the year of the most recent month m (or day m/d) at or before now.
func pastYear(now time.Time, m time.Month, d int) int {
	y := now.Year()
	if m > now.Month() || m == now.Month() && d > now.Day() {
		y--
	}
	return y
}

// whenRules, most specific first.
var whenRules = []whenRule{
	// 2024-01-07
	{regexp.MustCompile(`(?i)\b(?:on\s+)?(\d{4})-(\d\d)-(\d\d)\b`), func(m []string, now time.Time) (time.Time, time.Time, bool) {
		y, _ := strconv.Atoi(m[1])
		mo, _ := strconv.Atoi(m[2])
		d, _ := strconv.Atoi(m[3])
		if mo < 1 || mo > 12 {
			return now, now, false
		}
		return dayRange(y, time.Month(mo), d, now.Location())
	}},
	// 16.01.2024, 16.1.24: the day first, as wherever dots separate a date
	{regexp.MustCompile(`\b(?:on\s+)?(\d{1,2})\.(\d{1,2})\.(\d{4}|\d\d)\b`), func(m []string, now time.Time) (time.Time, time.Time, bool) {
		d, _ := strconv.Atoi(m[1])
		mo, _ := strconv.Atoi(m[2])
		y, _ := strconv.Atoi(m[3])
		if len(m[3]) == 2 {
			y += 2000
		}
		if mo < 1 || mo > 12 {
			return now, now, false
		}
		return dayRange(y, time.Month(mo), d, now.Location())
	}},
	// 7 Jan 2024, 7th of January
	{regexp.MustCompile(`(?i)\b(?:on\s+)?(?:the\s+)?` + dayRE + `\s+(?:of\s+)?` + monthRE + `(?:,?\s+` + yearRE + `)?\b`), func(m []string, now time.Time) (time.Time, time.Time, bool) {
		d, _ := strconv.Atoi(m[1])
		mo := months[strings.ToLower(m[2])]
		y := pastYear(now, mo, d)
		if m[3] != "" {
			y, _ = strconv.Atoi(m[3])
		}
		return dayRange(y, mo, d, now.Location())
	}},
	// January 6 2024, Jan 6th, 2024
	{regexp.MustCompile(`(?i)\b(?:on\s+)?` + monthRE + `\s+` + dayRE + `(?:,?\s+` + yearRE + `)?\b`), func(m []string, now time.Time) (time.Time, time.Time, bool) {
		mo := months[strings.ToLower(m[1])]
		d, _ := strconv.Atoi(m[2])
		y := pastYear(now, mo, d)
		if m[3] != "" {
			y, _ = strconv.Atoi(m[3])
		}
		return dayRange(y, mo, d, now.Location())
	}},
	// (in) May 2023
	{regexp.MustCompile(`(?i)\b(?:(?:in|during|of)\s+)?` + monthRE + `,?\s+` + yearRE + `\b`), func(m []string, now time.Time) (time.Time, time.Time, bool) {
		y, _ := strconv.Atoi(m[2])
		from, to := monthRange(y, months[strings.ToLower(m[1])], now.Location())
		return from, to, true
	}},
	// in May (the most recent May)
	{regexp.MustCompile(`(?i)\b(?:in|during|since|of|early|late|mid)\s+` + monthRE + `\b`), func(m []string, now time.Time) (time.Time, time.Time, bool) {
		mo := months[strings.ToLower(m[1])]
		from, to := monthRange(pastYear(now, mo, 1), mo, now.Location())
		return from, to, true
	}},
	// in 2023
	{regexp.MustCompile(`(?i)\b(?:in|during|of)\s+` + yearRE + `\b`), func(m []string, now time.Time) (time.Time, time.Time, bool) {
		y, _ := strconv.Atoi(m[1])
		from := time.Date(y, 1, 1, 0, 0, 0, 0, now.Location())
		return from, from.AddDate(1, 0, 0), true
	}},
	// two weeks ago, 3 days ago, a month ago
	{regexp.MustCompile(`(?i)\b` + numRE + `\s+(day|week|month|year)s?\s+ago\b`), func(m []string, now time.Time) (time.Time, time.Time, bool) {
		n, ok := numbers[strings.ToLower(m[1])]
		if !ok {
			n, _ = strconv.Atoi(m[1])
		}
		d := startOfDay(now)
		switch strings.ToLower(m[2]) {
		case "day":
			from := d.AddDate(0, 0, -n)
			return from, from.AddDate(0, 0, 1), true
		case "week": // the week around that day
			from := d.AddDate(0, 0, -7*n-3)
			return from, from.AddDate(0, 0, 7), true
		case "month":
			t := d.AddDate(0, -n, 0)
			from, to := monthRange(t.Year(), t.Month(), now.Location())
			return from, to, true
		default:
			from := time.Date(now.Year()-n, 1, 1, 0, 0, 0, 0, now.Location())
			return from, from.AddDate(1, 0, 0), true
		}
	}},
	{regexp.MustCompile(`(?i)\b(?:the\s+)?day\s+before\s+yesterday\b`), func(_ []string, now time.Time) (time.Time, time.Time, bool) {
		d := startOfDay(now)
		return d.AddDate(0, 0, -2), d.AddDate(0, 0, -1), true
	}},
	{regexp.MustCompile(`(?i)\byesterday\b`), func(_ []string, now time.Time) (time.Time, time.Time, bool) {
		d := startOfDay(now)
		return d.AddDate(0, 0, -1), d, true
	}},
	{regexp.MustCompile(`(?i)\btoday\b|\bthis\s+morning\b`), func(_ []string, now time.Time) (time.Time, time.Time, bool) {
		d := startOfDay(now)
		return d, d.AddDate(0, 0, 1), true
	}},
	// last weekend: the Saturday and Sunday before this week
	{regexp.MustCompile(`(?i)\b(?:last|past)\s+weekend\b`), func(_ []string, now time.Time) (time.Time, time.Time, bool) {
		w := weekStart(now)
		return w.AddDate(0, 0, -2), w, true
	}},
	{regexp.MustCompile(`(?i)\b(?:last|past|previous)\s+week\b`), func(_ []string, now time.Time) (time.Time, time.Time, bool) {
		w := weekStart(now)
		return w.AddDate(0, 0, -7), w, true
	}},
	{regexp.MustCompile(`(?i)\bthis\s+week\b`), func(_ []string, now time.Time) (time.Time, time.Time, bool) {
		w := weekStart(now)
		return w, w.AddDate(0, 0, 7), true
	}},
	{regexp.MustCompile(`(?i)\b(?:last|past|previous)\s+month\b`), func(_ []string, now time.Time) (time.Time, time.Time, bool) {
		t := now.AddDate(0, 0, -now.Day()+1).AddDate(0, -1, 0)
		from, to := monthRange(t.Year(), t.Month(), now.Location())
		return from, to, true
	}},
	{regexp.MustCompile(`(?i)\bthis\s+month\b`), func(_ []string, now time.Time) (time.Time, time.Time, bool) {
		from, to := monthRange(now.Year(), now.Month(), now.Location())
		return from, to, true
	}},
	{regexp.MustCompile(`(?i)\b(?:last|past|previous)\s+year\b`), func(_ []string, now time.Time) (time.Time, time.Time, bool) {
		from := time.Date(now.Year()-1, 1, 1, 0, 0, 0, 0, now.Location())
		return from, from.AddDate(1, 0, 0), true
	}},
	// (on|last) Monday: the most recent Monday before today
	{regexp.MustCompile(`(?i)\b(?:on|last|this\s+past)\s+(sunday|monday|tuesday|wednesday|thursday|friday|saturday)\b`), func(m []string, now time.Time) (time.Time, time.Time, bool) {
		wd := weekdays[strings.ToLower(m[1])]
		d := startOfDay(now)
		back := (int(d.Weekday()) - int(wd) + 7) % 7
		if back == 0 {
			back = 7
		}
		from := d.AddDate(0, 0, -back)
		return from, from.AddDate(0, 0, 1), true
	}},
}

var spaces = regexp.MustCompile(`\s+`)

// timeStems are pieces of text without which no rule of whenRules
// matches, but for those with digits: the months' first three letters,
// "day" (yesterday, today, the weekdays, days ago), "week", "month",
// "year", "morning".
var timeStems = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
	"day", "week", "month", "year", "morning"}

// mayNameTime reports whether text may hold a time expression: a digit or
// one of timeStems (in any case). Most messages hold neither, and skip the
// rules' regular expressions.
func mayNameTime(text string) bool {
	if strings.ContainsAny(text, "0123456789") {
		return true
	}
	lower := strings.ToLower(text)
	for _, s := range timeStems {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

// parseWhen finds the first time expression of text (by the rules' order)
// and returns its range in loc, relative to now, with the text without it.
// ok is false when text names no time.
func parseWhen(text string, now time.Time, loc *time.Location) (when, bool) {
	if loc == nil {
		loc = time.Local
	}
	if !mayNameTime(text) {
		return when{}, false
	}
	now = now.In(loc)
	for _, r := range whenRules {
		idx := r.re.FindStringSubmatchIndex(text)
		if idx == nil {
			continue
		}
		m := make([]string, len(idx)/2)
		for i := range m {
			if idx[2*i] >= 0 {
				m[i] = text[idx[2*i]:idx[2*i+1]]
			}
		}
		from, to, ok := r.span(m, now)
		if !ok || !from.Before(to) {
			continue
		}
		rest := strings.TrimSpace(spaces.ReplaceAllString(text[:idx[0]]+" "+text[idx[1]:], " "))
		return when{from: from, to: to, rest: rest}, true
	}
	return when{}, false
}
