package memory

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/recallbot/recall/pipeline"
)

// Embeddings of messages (migration 0005), for hybrid retrieval: the SQLite
// side of package embed. A vector is stored once per model and text hash;
// message_embeddings says which message has one. Messages of owners on the
// JSON backend are not in this database and have no vectors.

// EmbedText is a message waiting for its embedding.
type EmbedText struct {
	ID   int64
	Text string
}

// MessageVector is the embedding of one message by one model.
type MessageVector struct {
	Seq       int64 // order of storing (see VectorsSince)
	MessageID int64
	Model     string
	Hash      []byte
	Vec       []float32
}

const (
	// Roles embedded: what people and the bot said.
	sqlEmbedPending = `SELECT m.id, m.text FROM messages m
WHERE m.id > ?1 AND m.role IN ('user', 'assistant') AND m.text <> ''
  AND NOT EXISTS (SELECT 1 FROM message_embeddings e WHERE e.message_id = m.id AND e.model = ?2)
ORDER BY m.id LIMIT ?3`
	sqlEmbedPendingCount = `SELECT count(*) FROM messages m
WHERE m.role IN ('user', 'assistant') AND m.text <> ''
  AND NOT EXISTS (SELECT 1 FROM message_embeddings e WHERE e.message_id = m.id AND e.model = ?1)`
	sqlEmbedCached  = `SELECT hash, vec FROM embedding_vectors WHERE model = ?1 AND hash IN (SELECT unhex(value) FROM json_each(?2))`
	sqlEmbedMapping = `INSERT INTO message_embeddings (message_id, model, hash) SELECT ?1, ?2, ?3
WHERE EXISTS (SELECT 1 FROM messages WHERE id = ?1) ON CONFLICT (message_id, model) DO NOTHING`
	sqlEmbedVector = `INSERT INTO embedding_vectors (model, hash, vec) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING`
	// CROSS JOIN keeps SQLite on the seq range (only the rows added since)
	// rather than the conversation's every message.
	sqlEmbedSince = `SELECT e.seq, e.message_id, e.model, e.hash, v.vec FROM message_embeddings e
CROSS JOIN messages m ON m.id = e.message_id
CROSS JOIN embedding_vectors v ON v.model = e.model AND v.hash = e.hash
WHERE e.seq > ?2 AND m.conv = ?1 ORDER BY e.seq LIMIT ?3`
	// A first load goes through the conversation's messages, unsorted
	// (sorting 100,000 vectors spilled to a temporary file).
	sqlEmbedConv = `SELECT e.seq, e.message_id, e.model, e.hash, v.vec FROM messages m
CROSS JOIN message_embeddings e ON e.message_id = m.id
CROSS JOIN embedding_vectors v ON v.model = e.model AND v.hash = e.hash
WHERE m.conv = ?1`
	sqlMessagesOf     = `SELECT ` + msgColumns + ` FROM messages m WHERE m.id IN (SELECT value FROM json_each(?2)) AND +m.conv = ?1`
	sqlEmbedConvTotal = `SELECT count(*) FROM messages m WHERE m.conv = ?1 AND m.role IN ('user', 'assistant') AND m.text <> ''`
	sqlEmbedConvDone  = `SELECT count(*) FROM message_embeddings e JOIN messages m ON m.id = e.message_id WHERE m.conv = ?1 AND e.model = ?2`
	sqlEmbedDropOther = `DELETE FROM message_embeddings WHERE model <> ?1`
	sqlEmbedMaxSeq    = `SELECT coalesce(max(seq), 0) FROM message_embeddings`
)

// PendingEmbeddings returns up to limit messages after id after (of any
// conversation, by id) that have no embedding by model.
func (s *SQLite) PendingEmbeddings(ctx context.Context, model string, after int64, limit int) ([]EmbedText, error) {
	rows, err := s.r.QueryContext(ctx, sqlEmbedPending, after, model, limit)
	if err != nil {
		return nil, fmt.Errorf("finding messages to embed: %w", err)
	}
	defer rows.Close()
	out, err := scanEmbedTexts(rows)
	if err != nil {
		return nil, fmt.Errorf("finding messages to embed: %w", err)
	}
	return out, nil
}

// MaxMessageID is the id of the newest stored message (0: none).
func (s *SQLite) MaxMessageID(ctx context.Context) (int64, error) {
	var n int64
	if err := s.r.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM messages`).Scan(&n); err != nil {
		return 0, fmt.Errorf("reading the newest message id: %w", err)
	}
	return n, nil
}

// CountPendingEmbeddings counts the messages without an embedding by model.
func (s *SQLite) CountPendingEmbeddings(ctx context.Context, model string) (int64, error) {
	var n int64
	if err := s.r.QueryRowContext(ctx, sqlEmbedPendingCount, model).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting messages to embed: %w", err)
	}
	return n, nil
}

// CachedEmbeddings returns the stored vectors by model of the given text
// hashes, by hex of the hash.
func (s *SQLite) CachedEmbeddings(ctx context.Context, model string, hashes [][]byte) (map[string][]float32, error) {
	if len(hashes) == 0 {
		return nil, nil
	}
	hx := make([]string, len(hashes))
	for i, h := range hashes {
		hx[i] = strings.ToUpper(hex.EncodeToString(h))
	}
	list, _ := json.Marshal(hx)
	rows, err := s.r.QueryContext(ctx, sqlEmbedCached, model, string(list))
	if err != nil {
		return nil, fmt.Errorf("reading cached embeddings: %w", err)
	}
	defer rows.Close()
	out, err := scanCachedVectors(rows, len(hashes))
	if err != nil {
		return nil, fmt.Errorf("reading cached embeddings: %w", err)
	}
	return out, nil
}

// PutEmbeddings stores vectors of messages in one transaction; a message
// purged meanwhile is skipped, and so is its vector unless another message
// has the same text.
func (s *SQLite) PutEmbeddings(ctx context.Context, vs []MessageVector) error {
	if len(vs) == 0 {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("storing embeddings: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, v := range vs {
		res, err := tx.ExecContext(ctx, sqlEmbedMapping, v.MessageID, v.Model, v.Hash)
		if err != nil {
			return fmt.Errorf("storing the embedding of message %d: %w", v.MessageID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, sqlEmbedVector, v.Model, v.Hash, EncodeVector(v.Vec)); err != nil {
			return fmt.Errorf("storing the embedding of message %d: %w", v.MessageID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("storing embeddings: %w", err)
	}
	return nil
}

// VectorsSince returns the conversation's vectors (every model) stored
// after seq, oldest first, at most limit.
func (s *SQLite) VectorsSince(ctx context.Context, key pipeline.Key, seq int64, limit int) ([]MessageVector, error) {
	conv, err := convID(ctx, s.rd, key)
	if err != nil || conv == 0 {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, sqlEmbedSince, conv, seq, limit)
	if err != nil {
		return nil, fmt.Errorf("loading the vectors of %s: %w", key, err)
	}
	defer rows.Close()
	out, err := scanVectors(rows)
	if err != nil {
		return nil, fmt.Errorf("loading the vectors of %s: %w", key, err)
	}
	return out, nil
}

// ConversationVectors calls fn with each of the conversation's vectors
// (every model), in no particular order: a first load (VectorsSince goes
// on from LastVectorSeq, read before it). The vector passed to fn is
// reused: fn copies what it keeps.
func (s *SQLite) ConversationVectors(ctx context.Context, key pipeline.Key, fn func(MessageVector)) error {
	conv, err := convID(ctx, s.rd, key)
	if err != nil || conv == 0 {
		return err
	}
	rows, err := s.r.QueryContext(ctx, sqlEmbedConv, conv)
	if err != nil {
		return fmt.Errorf("loading the vectors of %s: %w", key, err)
	}
	defer rows.Close()
	if err := eachVector(rows, fn); err != nil {
		return fmt.Errorf("loading the vectors of %s: %w", key, err)
	}
	return nil
}

// LastVectorSeq is the seq of the newest stored embedding (0: none).
func (s *SQLite) LastVectorSeq(ctx context.Context) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, sqlEmbedMaxSeq).Scan(&n)
	return n, err
}

// MessagesOf returns the given messages of the conversation (in no
// particular order); ids of other conversations or of no message bring
// nothing.
func (s *SQLite) MessagesOf(ctx context.Context, key pipeline.Key, ids []int64) ([]Message, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	conv, err := convID(ctx, s.rd, key)
	if err != nil || conv == 0 {
		return nil, err
	}
	rows, err := s.rd.QueryContext(ctx, sqlMessagesOf, conv, jsonIDs(ids))
	if err != nil {
		return nil, fmt.Errorf("reading messages of %s: %w", key, err)
	}
	out, _, err := scanMessages(rows, key, false)
	if err != nil {
		return nil, fmt.Errorf("reading messages of %s: %w", key, err)
	}
	return out, nil
}

// EmbeddingCoverage counts the conversation's messages that are embedded
// by model, and those that can be (what people and the bot said).
func (s *SQLite) EmbeddingCoverage(ctx context.Context, key pipeline.Key, model string) (done, total int64, err error) {
	conv, err := convID(ctx, s.rd, key)
	if err != nil || conv == 0 {
		return 0, 0, err
	}
	if err := s.r.QueryRowContext(ctx, sqlEmbedConvTotal, conv).Scan(&total); err != nil {
		return 0, 0, fmt.Errorf("counting the messages of %s: %w", key, err)
	}
	if err := s.r.QueryRowContext(ctx, sqlEmbedConvDone, conv, model).Scan(&done); err != nil {
		return 0, 0, fmt.Errorf("counting the embedded messages of %s: %w", key, err)
	}
	return done, total, nil
}

// DropOtherEmbeddings deletes the embeddings of every model but model
// (after a change of model, once the new one covers the archive).
func (s *SQLite) DropOtherEmbeddings(ctx context.Context, model string) (int64, error) {
	res, err := s.w.ExecContext(ctx, sqlEmbedDropOther, model)
	if err != nil {
		return 0, fmt.Errorf("dropping the embeddings of other models: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// EncodeVector is v as stored: little-endian float32.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// DecodeVector reads a stored vector (a trailing partial value is dropped).
func DecodeVector(b []byte) []float32 { return decodeInto(nil, b) }

// decodeInto is DecodeVector into dst's memory when it is big enough.
func decodeInto(dst []float32, b []byte) []float32 {
	v := dst[:0]
	if cap(v) < len(b)/4 {
		v = make([]float32, len(b)/4)
	}
	v = v[:len(b)/4]
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
