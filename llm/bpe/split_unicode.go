package bpe

import (
	"unicode"
	"unicode/utf8"
)

// The pre-tokenizer for any valid UTF-8 text: the encodings' patterns
// (o200kPattern, cl100kPattern) by hand, rune by rune, with the
// backtracking their overlapping classes call for. The tests and the fuzz
// target check it against the patterns compiled with regexp2, as
// tiktoken's are; the package does without a regex engine (regexp2 weighed
// 0.27 MB of the binary, and cost about a microsecond per character).
//
// Positions are byte offsets into s; s is valid UTF-8 and i < len(s).

// runeAt returns the rune at s[i] and its width; at the end of s, -1.
func runeAt(s string, i int) (rune, int) {
	if i >= len(s) {
		return -1, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

func uLetter(r rune) bool { return r >= 0 && unicode.IsLetter(r) }
func uNumber(r rune) bool { return r >= 0 && unicode.IsNumber(r) }
func uNL(r rune) bool     { return r == '\r' || r == '\n' }

// uSpace is \s: [\f\n\r\t\v\x85\p{Z}], the same set as unicode.IsSpace.
func uSpace(r rune) bool { return r >= 0 && unicode.IsSpace(r) }

// uPrefix is [^\r\n\p{L}\p{N}].
func uPrefix(r rune) bool { return r >= 0 && !uNL(r) && !uLetter(r) && !uNumber(r) }

// uPunct is [^\s\p{L}\p{N}].
func uPunct(r rune) bool { return r >= 0 && !uSpace(r) && !uLetter(r) && !uNumber(r) }

// uCaps is o200k_base's [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}].
func uCaps(r rune) bool {
	return r >= 0 && (unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M))
}

// uSmall is o200k_base's [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func uSmall(r rune) bool {
	return r >= 0 && (unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M))
}

// uBoth is in both uCaps and uSmall: [\p{Lm}\p{Lo}\p{M}].
func uBoth(r rune) bool { return r >= 0 && unicode.In(r, unicode.Lm, unicode.Lo, unicode.M) }

// run returns where the run of runes in class that starts at s[i] ends.
func run(s string, i int, class func(rune) bool) int {
	for {
		r, w := runeAt(s, i)
		if !class(r) {
			return i
		}
		i += w
	}
}

// uDigits is \p{N}{1,3} at s[i], a number.
func uDigits(s string, i int) int {
	for n := 0; n < 3; n++ {
		r, w := runeAt(s, i)
		if !uNumber(r) {
			break
		}
		i += w
	}
	return i
}

// uPunctRun is ` ?[^\s\p{L}\p{N}]+[\r\n]*` (with '/' among the trailing
// characters when slash) at s[i]: where it ends, or i when it does not match.
func uPunctRun(s string, i int, slash bool) int {
	j := i
	if s[i] == ' ' {
		j++
	}
	k := run(s, j, uPunct)
	if k == j {
		return i
	}
	for k < len(s) && (isNL(s[k]) || slash && s[k] == '/') {
		k++
	}
	return k
}

// uSpaces is `\s*[\r\n]+|\s+(?!\S)|\s+` at s[i], a space (see spaces).
func uSpaces(s string, i int) int {
	w := run(s, i, uSpace)
	for p := w - 1; p >= i; p-- { // line breaks are ASCII: step back by bytes
		if isNL(s[p]) {
			return p + 1
		}
	}
	if w == len(s) {
		return w
	}
	_, lastW := utf8.DecodeLastRuneInString(s[i:w])
	if w-lastW == i { // one space, a non-space after it
		return w
	}
	return w - lastW
}

// o200kSmallWord is o200k_base's first word alternative after the optional
// prefix, `caps* small+` then a contraction, at s[j]: where it ends, or -1.
func o200kSmallWord(s string, j int) int {
	u := run(s, j, uCaps)
	// The caps run stops at a rune that is not a capital; a small letter
	// there continues the word.
	if r, _ := runeAt(s, u); uSmall(r) {
		return contraction(s, run(s, u, uSmall))
	}
	// Else the caps run gives back runes up to its last one that is also
	// small (a modifier letter, other letter or mark): small+ takes that
	// one alone, as the capital after it (if any) is not small.
	for k := u; k > j; {
		r, w := utf8.DecodeLastRuneInString(s[j:k])
		k -= w
		if uBoth(r) {
			return contraction(s, k+w)
		}
	}
	return -1
}

// o200kCapsWord is the second, `caps+ small*` then a contraction, at s[j],
// tried when the first failed from both starts: no small letter follows
// the capitals, so the word is the capitals.
func o200kCapsWord(s string, j int) int {
	if u := run(s, j, uCaps); u > j {
		return contraction(s, u)
	}
	return -1
}

// splitO200kUnicode is splitO200k for any valid UTF-8 text. Each word
// alternative is tried with the prefix, then without it (a mark is both a
// prefix and part of a word), before the next alternative.
func splitO200kUnicode(s string, i int) int {
	c, cw := runeAt(s, i)
	for _, word := range []func(string, int) int{o200kSmallWord, o200kCapsWord} {
		if uPrefix(c) {
			if k := word(s, i+cw); k >= 0 {
				return k
			}
		}
		if k := word(s, i); k >= 0 {
			return k
		}
	}
	if uNumber(c) {
		return uDigits(s, i)
	}
	if k := uPunctRun(s, i, true); k > i {
		return k
	}
	return uSpaces(s, i)
}

// splitCl100kUnicode is splitCl100k for any valid UTF-8 text.
func splitCl100kUnicode(s string, i int) int {
	if k := contraction(s, i); k > i {
		return k
	}
	c, cw := runeAt(s, i)
	if uPrefix(c) {
		if l := run(s, i+cw, uLetter); l > i+cw {
			return l
		}
	}
	if uLetter(c) {
		return run(s, i, uLetter)
	}
	if uNumber(c) {
		return uDigits(s, i)
	}
	if k := uPunctRun(s, i, false); k > i {
		return k
	}
	return uSpaces(s, i)
}
