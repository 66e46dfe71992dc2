// Package bpe owns OpenAI's byte-pair encodings (o200k_base, cl100k_base)
// as compact tables, and counts tokens with them exactly as tiktoken does.
//
// The ranks live in the binary as one embedded string per encoding (every
// token in rank order, each behind a length byte; see gen.go), so they cost
// no heap and only the pages a lookup touches count as resident memory.
// Loading an encoding builds two small indexes over that string: the start
// of each token and an open-addressing hash table from token to rank
// (about 1.8 MB for o200k_base, instead of the ~37 MB a map[string]int of
// 200k strings takes). cl100k_base, for older models, is embedded
// compressed (0.46 MB instead of 0.74 MB of binary) and inflated into the
// heap when loaded.
package bpe

import (
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"strings"
	"sync"
	"unicode/utf8"
)

//go:generate go run gen.go

//go:embed o200k_base.bpe
var o200kData string

//go:embed cl100k_base.bpe.gz
var cl100kGzip string

// Encoding is one loaded byte-pair encoding. It is safe for concurrent use.
type Encoding struct {
	name   string
	data   string   // the embedded table: header, then length byte + token, in rank order
	start  []uint32 // start[r] is where token r's bytes begin in data; its length byte is just before
	slots  []uint32 // hash table: 0 empty, else rank+1 in the low rankBits, a hash tag above
	mask   uint64
	seed   maphash.Seed
	split  splitter // splits ASCII text as the pattern does
	usplit splitter // splits any valid UTF-8 text as the pattern does
}

const (
	rankBits = 18 // ranks+1 up to 262,143: o200k_base has 199,998 tokens
	rankMask = 1<<rankBits - 1
)

var (
	mu     sync.Mutex
	loaded = map[string]*Encoding{}
)

// Names lists the encodings this package has.
func Names() []string { return []string{"o200k_base", "cl100k_base"} }

// Get returns the named encoding, building its indexes on the first call
// (a few milliseconds); later calls return the same Encoding.
func Get(name string) (*Encoding, error) {
	mu.Lock()
	defer mu.Unlock()
	if e, ok := loaded[name]; ok {
		return e, nil
	}
	var data string
	var split, usplit splitter
	switch name {
	case "o200k_base":
		data, split, usplit = o200kData, splitO200k, splitO200kUnicode
	case "cl100k_base":
		d, err := cl100kData()
		if err != nil {
			return nil, fmt.Errorf("bpe: loading %s: %w", name, err)
		}
		data, split, usplit = d, splitCl100k, splitCl100kUnicode
	default:
		return nil, fmt.Errorf("bpe: no encoding %q", name)
	}
	e, err := build(name, data, split, usplit)
	if err != nil {
		return nil, fmt.Errorf("bpe: loading %s: %w", name, err)
	}
	loaded[name] = e
	return e, nil
}

// cl100kData is cl100k_base's table, inflated.
func cl100kData() (string, error) {
	r, err := gzip.NewReader(strings.NewReader(cl100kGzip))
	if err != nil {
		return "", fmt.Errorf("inflating the table: %w", err)
	}
	var b strings.Builder
	b.Grow(744094)
	if _, err := io.Copy(&b, r); err != nil {
		return "", fmt.Errorf("inflating the table: %w", err)
	}
	return b.String(), nil
}

// build indexes the embedded table data.
func build(name, data string, split, usplit splitter) (*Encoding, error) {
	if len(data) < 8 || data[:4] != "BPE1" {
		return nil, errors.New("not a BPE1 table")
	}
	n := int(binary.LittleEndian.Uint32([]byte(data[4:8])))
	if n <= 0 || n+1 > rankMask {
		return nil, fmt.Errorf("%d tokens", n)
	}
	size := 1
	for size < n*5/4 { // load factor ≤ 0.8; the tags keep misses cheap (BPE has many)
		size <<= 1
	}
	e := &Encoding{
		name:   name,
		data:   data,
		start:  make([]uint32, n),
		slots:  make([]uint32, size),
		mask:   uint64(size - 1),
		seed:   maphash.MakeSeed(),
		split:  split,
		usplit: usplit,
	}
	p := 8
	for r := range n {
		if p >= len(data) {
			return nil, fmt.Errorf("table ends at token %d of %d", r, n)
		}
		l := int(data[p])
		p++
		if l == 0 || p+l > len(data) {
			return nil, fmt.Errorf("token %d: bad length %d", r, l)
		}
		e.start[r] = uint32(p)
		h := maphash.String(e.seed, data[p:p+l])
		i := h & e.mask
		for e.slots[i] != 0 {
			i = (i + 1) & e.mask
		}
		e.slots[i] = uint32(r+1) | tag(h)
		p += l
	}
	if p != len(data) {
		return nil, fmt.Errorf("%d bytes after the last token", len(data)-p)
	}
	return e, nil
}

// tag is the part of hash h kept in a slot beside the rank, so that most
// probes that miss need no string comparison.
func tag(h uint64) uint32 { return uint32(h>>(64-(32-rankBits))) << rankBits }

// Name is the encoding's name, e.g. "o200k_base".
func (e *Encoding) Name() string { return e.name }

// Len is the number of tokens in the encoding (special tokens excluded).
func (e *Encoding) Len() int { return len(e.start) }

// token returns the bytes of token r.
func (e *Encoding) token(r int) string {
	s := e.start[r]
	return e.data[s : s+uint32(e.data[s-1])]
}

// rank returns the rank of the token with bytes b, or -1 if b is not one.
func (e *Encoding) rank(b string) int {
	h := maphash.String(e.seed, b)
	t := tag(h)
	for i := h & e.mask; ; i = (i + 1) & e.mask {
		s := e.slots[i]
		if s == 0 {
			return -1
		}
		if s&^rankMask != t {
			continue
		}
		r := int(s&rankMask) - 1
		if e.token(r) == b {
			return r
		}
	}
}

// Count returns the number of tokens text encodes to, special tokens
// ("<|endoftext|>") counted as ordinary text: the length of tiktoken's
// encode_ordinary(text).
func (e *Encoding) Count(text string) int {
	if text == "" {
		return 0
	}
	if isASCII(text) {
		n := 0
		for i := 0; i < len(text); {
			j := e.split(text, i)
			n += e.countPiece(text[i:j])
			i = j
		}
		return n
	}
	return e.countPattern(text)
}

// countPattern is Count with the pieces the pattern finds in any text
// (split_unicode.go).
func (e *Encoding) countPattern(text string) int {
	if !utf8.ValidString(text) {
		// The pattern sees runes, and tiktoken encodes each piece after a
		// round trip through []rune: every invalid byte becomes U+FFFD.
		text = string([]rune(text))
	}
	n := 0
	for i := 0; i < len(text); {
		j := e.usplit(text, i)
		n += e.countPiece(text[i:j])
		i = j
	}
	return n
}

// part is one piece boundary during merging: where it starts and the rank
// of the pair that starts there.
type part struct {
	start, rank int
}

// countPiece counts the tokens of one pre-tokenized piece: 1 if it is a
// token, else the number of parts left by tiktoken's byte-pair merge
// (the same algorithm as tiktoken-go v0.1.8's bytePairMerge).
func (e *Encoding) countPiece(piece string) int {
	if e.rank(piece) >= 0 || len(piece) == 1 {
		return 1
	}
	if len(piece) >= longPiece {
		return e.countLongPiece(piece)
	}
	return e.countScan(piece)
}

// countScan is tiktoken's merge as written: scan for the lowest rank,
// merge, repeat (quadratic in the piece's length).
func (e *Encoding) countScan(piece string) int {
	var buf [64]part
	var parts []part
	if len(piece)+1 <= len(buf) {
		parts = buf[:len(piece)+1]
	} else {
		parts = make([]part, len(piece)+1)
	}
	for i := range parts {
		parts[i] = part{i, math.MaxInt}
	}
	// rankOf is the rank of the bytes from part i to part i+skip+2, or MaxInt.
	rankOf := func(i, skip int) int {
		if i+skip+2 < len(parts) {
			if r := e.rank(piece[parts[i].start:parts[i+skip+2].start]); r >= 0 {
				return r
			}
		}
		return math.MaxInt
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = rankOf(i, 0)
	}
	for len(parts) > 1 {
		minRank, minIdx := math.MaxInt, -1
		for i := 0; i < len(parts)-1; i++ {
			if parts[i].rank < minRank {
				minRank, minIdx = parts[i].rank, i
			}
		}
		if minRank == math.MaxInt {
			break
		}
		i := minIdx
		parts[i].rank = rankOf(i, 1)
		if i > 0 {
			parts[i-1].rank = rankOf(i-1, 1)
		}
		parts = append(parts[:i+1], parts[i+2:]...)
	}
	return len(parts) - 1
}
