package fts

// This file is a byte-for-byte port of the Porter stemmer of SQLite's FTS5
// "porter" tokenizer (ext/fts5/fts5_tokenize.c), so Tokens stems exactly
// as SQLite's own 'porter unicode61' does. FTS5's version differs from the
// textbook algorithm in small ways that are kept here on purpose: step 1a
// maps "ies" to "i" only for words of four bytes or more, step 1b's "eed"
// branch needs more than three bytes, and stemming runs on bytes (bytes of
// non-ASCII characters count as consonants). Tokens shorter than 3 bytes or
// longer than 64 bytes pass through unchanged.

// porterMaxToken is FTS5_PORTER_MAX_TOKEN.
const porterMaxToken = 64

// porterStem stems one token produced by the unicode61 tokenizer.
func porterStem(tok string) string {
	if len(tok) > porterMaxToken || len(tok) < 3 {
		return tok
	}
	var buf [porterMaxToken + 64]byte
	n := copy(buf[:], tok)
	b := buf[:]

	// Step 1.
	porterStep1A(b, &n)
	if porterStep1B(b, &n) {
		if !porterStep1B2(b, &n) {
			c := b[n-1]
			if !porterIsVowel(c, false) && c != 'l' && c != 's' && c != 'z' && n >= 2 && c == b[n-2] {
				n--
			} else if porterMEq1(b[:n]) && porterOstar(b[:n]) {
				b[n] = 'e'
				n++
			}
		}
	}

	// Step 1C.
	if b[n-1] == 'y' && porterVowel(b[:n-1]) {
		b[n-1] = 'i'
	}

	// Steps 2 through 4.
	porterStep2(b, &n)
	porterStep3(b, &n)
	porterStep4(b, &n)

	// Step 5a.
	if b[n-1] == 'e' {
		if porterMGt1(b[:n-1]) || (porterMEq1(b[:n-1]) && !porterOstar(b[:n-1])) {
			n--
		}
	}

	// Step 5b.
	if n > 1 && b[n-1] == 'l' && b[n-2] == 'l' && porterMGt1(b[:n-1]) {
		n--
	}
	return string(b[:n])
}

func porterIsVowel(c byte, yIsVowel bool) bool {
	return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || (yIsVowel && c == 'y')
}

// porterGobbleVC skips one vowel run followed by one consonant and returns
// the offset just past that consonant, or 0 when there is none.
func porterGobbleVC(stem []byte, prevCons bool) int {
	cons := prevCons
	i := 0
	for ; i < len(stem); i++ {
		cons = !porterIsVowel(stem[i], cons)
		if !cons {
			break
		}
	}
	for i++; i < len(stem); i++ {
		cons = !porterIsVowel(stem[i], cons)
		if cons {
			return i + 1
		}
	}
	return 0
}

// porterMGt0 is the condition (m > 0).
func porterMGt0(stem []byte) bool { return porterGobbleVC(stem, false) != 0 }

// porterMGt1 is the condition (m > 1).
func porterMGt1(stem []byte) bool {
	n := porterGobbleVC(stem, false)
	return n != 0 && porterGobbleVC(stem[n:], true) != 0
}

// porterMEq1 is the condition (m = 1).
func porterMEq1(stem []byte) bool {
	n := porterGobbleVC(stem, false)
	return n != 0 && porterGobbleVC(stem[n:], true) == 0
}

// porterOstar is the condition (*o): the stem ends consonant-vowel-consonant
// and the last consonant is not w, x or y.
func porterOstar(stem []byte) bool {
	if len(stem) == 0 {
		return false
	}
	last := stem[len(stem)-1]
	if last == 'w' || last == 'x' || last == 'y' {
		return false
	}
	mask := 0
	cons := false
	for _, c := range stem {
		cons = !porterIsVowel(c, cons)
		mask <<= 1
		if cons {
			mask++
		}
	}
	return mask&0x7 == 0x5
}

// porterMGt1SorT is the condition (m > 1 and (*S or *T)).
func porterMGt1SorT(stem []byte) bool {
	if len(stem) == 0 {
		return false
	}
	last := stem[len(stem)-1]
	return (last == 's' || last == 't') && porterMGt1(stem)
}

// porterVowel is the condition (*v*).
func porterVowel(stem []byte) bool {
	for i, c := range stem {
		if porterIsVowel(c, i > 0) {
			return true
		}
	}
	return false
}

func porterStep1A(b []byte, pn *int) {
	n := *pn
	if n < 2 || b[n-1] != 's' {
		return
	}
	if b[n-2] == 'e' {
		if (n > 4 && b[n-4] == 's' && b[n-3] == 's') || (n > 3 && b[n-3] == 'i') {
			*pn = n - 2
		} else {
			*pn = n - 1
		}
	} else if b[n-2] != 's' {
		*pn = n - 1
	}
}

// porterRule is one line of FTS5's generated step tables: when the word
// ends in suffix (and is longer than it) and cond holds for the rest, the
// suffix is replaced by out. Within a step, the first rule whose suffix
// matches decides, whether or not its condition holds.
type porterRule struct {
	suffix string
	cond   func([]byte) bool // nil: always
	out    string
}

// The generated steps switch on the second-to-last byte; the rules of each
// step are listed in the order FTS5 tests them, grouped by that byte.
var (
	porterStep2Rules = map[byte][]porterRule{
		'a': {{"ational", porterMGt0, "ate"}, {"tional", porterMGt0, "tion"}},
		'c': {{"enci", porterMGt0, "ence"}, {"anci", porterMGt0, "ance"}},
		'e': {{"izer", porterMGt0, "ize"}},
		'g': {{"logi", porterMGt0, "log"}},
		'l': {{"bli", porterMGt0, "ble"}, {"alli", porterMGt0, "al"}, {"entli", porterMGt0, "ent"}, {"eli", porterMGt0, "e"}, {"ousli", porterMGt0, "ous"}},
		'o': {{"ization", porterMGt0, "ize"}, {"ation", porterMGt0, "ate"}, {"ator", porterMGt0, "ate"}},
		's': {{"alism", porterMGt0, "al"}, {"iveness", porterMGt0, "ive"}, {"fulness", porterMGt0, "ful"}, {"ousness", porterMGt0, "ous"}},
		't': {{"aliti", porterMGt0, "al"}, {"iviti", porterMGt0, "ive"}, {"biliti", porterMGt0, "ble"}},
	}
	porterStep3Rules = map[byte][]porterRule{
		'a': {{"ical", porterMGt0, "ic"}},
		's': {{"ness", porterMGt0, ""}},
		't': {{"icate", porterMGt0, "ic"}, {"iciti", porterMGt0, "ic"}},
		'u': {{"ful", porterMGt0, ""}},
		'v': {{"ative", porterMGt0, ""}},
		'z': {{"alize", porterMGt0, "al"}},
	}
	porterStep4Rules = map[byte][]porterRule{
		'a': {{"al", porterMGt1, ""}},
		'c': {{"ance", porterMGt1, ""}, {"ence", porterMGt1, ""}},
		'e': {{"er", porterMGt1, ""}},
		'i': {{"ic", porterMGt1, ""}},
		'l': {{"able", porterMGt1, ""}, {"ible", porterMGt1, ""}},
		'n': {{"ant", porterMGt1, ""}, {"ement", porterMGt1, ""}, {"ment", porterMGt1, ""}, {"ent", porterMGt1, ""}},
		'o': {{"ion", porterMGt1SorT, ""}, {"ou", porterMGt1, ""}},
		's': {{"ism", porterMGt1, ""}},
		't': {{"ate", porterMGt1, ""}, {"iti", porterMGt1, ""}},
		'u': {{"ous", porterMGt1, ""}},
		'v': {{"ive", porterMGt1, ""}},
		'z': {{"ize", porterMGt1, ""}},
	}
	porterStep1BRules = map[byte][]porterRule{
		'e': {{"eed", porterMGt0, "ee"}, {"ed", porterVowel, ""}},
		'n': {{"ing", porterVowel, ""}},
	}
	porterStep1B2Rules = map[byte][]porterRule{
		'a': {{"at", nil, "ate"}},
		'b': {{"bl", nil, "ble"}},
		'i': {{"iz", nil, "ize"}},
	}
)

// porterApply runs one generated step. It reports whether a rule of the
// step changed the word and "returns 1" in FTS5's sense: only the rules of
// step 1b that strip ed/ing and those of step 1b2 do.
func porterApply(rules map[byte][]porterRule, b []byte, pn *int) (matched bool, rule porterRule) {
	n := *pn
	if n < 2 {
		return false, porterRule{}
	}
	for _, r := range rules[b[n-2]] {
		k := len(r.suffix)
		if n > k && string(b[n-k:n]) == r.suffix {
			if r.cond == nil || r.cond(b[:n-k]) {
				copy(b[n-k:], r.out)
				*pn = n - k + len(r.out)
				return true, r
			}
			return false, r
		}
	}
	return false, porterRule{}
}

func porterStep1B(b []byte, pn *int) bool {
	ok, r := porterApply(porterStep1BRules, b, pn)
	// The "eed" → "ee" rule does not count as a step 1b change.
	return ok && r.suffix != "eed"
}

func porterStep1B2(b []byte, pn *int) bool {
	ok, _ := porterApply(porterStep1B2Rules, b, pn)
	return ok
}

func porterStep2(b []byte, pn *int) { porterApply(porterStep2Rules, b, pn) }
func porterStep3(b []byte, pn *int) { porterApply(porterStep3Rules, b, pn) }
func porterStep4(b []byte, pn *int) { porterApply(porterStep4Rules, b, pn) }
