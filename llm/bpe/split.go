package bpe

// The pre-tokenizer for ASCII text, by hand: the same pieces as the
// encodings' patterns (compiled with regexp2, which the tests and the fuzz
// target check it against), without the regex engine, which costs about a
// microsecond per character. Most chat text, and every header the assembler
// counts, is ASCII; other text goes through the pattern.
//
// On ASCII, \p{L} is [A-Za-z] (\p{Lu} [A-Z], \p{Ll} [a-z], no Lt, Lm, Lo or
// M), \p{N} is [0-9] and \s is [\t\n\v\f\r ].

// splitter returns where the piece that starts at s[i] ends; s is ASCII
// and i < len(s).
type splitter func(s string, i int) int

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func isUpper(c byte) bool  { return 'A' <= c && c <= 'Z' }
func isLower(c byte) bool  { return 'a' <= c && c <= 'z' }
func isLetter(c byte) bool { return isUpper(c) || isLower(c) }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isSpace(c byte) bool  { return c == ' ' || '\t' <= c && c <= '\r' }
func isNL(c byte) bool     { return c == '\r' || c == '\n' }

// isPrefix is [^\r\n\p{L}\p{N}]: the one character allowed before a word.
func isPrefix(c byte) bool { return !isNL(c) && !isLetter(c) && !isDigit(c) }

// isPunct is [^\s\p{L}\p{N}].
func isPunct(c byte) bool { return !isSpace(c) && !isLetter(c) && !isDigit(c) }

func lower(c byte) byte {
	if isUpper(c) {
		return c + 'a' - 'A'
	}
	return c
}

// contraction is (?i:'s|'t|'re|'ve|'m|'ll|'d)? at s[k]: where it ends, or
// k when there is none.
func contraction(s string, k int) int {
	if k+1 >= len(s) || s[k] != '\'' {
		return k
	}
	switch lower(s[k+1]) {
	case 's', 't', 'm', 'd':
		return k + 2
	case 'r', 'v':
		if k+2 < len(s) && lower(s[k+2]) == 'e' {
			return k + 3
		}
	case 'l':
		if k+2 < len(s) && lower(s[k+2]) == 'l' {
			return k + 3
		}
	}
	return k
}

// digits is \p{N}{1,3} at s[i], a digit.
func digits(s string, i int) int {
	k := i + 1
	for k < len(s) && k-i < 3 && isDigit(s[k]) {
		k++
	}
	return k
}

// punct is ` ?[^\s\p{L}\p{N}]+[\r\n]*` (with '/' among the trailing
// characters when slash) at s[i]: where it ends, or i when it does not match.
func punct(s string, i int, slash bool) int {
	j := i
	if s[i] == ' ' {
		j++
	}
	k := j
	for k < len(s) && isPunct(s[k]) {
		k++
	}
	if k == j {
		return i
	}
	for k < len(s) && (isNL(s[k]) || slash && s[k] == '/') {
		k++
	}
	return k
}

// spaces is `\s*[\r\n]+|\s+(?!\S)|\s+` at s[i], a space: up to the last
// line break of the run of spaces; else the run but its last space when a
// non-space follows it (that space goes with the next piece); else the run.
func spaces(s string, i int) int {
	w := i
	for w < len(s) && isSpace(s[w]) {
		w++
	}
	for p := w - 1; p >= i; p-- {
		if isNL(s[p]) {
			return p + 1
		}
	}
	if w == len(s) || w-i == 1 {
		return w
	}
	return w - 1
}

// splitO200k is o200k_base's pattern:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
func splitO200k(s string, i int) int {
	c := s[i]
	j := i
	if isPrefix(c) {
		j++
	}
	// A word: capitals then small letters (the first alternative), or
	// capitals alone (the second, when no small letter follows them).
	u := j
	for u < len(s) && isUpper(s[u]) {
		u++
	}
	l := u
	for l < len(s) && isLower(s[l]) {
		l++
	}
	if l > j {
		return contraction(s, l)
	}
	if isDigit(c) {
		return digits(s, i)
	}
	if k := punct(s, i, true); k > i {
		return k
	}
	return spaces(s, i)
}

// splitCl100k is cl100k_base's pattern:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
//	| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func splitCl100k(s string, i int) int {
	c := s[i]
	if k := contraction(s, i); k > i {
		return k
	}
	j := i
	if isPrefix(c) {
		j++
	}
	l := j
	for l < len(s) && isLetter(s[l]) {
		l++
	}
	if l > j {
		return l
	}
	if isDigit(c) {
		return digits(s, i)
	}
	if k := punct(s, i, false); k > i {
		return k
	}
	return spaces(s, i)
}
