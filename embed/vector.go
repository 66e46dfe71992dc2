package embed

import (
	"context"
	"crypto/sha256"
	"math"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// Store is what embed reads and writes: the database's embeddings
// (memory.Store.Embeddings: *memory.SQLite, or *memory.Postgres).
type Store interface {
	PendingEmbeddings(ctx context.Context, model string, after int64, limit int) ([]memory.EmbedText, error)
	CountPendingEmbeddings(ctx context.Context, model string) (int64, error)
	MaxMessageID(ctx context.Context) (int64, error)
	CachedEmbeddings(ctx context.Context, model string, hashes [][]byte) (map[string][]float32, error)
	PutEmbeddings(ctx context.Context, vs []memory.MessageVector) error
	VectorsSince(ctx context.Context, key pipeline.Key, seq int64, limit int) ([]memory.MessageVector, error)
	ConversationVectors(ctx context.Context, key pipeline.Key, fn func(memory.MessageVector)) error
	LastVectorSeq(ctx context.Context) (int64, error)
	MessagesOf(ctx context.Context, key pipeline.Key, ids []int64) ([]memory.Message, error)
	EmbeddingCoverage(ctx context.Context, key pipeline.Key, model string) (done, total int64, err error)
	DropOtherEmbeddings(ctx context.Context, model string) (int64, error)
}

var (
	_ Store = (*memory.SQLite)(nil)
	_ Store = (*memory.Postgres)(nil)
)

// Model is the embeddings endpoint (*llm.Embedder).
type Model interface {
	// Model is the configured model.
	Model() string
	// Embed returns one vector per text by model ("" = the configured one).
	Embed(ctx context.Context, model string, texts []string) ([][]float32, error)
}

// maxRunes cuts a message before it is embedded: embedding models read a
// few thousand tokens at most, and a long message's start says what it is
// about.
const maxRunes = 6000

// Hash is the key of a text's vector: the first 16 bytes of its SHA-256.
func Hash(text string) []byte {
	h := sha256.Sum256([]byte(text))
	return h[:16]
}

// clip is text as it is sent to be embedded.
func clip(text string) string {
	if len(text) <= maxRunes {
		return text
	}
	r := []rune(text)
	if len(r) <= maxRunes {
		return text
	}
	return string(r[:maxRunes])
}

// normalize scales v to unit length in place (a zero vector stays zero).
func normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return v
	}
	s := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= s
	}
	return v
}

// dot is the dot product of two vectors (cosine for unit vectors); a
// shorter b counts as zeros.
func dot(a, b []float32) float32 {
	if len(b) < len(a) {
		a = a[:len(b)]
	}
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}
