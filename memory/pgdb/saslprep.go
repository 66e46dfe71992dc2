package pgdb

import (
	"unicode"
	"unicode/utf8"
)

// saslprep prepares a SCRAM password as PostgreSQL's pg_saslprep does
// (RFC 4013 SASLprep) when the password was set with ALTER ROLE …
// PASSWORD, so that it signs in as typed: non-ASCII spaces become spaces,
// characters "commonly mapped to nothing" (soft hyphen, zero-width joiners,
// variation selectors, …) go, and the result is normalised to NFKC. A
// password SASLprep refuses (a prohibited character, mixed text directions,
// not UTF-8) is used as it is, as the server does.
//
// The limit: NFKC here covers what a password typed differently from the
// way it was set plausibly holds, without Unicode's tables (golang.org/x/text
// would add ~125 KB to the binary): a Latin letter with one accent
// written as letter + combining accent (NFD: "a\u0308" for "ä", U+00C0 to
// U+017F) and full-width ASCII ("ｐ"). Other text not already in NFKC
// (ligatures such as "ﬁ", super- and subscripts, decomposed Vietnamese or
// Hangul, …) is sent as it is, and signs in only when it was set the same
// way and SASLprep left it unchanged. Also not checked: code points
// unassigned in Unicode 3.2 (the server then uses the password as it is),
// and text directions are told by script (Hebrew, Arabic, …), not by
// Unicode's bidirectional classes.
func saslprep(password string) string {
	ascii := true
	for i := 0; i < len(password); i++ {
		if password[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii || !utf8.ValidString(password) {
		return password
	}
	prepped := make([]rune, 0, len(password))
	for _, r := range password {
		switch {
		case nonASCIISpace(r):
			r = ' '
		case mappedToNothing(r):
			continue
		case r >= 0xFF01 && r <= 0xFF5E: // full-width ASCII
			r -= 0xFF01 - 0x21
		}
		if n := len(prepped); n > 0 && r >= 0x300 && r < 0x340 {
			if c := compose(prepped[n-1], r); c != 0 {
				prepped[n-1] = c
				continue
			}
		}
		prepped = append(prepped, r)
	}
	var randAL, l bool
	for _, r := range prepped {
		if prohibited(r) {
			return password
		}
		if isRandAL(r) {
			randAL = true
		} else if unicode.IsLetter(r) {
			l = true
		}
	}
	if randAL && (l || !isRandAL(prepped[0]) || !isRandAL(prepped[len(prepped)-1])) {
		return password
	}
	return string(prepped)
}

// composeTable holds the canonical decomposition of U+00C0 to U+017F,
// two bytes a rune: the ASCII letter and the combining accent (U+0300 +
// byte - '@'), ".." for the runes that are not a letter with one accent.
const composeTable = "" +
	"A@AAABACAHAJ..CgE@EAEBEHI@IAIBIH..NCO@OAOBOCOH....U@UAUBUHYA...." +
	"a@aAaBaCaHaJ..cge@eAeBeHi@iAiBiH..nCo@oAoBoCoH....u@uAuBuHyA..yH" +
	"ADaDAFaFAhahCAcACBcBCGcGCLcLDLdL....EDeDEFeFEGeGEhehELeLGBgBGFgF" +
	"GGgGGgggHBhB....ICiCIDiDIFiFIhihIG......JBjBKgkg..LAlALglgLLlL.." +
	"......NAnANgngNLnL......ODoDOFoFOKoK....RArARgrgRLrLSAsASBsBSgsg" +
	"SLsLTgtgTLtL....UCuCUDuDUFuFUJuJUKuKUhuhWBwBYByBYHZAzAZGzGZLzL.."

// compose is the letter of U+00C0 to U+017F that base followed by the
// combining accent is (its NFC), or 0.
func compose(base, accent rune) rune {
	if base >= 0x80 {
		return 0
	}
	for i := 0; i+1 < len(composeTable); i += 2 {
		if rune(composeTable[i]) == base && rune(composeTable[i+1])-'@'+0x300 == accent {
			return rune(0xC0 + i/2)
		}
	}
	return 0
}

// isRandAL tells a right-to-left letter (RFC 3454 table D.1), by script.
func isRandAL(r rune) bool {
	return unicode.In(r, unicode.Hebrew, unicode.Arabic, unicode.Syriac, unicode.Thaana, unicode.Nko) && !unicode.IsMark(r) && !unicode.IsDigit(r)
}

// nonASCIISpace is RFC 3454 table C.1.2.
func nonASCIISpace(r rune) bool {
	return r == 0xA0 || r == 0x1680 || (r >= 0x2000 && r <= 0x200B) || r == 0x202F || r == 0x205F || r == 0x3000
}

// mappedToNothing is RFC 3454 table B.1.
func mappedToNothing(r rune) bool {
	switch {
	case r == 0xAD, r == 0x34F, r == 0x1806, r >= 0x180B && r <= 0x180D, r >= 0x200B && r <= 0x200D, r == 0x2060,
		r >= 0xFE00 && r <= 0xFE0F, r == 0xFEFF:
		return true
	}
	return false
}

// prohibited is RFC 4013's prohibited output: RFC 3454 tables C.1.2 and
// C.2.1 to C.9.
func prohibited(r rune) bool {
	switch {
	case nonASCIISpace(r),
		r < 0x20, r >= 0x7F && r <= 0x9F, // C.2.1, C.2.2
		r == 0x6DD, r == 0x70F, r == 0x180E, r == 0x200C, r == 0x200D, r == 0x2028, r == 0x2029,
		r >= 0x2060 && r <= 0x2063, r >= 0x206A && r <= 0x206F, r == 0xFEFF, r >= 0xFFF9 && r <= 0xFFFC,
		r >= 0x1D173 && r <= 0x1D17A,
		r >= 0xE000 && r <= 0xF8FF, r >= 0xF0000 && r <= 0xFFFFD, r >= 0x100000 && r <= 0x10FFFD, // C.3 private use
		r >= 0xFDD0 && r <= 0xFDEF, r&0xFFFE == 0xFFFE, // C.4 non-characters
		r >= 0xD800 && r <= 0xDFFF,                                                   // C.5
		r >= 0xFFF9 && r <= 0xFFFD,                                                   // C.6
		r >= 0x2FF0 && r <= 0x2FFB,                                                   // C.7
		r == 0x340, r == 0x341, r == 0x200E, r == 0x200F, r >= 0x202A && r <= 0x202E, // C.8
		r == 0xE0001, r >= 0xE0020 && r <= 0xE007F: // C.9
		return true
	}
	return false
}
