package format

import (
	"sort"
	"unicode"
)

// displayWidth is the number of monospace columns s takes: two for East
// Asian wide characters and emoji, none for combining marks, joiners,
// variation selectors and control characters, one otherwise. It is an
// approximation good enough to align table columns.
func displayWidth(s string) int {
	w := 0
	for _, r := range s {
		w += runeWidth(r)
	}
	return w
}

func runeWidth(r rune) int {
	switch {
	case r < 0x20 || r == 0x7F:
		return 0
	case r < 0x300:
		return 1
	case extendsCluster(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
		return 0
	case inTable(r, wideRanges):
		return 2
	}
	return 1
}

// extendsCluster reports whether r continues the character before it: a
// combining mark, a zero-width joiner, a variation selector, an emoji skin
// tone modifier or an emoji tag. No cut is made before such a rune.
func extendsCluster(r rune) bool {
	switch {
	case r < 0x300:
		return false
	case r == 0x200C || r == 0x200D, // ZWNJ, ZWJ
		0xFE00 <= r && r <= 0xFE0F,   // variation selectors
		0x1F3FB <= r && r <= 0x1F3FF, // skin tones
		0xE0020 <= r && r <= 0xE007F, // emoji tags
		0xE0100 <= r && r <= 0xE01EF: // variation selectors supplement
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc)
}

func isRegionalIndicator(r rune) bool { return 0x1F1E6 <= r && r <= 0x1F1FF }

func inTable(r rune, table [][2]rune) bool {
	i := sort.Search(len(table), func(i int) bool { return table[i][1] >= r })
	return i < len(table) && table[i][0] <= r
}

// wideRanges: East Asian Wide and Fullwidth characters and the emoji
// presented as wide, sorted.
var wideRanges = [][2]rune{
	{0x1100, 0x115F}, {0x231A, 0x231B}, {0x2329, 0x232A}, {0x23E9, 0x23EC},
	{0x23F0, 0x23F0}, {0x23F3, 0x23F3}, {0x25FD, 0x25FE}, {0x2614, 0x2615},
	{0x2648, 0x2653}, {0x267F, 0x267F}, {0x2693, 0x2693}, {0x26A1, 0x26A1},
	{0x26AA, 0x26AB}, {0x26BD, 0x26BE}, {0x26C4, 0x26C5}, {0x26CE, 0x26CE},
	{0x26D4, 0x26D4}, {0x26EA, 0x26EA}, {0x26F2, 0x26F3}, {0x26F5, 0x26F5},
	{0x26FA, 0x26FA}, {0x26FD, 0x26FD}, {0x2705, 0x2705}, {0x270A, 0x270B},
	{0x2728, 0x2728}, {0x274C, 0x274C}, {0x274E, 0x274E}, {0x2753, 0x2755},
	{0x2757, 0x2757}, {0x2795, 0x2797}, {0x27B0, 0x27B0}, {0x27BF, 0x27BF},
	{0x2B1B, 0x2B1C}, {0x2B50, 0x2B50}, {0x2B55, 0x2B55}, {0x2E80, 0x303E},
	{0x3041, 0x33FF}, {0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xA000, 0xA4CF},
	{0xA960, 0xA97F}, {0xAC00, 0xD7A3}, {0xF900, 0xFAFF}, {0xFE10, 0xFE19},
	{0xFE30, 0xFE6F}, {0xFF00, 0xFF60}, {0xFFE0, 0xFFE6}, {0x16FE0, 0x16FE4},
	{0x17000, 0x18AFF}, {0x1B000, 0x1B2FF}, {0x1F004, 0x1F004}, {0x1F0CF, 0x1F0CF},
	{0x1F18E, 0x1F18E}, {0x1F191, 0x1F19A}, {0x1F200, 0x1F251}, {0x1F300, 0x1F64F},
	{0x1F680, 0x1F6FF}, {0x1F7E0, 0x1F7EB}, {0x1F90C, 0x1F9FF}, {0x1FA70, 0x1FAFF},
	{0x20000, 0x3FFFD},
}
