package pgdb

import (
	"testing"

	"golang.org/x/text/unicode/norm"
)

// What saslprep normalises it normalises as NFKC does (golang.org/x/text,
// in tests only): each Latin letter with one accent typed as letter +
// combining accent, and full-width ASCII, amid other text; text already in
// NFKC is left as it is.
func TestSASLprepIsNFKCWhereItNormalises(t *testing.T) {
	covered := 0
	for r := rune(0xC0); r <= 0x17F; r++ {
		d := []rune(norm.NFD.String(string(r)))
		if len(d) != 2 || d[0] >= 0x80 {
			continue
		}
		covered++
		for _, s := range []string{string(d), "x" + string(d) + "€ 1", string(d) + string(d)} {
			if got, want := saslprep(s), norm.NFKC.String(s); got != want {
				t.Errorf("saslprep(%+q) = %+q, NFKC %+q", s, got, want)
			}
		}
	}
	if covered < 150 {
		t.Fatalf("only %d letters with one accent between U+00C0 and U+017F", covered)
	}
	for r := rune(0xFF01); r <= 0xFF5E; r++ {
		s := "ü" + string(r)
		if got, want := saslprep(s), norm.NFKC.String(s); got != want {
			t.Errorf("saslprep(%+q) = %+q, NFKC %+q", s, got, want)
		}
	}
	for _, s := range []string{"pässwörd", "пароль", "κωδικός", "密码パスワード", "סיסמה", "كلمة السر", "Ångström ß", "plain ascii"} {
		if !norm.NFKC.IsNormalString(s) {
			t.Fatalf("%q is not NFKC", s)
		}
		if got := saslprep(s); got != s {
			t.Errorf("saslprep(%q) = %q, want it unchanged", s, got)
		}
	}
}
