package whatsapp

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// split assembles d into WhatsApp text, cut into parts of at most limit
// runes each: at a paragraph break if there is one in the last two thirds
// of the room, else at a line break, else between words, else anywhere
// (never inside a guarded marker character). Spans open at a cut are closed
// at the end of the part and reopened at the start of the next one. The
// separator at a cut is dropped. Empty or blank text gives no parts.
func split(d doc, limit int) []string {
	limit = max(limit, 24) // room for every marker closed and reopened, and some text
	r, st := trimDoc(d.r, d.st)
	var parts []string
	for len(r) > 0 {
		// Markers only add to the text: more runes than limit cannot fit.
		if len(r) <= limit {
			if whole := compose(r, st); utf8.RuneCountInString(whole) <= limit {
				parts = append(parts, whole)
				break
			}
		}
		budget := limit
		var part string
		var next int
		for {
			var end int
			end, next = chooseCut(r, budget)
			part = compose(r[:end], st[:end])
			n := utf8.RuneCountInString(part)
			if n <= limit || budget <= 1 {
				break
			}
			budget = max(budget-(n-limit), 1)
		}
		if strings.TrimSpace(part) != "" {
			parts = append(parts, part)
		}
		r, st = trimDoc(r[next:], st[next:])
	}
	return parts
}

// trimDoc drops blank lines at the start and white space at the end.
func trimDoc(r []rune, st []style) ([]rune, []style) {
	start := 0
	for i := 0; i < len(r); i++ {
		if r[i] == '\n' {
			start = i + 1
		} else if !unicode.IsSpace(r[i]) {
			break
		}
	}
	if start == len(r) || allSpace(r[start:]) {
		return nil, nil
	}
	end := len(r)
	for end > start && unicode.IsSpace(r[end-1]) {
		end--
	}
	return r[start:end], st[start:end]
}

func allSpace(r []rune) bool {
	for _, c := range r {
		if !unicode.IsSpace(c) {
			return false
		}
	}
	return true
}

// chooseCut picks where a part of at most budget runes of r ends (end) and
// where the rest starts (next).
func chooseCut(r []rune, budget int) (end, next int) {
	if len(r) <= budget {
		return len(r), len(r)
	}
	lo := budget / 3
	last := func(ok func(i int) bool) int {
		for i := min(budget, len(r)-1); i > lo; i-- {
			if ok(i) {
				return i
			}
		}
		return -1
	}
	// A paragraph break: a blank line.
	if i := last(func(i int) bool { return r[i] == '\n' && r[i-1] == '\n' }); i > 0 {
		return trimEnd(r, i-1), i + 1
	}
	if i := last(func(i int) bool { return r[i] == '\n' }); i > 0 {
		return trimEnd(r, i), i + 1
	}
	if i := last(func(i int) bool { return r[i] == ' ' }); i > 0 {
		if e := trimEnd(r, i); e > 0 {
			return e, i + 1
		}
	}
	end = max(budget, 1)
	// Never separate a guarded marker character from its word joiners.
	for k := 0; k < 2 && end > 1 && splitsGuard(r, end); k++ {
		end--
	}
	return end, end
}

// splitsGuard reports whether cutting r before end would separate a
// guarded marker character from one of its word joiners.
func splitsGuard(r []rune, end int) bool {
	return isMarkerChar(r[end]) && r[end-1] == wordJoiner || isMarkerChar(r[end-1]) && r[end] == wordJoiner
}

// trimEnd moves end back over white space, not below 1.
func trimEnd(r []rune, end int) int {
	for end > 1 && unicode.IsSpace(r[end-1]) {
		end--
	}
	return end
}

// normalizeStyles adjusts styles to what WhatsApp can show: a line break
// ends every span but monospace; white space at the edges of a bold,
// italic or strike span is moved outside it (a marker next to a space does
// not format); a span of only white space loses its style.
func normalizeStyles(r []rune, st []style) []style {
	out := make([]style, len(st))
	copy(out, st)
	for i, c := range r {
		if c == '\n' {
			out[i] &= mono
		}
	}
	for _, s := range []style{bold, italic, strike, mono} {
		for i := 0; i < len(r); {
			if out[i]&s == 0 {
				i++
				continue
			}
			j := i
			for j < len(r) && out[j]&s != 0 {
				j++
			}
			if s == mono {
				if allSpace(r[i:j]) {
					for k := i; k < j; k++ {
						out[k] &^= mono
					}
				}
				i = j
				continue
			}
			a, b := i, j
			for a < b && unicode.IsSpace(r[a]) {
				out[a] &^= s
				a++
			}
			for b > a && unicode.IsSpace(r[b-1]) {
				out[b-1] &^= s
				b--
			}
			i = j
		}
	}
	return out
}

// compose writes r with the markers its styles call for; every span is
// closed at the end.
func compose(r []rune, st []style) string {
	st = normalizeStyles(r, st)
	var b strings.Builder
	b.Grow(len(r) + 16)
	var stack []style
	for i := 0; i < len(r); {
		j := i
		for j < len(r) && st[j] == st[i] {
			j++
		}
		stack = transition(&b, stack, st[i])
		for _, c := range r[i:j] {
			b.WriteRune(c)
		}
		i = j
	}
	transition(&b, stack, 0)
	return b.String()
}

// transition closes and opens markers so that exactly the styles of want
// are open. Spans nest: closing one closes those opened after it (they are
// reopened if still wanted); monospace is always innermost.
func transition(b *strings.Builder, stack []style, want style) []style {
	var open style
	for _, s := range stack {
		open |= s
	}
	cut := len(stack)
	for k, s := range stack {
		if want&s == 0 {
			cut = k
			break
		}
	}
	if (want&^open)&^mono != 0 {
		for k, s := range stack[:cut] {
			if s == mono {
				cut = k
				break
			}
		}
	}
	for len(stack) > cut {
		b.WriteString(stack[len(stack)-1].marker())
		stack = stack[:len(stack)-1]
	}
	open = 0
	for _, s := range stack {
		open |= s
	}
	for _, s := range openOrder {
		if want&s != 0 && open&s == 0 {
			b.WriteString(s.marker())
			stack = append(stack, s)
		}
	}
	return stack
}
