package format

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// allowedTags are the Telegram HTML tags Render and Split may write.
var allowedTags = map[string]bool{
	"b": true, "i": true, "u": true, "s": true, "code": true, "pre": true,
	"a": true, "blockquote": true, "tg-spoiler": true,
}

// inlineTag names the tags that may not contain <pre> or <blockquote>.
var inlineTagNames = map[string]bool{
	"b": true, "i": true, "u": true, "s": true, "code": true, "a": true, "tg-spoiler": true,
}

var (
	hrefAttr     = regexp.MustCompile(`^href="([^"<>]+)"$`)
	languageAttr = regexp.MustCompile(`^class="language-[A-Za-z0-9_+#.-]+"$`)
)

// validTelegramHTML reports why s would not be accepted by Telegram with
// parse_mode=HTML, or nil: valid UTF-8; tags only from allowedTags,
// properly nested and closed; attributes only href on <a> and
// class="language-…" on a <code> that is the only child of a <pre>;
// entities only &lt; &gt; &amp; &quot; or numeric; no bare < or >;
// Telegram's nesting rules (nothing inside <code> or <pre>, no <a> or
// <code> inside <a>, no nested <blockquote>, blocks not inside inline tags).
func validTelegramHTML(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("invalid UTF-8")
	}
	var stack []string
	for i := 0; i < len(s); {
		switch s[i] {
		case '>':
			return fmt.Errorf("bare > at %d: %q", i, around(s, i))
		case '&':
			semi := strings.IndexByte(s[i:], ';')
			if semi < 0 {
				return fmt.Errorf("bare & at %d: %q", i, around(s, i))
			}
			if err := validEntity(s[i : i+semi+1]); err != nil {
				return fmt.Errorf("at %d: %w", i, err)
			}
			i += semi + 1
		case '<':
			end := strings.IndexByte(s[i:], '>')
			if end < 0 {
				return fmt.Errorf("bare < at %d: %q", i, around(s, i))
			}
			tag := s[i+1 : i+end]
			next := i + end + 1
			if strings.HasPrefix(tag, "/") {
				name := tag[1:]
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return fmt.Errorf("</%s> at %d closes %v", name, i, stack)
				}
				stack = stack[:len(stack)-1]
				if name == "code" && len(stack) > 0 && stack[len(stack)-1] == "pre" &&
					!strings.HasPrefix(s[next:], "</pre>") {
					return fmt.Errorf("</code> at %d not followed by </pre>", i)
				}
				i = next
				continue
			}
			name, attrs, _ := strings.Cut(tag, " ")
			if !allowedTags[name] {
				return fmt.Errorf("tag <%s> at %d not allowed", tag, i)
			}
			if err := validNesting(name, stack, strings.HasSuffix(s[:i], "<pre>")); err != nil {
				return fmt.Errorf("<%s> at %d: %w", name, i, err)
			}
			switch {
			case name == "a":
				m := hrefAttr.FindStringSubmatch(attrs)
				if m == nil {
					return fmt.Errorf("<a> at %d: bad attributes %q", i, attrs)
				}
				if err := validText(m[1]); err != nil {
					return fmt.Errorf("<a> at %d: href: %w", i, err)
				}
			case name == "code" && strings.Contains(tag, " "):
				if len(stack) == 0 || stack[len(stack)-1] != "pre" || !languageAttr.MatchString(attrs) {
					return fmt.Errorf("<code> at %d: bad attributes %q", i, attrs)
				}
			case strings.Contains(tag, " "):
				return fmt.Errorf("<%s> at %d: attributes not allowed", name, i)
			}
			stack = append(stack, name)
			i = next
		default:
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
	}
	if len(stack) > 0 {
		return fmt.Errorf("unclosed %v", stack)
	}
	return nil
}

func validNesting(name string, stack []string, afterPre bool) error {
	for j, outer := range stack {
		switch {
		case outer == "code":
			return fmt.Errorf("inside <code>")
		case outer == "pre" && !(name == "code" && j == len(stack)-1 && afterPre):
			return fmt.Errorf("inside <pre>")
		case outer == "a" && (name == "a" || name == "code"):
			return fmt.Errorf("inside <a>")
		case outer == "blockquote" && name == "blockquote":
			return fmt.Errorf("inside <blockquote>")
		case inlineTagNames[outer] && (name == "pre" || name == "blockquote"):
			return fmt.Errorf("inside <%s>", outer)
		}
	}
	return nil
}

func validEntity(e string) error {
	switch e {
	case "&lt;", "&gt;", "&amp;", "&quot;":
		return nil
	}
	digits, base := strings.TrimPrefix(e[1:len(e)-1], "#"), 10
	if !strings.HasPrefix(e, "&#") {
		return fmt.Errorf("entity %q not allowed", e)
	}
	if strings.HasPrefix(digits, "x") || strings.HasPrefix(digits, "X") {
		digits, base = digits[1:], 16
	}
	v, err := strconv.ParseUint(digits, base, 32)
	if err != nil || v == 0 || !utf8.ValidRune(rune(v)) {
		return fmt.Errorf("entity %q invalid", e)
	}
	return nil
}

// validText checks an attribute value: no bare &, < or >.
func validText(s string) error {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<', '>':
			return fmt.Errorf("bare %c", s[i])
		case '&':
			semi := strings.IndexByte(s[i:], ';')
			if semi < 0 {
				return fmt.Errorf("bare &")
			}
			if err := validEntity(s[i : i+semi+1]); err != nil {
				return err
			}
		}
	}
	return nil
}

func around(s string, i int) string {
	return s[max(0, i-20):min(len(s), i+20)]
}

// textOf returns the text Telegram shows for HTML s: tags removed,
// entities decoded.
func textOf(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch s[i] {
		case '<':
			end := strings.IndexByte(s[i:], '>')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			i += end + 1
		case '&':
			semi := strings.IndexByte(s[i:], ';')
			if semi < 0 {
				b.WriteByte('&')
				i++
				continue
			}
			e := s[i : i+semi+1]
			switch e {
			case "&lt;":
				b.WriteByte('<')
			case "&gt;":
				b.WriteByte('>')
			case "&amp;":
				b.WriteByte('&')
			case "&quot;":
				b.WriteByte('"')
			default:
				digits, base := strings.TrimPrefix(e[1:len(e)-1], "#"), 10
				if strings.HasPrefix(digits, "x") || strings.HasPrefix(digits, "X") {
					digits, base = digits[1:], 16
				}
				v, err := strconv.ParseUint(digits, base, 32)
				if err != nil {
					b.WriteString(e)
				} else {
					b.WriteRune(rune(v))
				}
			}
			i += semi + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// utf16Length is Telegram's length of text s.
func utf16Length(s string) int {
	n := 0
	for _, r := range s {
		n += len(utf16.Encode([]rune{r}))
	}
	return n
}

// checkParts checks Split's (html) or SplitPlain's guarantees for parts cut
// from input with limit: each part valid (html), its text within limit and
// not only white space, and the texts of the parts consecutive pieces of
// the input's text with only white space between them. It returns what lies
// around the parts: gaps[0] before the first, gaps[i] between part i-1 and
// part i, gaps[len(parts)] after the last.
func checkParts(input string, parts []string, limit int, html bool) (gaps []string, err error) {
	text := input
	if html {
		text = textOf(input)
	}
	pos := 0
	for i, part := range parts {
		pt := part
		if html {
			if err := validTelegramHTML(part); err != nil {
				return nil, fmt.Errorf("part %d invalid: %w\n%q", i, err, part)
			}
			pt = textOf(part)
		}
		if n := utf16Length(pt); n > limit {
			return nil, fmt.Errorf("part %d: text is %d UTF-16 units, limit %d", i, n, limit)
		}
		if strings.TrimFunc(pt, unicode.IsSpace) == "" {
			return nil, fmt.Errorf("part %d: text is empty or white space: %q", i, pt)
		}
		// Only white space may be skipped before the part's text.
		k := pos
		// (A part must end where a character of text ends: "\xe2" is a
		// prefix of U+2005's bytes, not of the text there.)
		follows := func(k int) bool {
			if !strings.HasPrefix(text[k:], pt) {
				return false
			}
			e := k
			for e < k+len(pt) { // character by character, as the splitter reads
				_, size := utf8.DecodeRuneInString(text[e:])
				e += size
			}
			return e == k+len(pt)
		}
		for !follows(k) {
			r, size := utf8.DecodeRuneInString(text[k:])
			if size == 0 || !unicode.IsSpace(r) {
				return nil, fmt.Errorf("part %d: text %q does not follow at %d (after white space): %q",
					i, pt, pos, text[pos:min(len(text), pos+len(pt)+20)])
			}
			k += size
		}
		gaps = append(gaps, text[pos:k])
		pos = k + len(pt)
	}
	rest := text[pos:]
	if strings.TrimFunc(rest, unicode.IsSpace) != "" {
		return nil, fmt.Errorf("text after the last part is lost: %q", rest)
	}
	return append(gaps, rest), nil
}
