package llm

import (
	"hash/maphash"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/recallbot/recall/llm/bpe"
)

// Counter counts tokens in text for one model. Implementations are safe for
// concurrent use.
type Counter interface {
	Count(text string) int
}

// NewCounter returns a token counter for model. OpenAI model names (an
// optional "openai/"-style provider prefix is ignored) get the real
// tokenizer, loaded from embedded tables without network access:
//
//	gpt-4o*, gpt-4.1*, o1*, o3*, o4*, gpt-5*, other gpt-*  → o200k_base
//	gpt-4, gpt-4-*, gpt-3.5*, gpt-35*                      → cl100k_base
//
// Any other model (llama3, mistral, qwen, …) gets an estimate of
// ceil(runes/4). The first counter for an encoding takes a moment to build
// its tables; later ones share them.
func NewCounter(model string) Counter {
	name := encodingFor(model)
	if name == "" {
		return estimateCounter{}
	}
	return &lazyCounter{encoding: name}
}

// Preload builds c's tables now if c builds them on first use, so that the
// first user's turn does not wait for them. It returns when they are built;
// start-up calls it from a goroutine it owns. Other counters need nothing.
func Preload(c Counter) {
	if l, ok := c.(*lazyCounter); ok {
		l.load()
	}
}

// lazyCounter builds the tokenizer on first use (or Preload): a bot that
// never counts with it, or a test, does not pay for the indexes.
type lazyCounter struct {
	encoding string
	once     sync.Once
	c        Counter
}

func (l *lazyCounter) Count(text string) int {
	l.load()
	return l.c.Count(text)
}

func (l *lazyCounter) load() {
	l.once.Do(func() {
		c, err := sharedCounter(l.encoding)
		if err != nil { // cannot happen with the embedded tables; stay usable
			l.c = estimateCounter{}
			return
		}
		l.c = c
	})
}

// CountMessages estimates the prompt tokens of msgs the way OpenAI's
// cookbook does: each message costs its content plus ~4 tokens of framing
// (role and separators), and the reply is primed with 3 more. Images
// count their Tokens.
func CountMessages(c Counter, msgs []Message) int {
	n := 3
	for _, m := range msgs {
		n += 4 + c.Count(m.Content)
		for _, im := range m.Images {
			n += im.Tokens
		}
	}
	return n
}

// encodingFor returns the tiktoken (bpe) encoding for an OpenAI model name, or ""
// for other models.
func encodingFor(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	hasFamily := func(f string) bool { // "o1", "o1-mini", "o3-2025-…"
		return m == f || strings.HasPrefix(m, f+"-")
	}
	switch {
	case m == "gpt-4", strings.HasPrefix(m, "gpt-4-"),
		strings.HasPrefix(m, "gpt-3.5"), strings.HasPrefix(m, "gpt-35"): // Azure: gpt-35-turbo
		return "cl100k_base"
	case strings.HasPrefix(m, "gpt-"), strings.HasPrefix(m, "chatgpt-"),
		hasFamily("o1"), hasFamily("o3"), hasFamily("o4"):
		return "o200k_base"
	}
	return ""
}

var (
	countersMu sync.Mutex
	counters   = map[string]*tiktokenCounter{}
)

// sharedCounter builds (once per process) the counter for an encoding from
// the tables embedded in package bpe: nothing is ever downloaded. Counters
// for the same encoding share the encoding and the count cache.
func sharedCounter(encoding string) (*tiktokenCounter, error) {
	countersMu.Lock()
	defer countersMu.Unlock()
	if c, ok := counters[encoding]; ok {
		return c, nil
	}
	enc, err := bpe.Get(encoding)
	if err != nil {
		return nil, err
	}
	c := &tiktokenCounter{enc: enc, cache: newCountCache()}
	counters[encoding] = c
	return c, nil
}

// estimateCounter approximates tokens as ceil(runes/4).
type estimateCounter struct{}

func (estimateCounter) Count(text string) int {
	return (utf8.RuneCountInString(text) + 3) / 4
}

// tiktokenCounter counts exactly as tiktoken does, with a cache in front.
type tiktokenCounter struct {
	enc   *bpe.Encoding
	cache *countCache
}

func (t *tiktokenCounter) Count(text string) int {
	if text == "" {
		return 0
	}
	if n, ok := t.cache.get(text); ok {
		return n
	}
	n := t.enc.Count(text)
	t.cache.put(text, n)
	return n
}

// countCache remembers token counts of recently counted texts, because the
// same history messages are counted again on every turn. The
// regexp2-based pre-tokenizer costs roughly 0.5µs per character, a cache
// hit about 0.15µs per call whatever the length. Keys are 64-bit
// hashes plus the length, so memory stays small; two generations give a
// cheap approximation of LRU.
type countCache struct {
	seed maphash.Seed
	mu   sync.Mutex
	cur  map[cacheKey]int32
	old  map[cacheKey]int32
}

type cacheKey struct {
	h uint64
	n int
}

const (
	cacheGenerSize = 4096 // entries per generation
)

func newCountCache() *countCache {
	return &countCache{seed: maphash.MakeSeed(), cur: make(map[cacheKey]int32)}
}

func (c *countCache) key(s string) cacheKey {
	return cacheKey{h: maphash.String(c.seed, s), n: len(s)}
}

func (c *countCache) get(s string) (int, bool) {
	k := c.key(s)
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.cur[k]; ok {
		return int(n), true
	}
	if n, ok := c.old[k]; ok {
		c.putLocked(k, n)
		return int(n), true
	}
	return 0, false
}

func (c *countCache) put(s string, n int) {
	k := c.key(s)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, int32(n))
}

func (c *countCache) putLocked(k cacheKey, n int32) {
	if len(c.cur) >= cacheGenerSize {
		c.old, c.cur = c.cur, make(map[cacheKey]int32, cacheGenerSize)
	}
	c.cur[k] = n
}
