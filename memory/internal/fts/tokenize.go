package fts

import "sort"

// MaxTermBytes bounds the tokens every backend indexes: a longer token (a
// base64 blob, a URL, a 30 MB "word") is in no index (Indexed), so no
// search finds it, and a query word longer than this is no search term
// (Terms). It still counts in its message's length (BM25's D) and holds its
// place in the text, as FTS5's own tokenizer sees it: a phrase never
// matches across it. FTS5's Porter stemmer passes tokens this long through
// unstemmed (porterMaxToken), so a stored stem is over the bound exactly
// when its token is.
const MaxTermBytes = 64

// Indexed reports whether a token (or its stem) is short enough to be
// indexed (MaxTermBytes).
func Indexed(tok string) bool { return len(tok) <= MaxTermBytes }

// Tokens tokenizes text like FTS5's "porter unicode61" tokenizer: unicode61
// tokens (folded, diacritics removed), each through the Porter stemmer.
func Tokens(text string) []string {
	var out []string
	fts5Tokenize(text, func(tok []byte) {
		out = append(out, porterStem(string(tok)))
	})
	return out
}

// Stems is Tokens remembering each token's stem, for a caller that
// tokenizes much text of one vocabulary (an index built from a
// conversation's messages): a token met before costs no allocation and no
// stemming. It remembers at most stemsMax tokens, none longer than
// MaxTermBytes. Not safe for concurrent use; the zero value is ready.
type Stems struct{ m map[string]string }

const stemsMax = 1 << 16

// Tokens appends to out what Tokens(text) returns.
func (s *Stems) Tokens(text string, out []string) []string {
	if s.m == nil {
		s.m = make(map[string]string)
	}
	fts5Tokenize(text, func(tok []byte) {
		if st, ok := s.m[string(tok)]; ok {
			out = append(out, st)
			return
		}
		st := porterStem(string(tok))
		if len(s.m) < stemsMax && len(tok) <= MaxTermBytes {
			s.m[string(tok)] = st
		}
		out = append(out, st)
	})
	return out
}

// ---- unicode61 ----

// fts5AsciiTokenChar: ASCII letters and digits (categories L* and N*).
func fts5AsciiTokenChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

var fts5Utf8Trans1 = [64]byte{
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
	0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x00, 0x01, 0x02, 0x03, 0x00, 0x01, 0x00, 0x00,
}

// fts5ReadUTF8 decodes one character at s[i] (a byte >= 0x80) like SQLite's
// READ_UTF8 macro, malformed input included: a stray continuation byte is
// taken as the code point of its value, and bad sequences give U+FFFD.
func fts5ReadUTF8(s string, i int) (uint32, int) {
	c := uint32(s[i])
	i++
	if c >= 0xc0 {
		c = uint32(fts5Utf8Trans1[c-0xc0])
		for i < len(s) && s[i]&0xc0 == 0x80 {
			c = (c << 6) + uint32(0x3f&s[i])
			i++
		}
		if c < 0x80 || c&0xFFFFF800 == 0xD800 || c&0xFFFFFFFE == 0xFFFE {
			c = 0xFFFD
		}
	}
	return c, i
}

// fts5WriteUTF8 encodes like SQLite's WRITE_UTF8 macro.
func fts5WriteUTF8(b []byte, c uint32) []byte {
	switch {
	case c < 0x80:
		return append(b, byte(c))
	case c < 0x800:
		return append(b, 0xC0+byte((c>>6)&0x1F), 0x80+byte(c&0x3F))
	case c < 0x10000:
		return append(b, 0xE0+byte((c>>12)&0x0F), 0x80+byte((c>>6)&0x3F), 0x80+byte(c&0x3F))
	default:
		return append(b, 0xF0+byte((c>>18)&0x07), 0x80+byte((c>>12)&0x3F), 0x80+byte((c>>6)&0x3F), 0x80+byte(c&0x3F))
	}
}

// fts5IsAlnum reports whether a non-ASCII code point is a token character:
// Unicode 6.1 categories L*, N* or Co, as SQLite's tables say. Code points
// missing from SQLite's category table (category 0, which includes every
// value from U+100000 up, malformed ones too) count as token characters.
func fts5IsAlnum(c uint32) bool {
	if c >= 1<<20 {
		return true
	}
	i := sort.Search(len(fts5TokenRanges), func(i int) bool { return fts5TokenRanges[i][1] >= c })
	return i < len(fts5TokenRanges) && fts5TokenRanges[i][0] <= c
}

// fts5IsDiacritic ports sqlite3Fts5UnicodeIsdiacritic.
func fts5IsDiacritic(c uint32) bool {
	const mask0, mask1 = 0x08029FDF, 0x000361F8
	if c < 768 || c > 817 {
		return false
	}
	if c < 768+32 {
		return mask0&(1<<(c-768)) != 0
	}
	return mask1&(1<<(c-768-32)) != 0
}

// fts5Tokenize ports fts5UnicodeTokenize with the default options
// (remove_diacritics=1, categories "L* N* Co"). fn gets each folded token;
// the slice is reused.
func fts5Tokenize(s string, fn func(tok []byte)) {
	var buf []byte
	pos := 0
	for {
		// Skip separators up to the first token character.
		buf = buf[:0]
		for {
			if pos >= len(s) {
				return
			}
			if s[pos]&0x80 != 0 {
				c, next := fts5ReadUTF8(s, pos)
				pos = next
				if fts5IsAlnum(c) {
					if f := fts5Fold(c); f != 0 {
						buf = fts5WriteUTF8(buf, f)
					}
					break
				}
			} else {
				if fts5AsciiTokenChar(s[pos]) {
					buf = append(buf, asciiLower(s[pos]))
					pos++
					break
				}
				pos++
			}
		}
		// The rest of the token.
		for pos < len(s) {
			if s[pos]&0x80 != 0 {
				c, next := fts5ReadUTF8(s, pos)
				pos = next
				if !fts5IsAlnum(c) && !fts5IsDiacritic(c) {
					break
				}
				if f := fts5Fold(c); f != 0 {
					buf = fts5WriteUTF8(buf, f)
				}
			} else if !fts5AsciiTokenChar(s[pos]) {
				break
			} else {
				buf = append(buf, asciiLower(s[pos]))
				pos++
			}
		}
		fn(buf)
	}
}

func asciiLower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 32
	}
	return c
}

// fts5Fold ports sqlite3Fts5UnicodeFold(c, 1): simple case folding from
// SQLite's tables, then diacritics removed.
func fts5Fold(c uint32) uint32 {
	ret := c
	switch {
	case c < 128:
		if c >= 'A' && c <= 'Z' {
			ret = c + ('a' - 'A')
		}
	case c < 65536:
		lo, hi, res := 0, len(fts5FoldEntries)-1, -1
		for hi >= lo {
			t := (hi + lo) / 2
			if int(c)-int(fts5FoldEntries[t].code) >= 0 {
				res = t
				lo = t + 1
			} else {
				hi = t - 1
			}
		}
		if res >= 0 {
			p := fts5FoldEntries[res]
			if c < uint32(p.code)+uint32(p.n) && (0x01&uint32(p.flags)&(uint32(p.code)^c)) == 0 {
				ret = (c + uint32(fts5FoldOffsets[p.flags>>1])) & 0xFFFF
			}
		}
		ret = fts5RemoveDiacritic(ret)
	case c >= 66560 && c < 66600:
		ret = c + 40
	}
	return ret
}

// fts5RemoveDiacritic ports fts5_remove_diacritic(c, 0): a lowercase Latin
// letter with one diacritic becomes the plain letter; letters with several
// (marked 0x80 in the table) are left alone; combining marks become 0.
func fts5RemoveDiacritic(c uint32) uint32 {
	key := c<<3 | 7
	res := 0
	lo, hi := 0, len(fts5Dia)-1
	for hi >= lo {
		t := (hi + lo) / 2
		if key >= uint32(fts5Dia[t]) {
			res = t
			lo = t + 1
		} else {
			hi = t - 1
		}
	}
	if fts5DiaChar[res]&0x80 != 0 {
		return c
	}
	if c > uint32(fts5Dia[res]>>3)+uint32(fts5Dia[res]&0x07) {
		return c
	}
	return uint32(fts5DiaChar[res] & 0x7F)
}

var fts5Dia = [...]uint16{
	0, 1797, 1848, 1859, 1891, 1928, 1940, 1995,
	2024, 2040, 2060, 2110, 2168, 2206, 2264, 2286,
	2344, 2383, 2472, 2488, 2516, 2596, 2668, 2732,
	2782, 2842, 2894, 2954, 2984, 3000, 3028, 3336,
	3456, 3696, 3712, 3728, 3744, 3766, 3832, 3896,
	3912, 3928, 3944, 3968, 4008, 4040, 4056, 4106,
	4138, 4170, 4202, 4234, 4266, 4296, 4312, 4344,
	4408, 4424, 4442, 4472, 4488, 4504, 6148, 6198,
	6264, 6280, 6360, 6429, 6505, 6529, 61448, 61468,
	61512, 61534, 61592, 61610, 61642, 61672, 61688, 61704,
	61726, 61784, 61800, 61816, 61836, 61880, 61896, 61914,
	61948, 61998, 62062, 62122, 62154, 62184, 62200, 62218,
	62252, 62302, 62364, 62410, 62442, 62478, 62536, 62554,
	62584, 62604, 62640, 62648, 62656, 62664, 62730, 62766,
	62830, 62890, 62924, 62974, 63032, 63050, 63082, 63118,
	63182, 63242, 63274, 63310, 63368, 63390,
}

const hb = 0x80 // "several diacritics": only folded in complex mode

var fts5DiaChar = [...]byte{
	0, 'a', 'c', 'e', 'i', 'n',
	'o', 'u', 'y', 'y', 'a', 'c',
	'd', 'e', 'e', 'g', 'h', 'i',
	'j', 'k', 'l', 'n', 'o', 'r',
	's', 't', 'u', 'u', 'w', 'y',
	'z', 'o', 'u', 'a', 'i', 'o',
	'u', 'u' | hb, 'a' | hb, 'g', 'k', 'o',
	'o' | hb, 'j', 'g', 'n', 'a' | hb, 'a',
	'e', 'i', 'o', 'r', 'u', 's',
	't', 'h', 'a', 'e', 'o' | hb, 'o',
	'o' | hb, 'y', 0, 0, 0, 0,
	0, 0, 0, 0, 'a', 'b',
	'c' | hb, 'd', 'd', 'e' | hb, 'e', 'e' | hb,
	'f', 'g', 'h', 'h', 'i', 'i' | hb,
	'k', 'l', 'l' | hb, 'l', 'm', 'n',
	'o' | hb, 'p', 'r', 'r' | hb, 'r', 's',
	's' | hb, 't', 'u', 'u' | hb, 'v', 'w',
	'w', 'x', 'y', 'z', 'h', 't',
	'w', 'y', 'a', 'a' | hb, 'a' | hb, 'a' | hb,
	'e', 'e' | hb, 'e' | hb, 'i', 'o', 'o' | hb,
	'o' | hb, 'o' | hb, 'u', 'u' | hb, 'u' | hb, 'y',
}

type fts5FoldEntry struct {
	code  uint16
	flags uint8
	n     uint8
}

var fts5FoldEntries = [...]fts5FoldEntry{
	{65, 14, 26}, {181, 64, 1}, {192, 14, 23},
	{216, 14, 7}, {256, 1, 48}, {306, 1, 6},
	{313, 1, 16}, {330, 1, 46}, {376, 116, 1},
	{377, 1, 6}, {383, 104, 1}, {385, 50, 1},
	{386, 1, 4}, {390, 44, 1}, {391, 0, 1},
	{393, 42, 2}, {395, 0, 1}, {398, 32, 1},
	{399, 38, 1}, {400, 40, 1}, {401, 0, 1},
	{403, 42, 1}, {404, 46, 1}, {406, 52, 1},
	{407, 48, 1}, {408, 0, 1}, {412, 52, 1},
	{413, 54, 1}, {415, 56, 1}, {416, 1, 6},
	{422, 60, 1}, {423, 0, 1}, {425, 60, 1},
	{428, 0, 1}, {430, 60, 1}, {431, 0, 1},
	{433, 58, 2}, {435, 1, 4}, {439, 62, 1},
	{440, 0, 1}, {444, 0, 1}, {452, 2, 1},
	{453, 0, 1}, {455, 2, 1}, {456, 0, 1},
	{458, 2, 1}, {459, 1, 18}, {478, 1, 18},
	{497, 2, 1}, {498, 1, 4}, {502, 122, 1},
	{503, 134, 1}, {504, 1, 40}, {544, 110, 1},
	{546, 1, 18}, {570, 70, 1}, {571, 0, 1},
	{573, 108, 1}, {574, 68, 1}, {577, 0, 1},
	{579, 106, 1}, {580, 28, 1}, {581, 30, 1},
	{582, 1, 10}, {837, 36, 1}, {880, 1, 4},
	{886, 0, 1}, {902, 18, 1}, {904, 16, 3},
	{908, 26, 1}, {910, 24, 2}, {913, 14, 17},
	{931, 14, 9}, {962, 0, 1}, {975, 4, 1},
	{976, 140, 1}, {977, 142, 1}, {981, 146, 1},
	{982, 144, 1}, {984, 1, 24}, {1008, 136, 1},
	{1009, 138, 1}, {1012, 130, 1}, {1013, 128, 1},
	{1015, 0, 1}, {1017, 152, 1}, {1018, 0, 1},
	{1021, 110, 3}, {1024, 34, 16}, {1040, 14, 32},
	{1120, 1, 34}, {1162, 1, 54}, {1216, 6, 1},
	{1217, 1, 14}, {1232, 1, 88}, {1329, 22, 38},
	{4256, 66, 38}, {4295, 66, 1}, {4301, 66, 1},
	{7680, 1, 150}, {7835, 132, 1}, {7838, 96, 1},
	{7840, 1, 96}, {7944, 150, 8}, {7960, 150, 6},
	{7976, 150, 8}, {7992, 150, 8}, {8008, 150, 6},
	{8025, 151, 8}, {8040, 150, 8}, {8072, 150, 8},
	{8088, 150, 8}, {8104, 150, 8}, {8120, 150, 2},
	{8122, 126, 2}, {8124, 148, 1}, {8126, 100, 1},
	{8136, 124, 4}, {8140, 148, 1}, {8152, 150, 2},
	{8154, 120, 2}, {8168, 150, 2}, {8170, 118, 2},
	{8172, 152, 1}, {8184, 112, 2}, {8186, 114, 2},
	{8188, 148, 1}, {8486, 98, 1}, {8490, 92, 1},
	{8491, 94, 1}, {8498, 12, 1}, {8544, 8, 16},
	{8579, 0, 1}, {9398, 10, 26}, {11264, 22, 47},
	{11360, 0, 1}, {11362, 88, 1}, {11363, 102, 1},
	{11364, 90, 1}, {11367, 1, 6}, {11373, 84, 1},
	{11374, 86, 1}, {11375, 80, 1}, {11376, 82, 1},
	{11378, 0, 1}, {11381, 0, 1}, {11390, 78, 2},
	{11392, 1, 100}, {11499, 1, 4}, {11506, 0, 1},
	{42560, 1, 46}, {42624, 1, 24}, {42786, 1, 14},
	{42802, 1, 62}, {42873, 1, 4}, {42877, 76, 1},
	{42878, 1, 10}, {42891, 0, 1}, {42893, 74, 1},
	{42896, 1, 4}, {42912, 1, 10}, {42922, 72, 1},
	{65313, 14, 26},
}

var fts5FoldOffsets = [...]uint16{
	1, 2, 8, 15, 16, 26, 28, 32,
	37, 38, 40, 48, 63, 64, 69, 71,
	79, 80, 116, 202, 203, 205, 206, 207,
	209, 210, 211, 213, 214, 217, 218, 219,
	775, 7264, 10792, 10795, 23228, 23256, 30204, 54721,
	54753, 54754, 54756, 54787, 54793, 54809, 57153, 57274,
	57921, 58019, 58363, 61722, 65268, 65341, 65373, 65406,
	65408, 65410, 65415, 65424, 65436, 65439, 65450, 65462,
	65472, 65476, 65478, 65480, 65482, 65488, 65506, 65511,
	65514, 65521, 65527, 65528, 65529,
}
