package format

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Split cuts Telegram HTML (Render's output) into parts whose text is at
// most limit UTF-16 code units (Telegram's measure; tags do not count, and
// the raw HTML is not bounded). Parts are cut at blank lines, else at line
// breaks, else at spaces, else anywhere outside a character; formatting open
// at a cut is closed and reopened so that every part is valid on its own.
// See the package documentation for the exact guarantees. A limit below 1
// means Limit.
func Split(html string, limit int) []string {
	return split(html, limit, true)
}

// SplitPlain cuts plain text into parts of at most limit UTF-16 code units,
// with the same preferences and guarantees as Split. A limit below 1 means
// Limit.
func SplitPlain(text string, limit int) []string {
	return split(text, limit, false)
}

// pieceKind tells text from tags.
type pieceKind uint8

const (
	pieceText pieceKind = iota
	pieceOpen
	pieceClose
)

// piece is one character (or character reference) of text, or one tag.
type piece struct {
	start, end int32 // bytes of the input
	r          rune  // text: the character, U+FFFD for invalid UTF-8
	width      int32 // text: UTF-16 code units
	kind       pieceKind
}

// openTag is an element open at some point of the input.
type openTag struct {
	name, raw string
}

// tagName returns the lower-case name of tag ("<a href=…>", "</b>").
func tagName(tag string) string {
	i := 1
	if i < len(tag) && tag[i] == '/' {
		i++
	}
	j := i
	for j < len(tag) && tag[j] != '>' && tag[j] != '/' && tag[j] != ' ' && tag[j] != '\t' && tag[j] != '\n' {
		j++
	}
	return strings.ToLower(tag[i:j])
}

// maxClusterBackoff bounds how far a hard cut backs off to keep a
// character together with its combining marks and joiners.
const maxClusterBackoff = 32

func split(s string, limit int, html bool) []string {
	if limit < 1 {
		limit = Limit
	}
	pieces := tokenize(s, html)
	// units are the text pieces; widths and non-space counts as prefix sums.
	units := make([]int, 0, len(pieces))
	for i := range pieces {
		if pieces[i].kind == pieceText {
			units = append(units, i)
		}
	}
	n := len(units)
	unit := func(u int) *piece { return &pieces[units[u]] }
	width := make([]int, n+1)
	solid := make([]int, n+1) // characters that are not white space
	for u := range n {
		width[u+1] = width[u] + int(unit(u).width)
		solid[u+1] = solid[u]
		if !unicode.IsSpace(unit(u).r) {
			solid[u+1]++
		}
	}

	var (
		parts []string
		stack []openTag // open at the next piece
		next  int       // next piece to emit
		seen  int       // text pieces before next
		b     strings.Builder
	)
	for p := 0; solid[n] > solid[p]; {
		e := p
		for e < n && width[e+1]-width[p] <= limit {
			e++
		}
		if e == p {
			e = p + 1 // one character wider than the limit (limit 1)
		}
		if solid[e] == solid[p] {
			// Only white space fits: drop it rather than send an empty part.
			for unicode.IsSpace(unit(p).r) {
				p++
			}
			continue
		}
		cut, resume := n, n
		if e < n {
			cut, resume = chooseCut(pieces, units, width, solid, p, e, limit)
		}

		// Emit units [p, cut): tags in their place, the ones open at the
		// start reopened, and all of them written only around text.
		b.Reset()
		w := partWriter{b: &b}
		for _, t := range stack {
			w.push(t.raw, t.name)
		}
		run, runEnd := -1, -1 // text to write, contiguous in s
		flush := func() {
			if run >= 0 {
				w.text(s[run:runEnd])
				run = -1
			}
		}
	emit:
		for ; next < len(pieces); next++ {
			pc := &pieces[next]
			switch pc.kind {
			case pieceOpen:
				flush()
				raw := s[pc.start:pc.end]
				name := tagName(raw)
				stack = append(stack, openTag{name: name, raw: raw})
				w.push(raw, name)
			case pieceClose:
				flush()
				name := tagName(s[pc.start:pc.end])
				for i := len(stack) - 1; i >= 0; i-- {
					if stack[i].name == name {
						for range len(stack) - i {
							w.pop()
						}
						stack = stack[:i]
						break
					}
				}
			case pieceText:
				if seen >= cut {
					break emit
				}
				if seen >= p {
					if run < 0 {
						run = int(pc.start)
					}
					runEnd = int(pc.end)
				}
				seen++
			}
		}
		flush()
		w.closeAll()
		parts = append(parts, b.String())
		p = resume
	}
	return parts
}

// chooseCut picks where the part starting at unit p ends, given that units
// [p, e) fit and unit e does not. It returns the end of the part and the
// first unit of the next one; the units between (the separator) are
// dropped.
func chooseCut(pieces []piece, units, width, solid []int, p, e, limit int) (cut, resume int) {
	r := func(u int) rune { return pieces[units[u]].r }
	n := len(units)
	minWidth := max(limit/2, 1)
	para, line, space := -1, -1, -1
	for c := e; c > p; c-- {
		if width[c]-width[p] < minWidth || solid[c] == solid[p] {
			break
		}
		cur, prev := r(c), r(c-1)
		switch {
		case cur == '\n' && prev != '\n':
			if c+1 < n && r(c+1) == '\n' {
				para = c
			} else if line < 0 {
				line = c
			}
		case isBlank(cur) && !isBlank(prev) && space < 0:
			space = c
		}
		if para >= 0 {
			break
		}
	}
	switch {
	case para >= 0:
		resume = para
		for resume < n && r(resume) == '\n' {
			resume++
		}
		return para, resume
	case line >= 0:
		return line, line + 1
	case space >= 0:
		resume = space
		for resume < n && isBlank(r(resume)) {
			resume++
		}
		return space, resume
	}
	// Anywhere, but not between a character and what extends it.
	c := e
	for k := 0; k < maxClusterBackoff && c > p+1 && !breakable(r, c); k++ {
		c--
	}
	if !breakable(r, c) || solid[c] == solid[p] {
		c = e
	}
	return c, c
}

func isBlank(r rune) bool { return r == ' ' || r == '\t' }

// breakable reports whether a hard cut may fall before unit c.
func breakable(r func(int) rune, c int) bool {
	cur, prev := r(c), r(c-1)
	if extendsCluster(cur) || prev == 0x200D {
		return false
	}
	if isRegionalIndicator(cur) && isRegionalIndicator(prev) {
		// Flags are pairs: do not cut after an odd number of indicators.
		k := 0
		for i := c - 1; i >= 0 && isRegionalIndicator(r(i)); i-- {
			k++
		}
		return k%2 == 0
	}
	return true
}

// partWriter writes one part. Elements are opened lazily, when text is
// written inside them, so a part holds no empty elements.
type partWriter struct {
	b     *strings.Builder
	stack []partElement
}

type partElement struct {
	open, name string
	written    bool
}

func (w *partWriter) push(open, name string) {
	w.stack = append(w.stack, partElement{open: open, name: name})
}

func (w *partWriter) pop() {
	e := w.stack[len(w.stack)-1]
	w.stack = w.stack[:len(w.stack)-1]
	if e.written {
		w.b.WriteString("</" + e.name + ">")
	}
}

func (w *partWriter) text(s string) {
	for i := range w.stack {
		if !w.stack[i].written {
			w.b.WriteString(w.stack[i].open)
			w.stack[i].written = true
		}
	}
	w.b.WriteString(s)
}

func (w *partWriter) closeAll() {
	for len(w.stack) > 0 {
		w.pop()
	}
}

// tokenize cuts s into characters and, if html, tags and character
// references. Anything that is not a well-formed tag or reference is text.
func tokenize(s string, html bool) []piece {
	pieces := make([]piece, 0, len(s))
	for i := 0; i < len(s); {
		if html {
			switch s[i] {
			case '<':
				if end, closing, ok := scanTag(s, i); ok {
					kind := pieceOpen
					if closing {
						kind = pieceClose
					}
					pc := piece{start: int32(i), end: int32(end), kind: kind}
					pieces = append(pieces, pc)
					if kind == pieceOpen && s[end-2] == '/' {
						// <x/>: Telegram has no empty elements; drop it.
						pc.kind = pieceClose
						pieces = append(pieces, pc)
					}
					i = end
					continue
				}
			case '&':
				if end, r, w, ok := scanReference(s, i); ok {
					pieces = append(pieces, piece{start: int32(i), end: int32(end), width: int32(w), r: r})
					i = end
					continue
				}
			}
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		pieces = append(pieces, piece{start: int32(i), end: int32(i + size), width: int32(utf16Len(r)), r: r})
		i += size
	}
	return pieces
}

func utf16Len(r rune) int {
	if r >= 0x10000 && r <= utf8.MaxRune {
		return 2
	}
	return 1
}

// scanTag reads a tag at s[i] ("<b>", "</b>", `<a href="x">`), returning
// its end and whether it closes.
func scanTag(s string, i int) (end int, closing, ok bool) {
	j := i + 1
	if j < len(s) && s[j] == '/' {
		closing = true
		j++
	}
	start := j
	for j < len(s) && (isLetter(s[j]) || j > start && (s[j] == '-' || '0' <= s[j] && s[j] <= '9')) {
		j++
	}
	if j == start || j >= len(s) {
		return 0, false, false
	}
	if s[j] == '>' {
		return j + 1, closing, true
	}
	if closing || s[j] != ' ' && s[j] != '\t' && s[j] != '\n' && s[j] != '/' {
		return 0, false, false
	}
	for ; j < len(s); j++ {
		switch s[j] {
		case '>':
			return j + 1, false, true
		case '<':
			return 0, false, false
		case '"', '\'':
			q := strings.IndexByte(s[j+1:], s[j])
			if q < 0 {
				return 0, false, false
			}
			j += q + 1
		}
	}
	return 0, false, false
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// scanReference reads a character reference at s[i] ("&amp;", "&#128512;",
// "&#x1F600;"), returning its end, the character and its UTF-16 width.
// Named references other than Telegram's four count their raw length, the
// way Telegram would show them.
func scanReference(s string, i int) (end int, r rune, width int, ok bool) {
	semi := strings.IndexByte(s[i:min(len(s), i+34)], ';')
	if semi < 2 {
		return 0, 0, 0, false
	}
	body, end := s[i+1:i+semi], i+semi+1
	if body[0] == '#' {
		digits, base := body[1:], 10
		if digits != "" && (digits[0] == 'x' || digits[0] == 'X') {
			digits, base = digits[1:], 16
		}
		if digits == "" || strings.TrimLeft(digits, "0123456789abcdefABCDEF") != "" {
			return 0, 0, 0, false
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return 0, 0, 0, false
		}
		r = rune(v)
		if !utf8.ValidRune(r) || r == 0 {
			r = utf8.RuneError
		}
		return end, r, utf16Len(r), true
	}
	for k := 0; k < len(body); k++ {
		if !isLetter(body[k]) && !('0' <= body[k] && body[k] <= '9') {
			return 0, 0, 0, false
		}
	}
	switch body {
	case "lt":
		return end, '<', 1, true
	case "gt":
		return end, '>', 1, true
	case "amp":
		return end, '&', 1, true
	case "quot":
		return end, '"', 1, true
	}
	return end, '&', len(body) + 2, true
}
