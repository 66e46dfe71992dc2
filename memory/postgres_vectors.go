package memory

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/recallbot/recall/pipeline"
)

// Embeddings of messages on PostgreSQL (migration 0009): the same store API
// as SQLite's (sqlite_vectors.go), for package embed. A vector is stored
// once per model and text hash; message_embeddings says which message has
// one, and goes with the message (a foreign key that cascades).

const (
	pgEmbedPending = `SELECT m.id, m.text FROM messages m
WHERE m.id > $1 AND m.role IN ('user', 'assistant') AND m.text <> ''
  AND NOT EXISTS (SELECT 1 FROM message_embeddings e WHERE e.message_id = m.id AND e.model = $2)
ORDER BY m.id LIMIT $3`
	pgEmbedPendingCount = `SELECT count(*) FROM messages m
WHERE m.role IN ('user', 'assistant') AND m.text <> ''
  AND NOT EXISTS (SELECT 1 FROM message_embeddings e WHERE e.message_id = m.id AND e.model = $1)`
	pgEmbedCached = `SELECT hash, vec FROM embedding_vectors WHERE model = $1 AND hash = ANY($2::bytea[])`
	// The vector is stored only when the mapping was: not for a message
	// purged meanwhile (nor one embedded already).
	pgEmbedPut = `WITH mapped AS (
    INSERT INTO message_embeddings (message_id, model, hash) SELECT $1, $2, $3
    WHERE EXISTS (SELECT 1 FROM messages WHERE id = $1) ON CONFLICT (message_id, model) DO NOTHING RETURNING 1)
INSERT INTO embedding_vectors (model, hash, vec) SELECT $2, $3, $4 WHERE EXISTS (SELECT 1 FROM mapped) ON CONFLICT DO NOTHING`
	pgEmbedSince = `SELECT e.seq, e.message_id, e.model, e.hash, v.vec FROM message_embeddings e
JOIN messages m ON m.id = e.message_id
JOIN embedding_vectors v ON v.model = e.model AND v.hash = e.hash
WHERE e.seq > $2 AND m.conv = $1 ORDER BY e.seq LIMIT $3`
	pgEmbedConv = `SELECT e.seq, e.message_id, e.model, e.hash, v.vec FROM messages m
JOIN message_embeddings e ON e.message_id = m.id
JOIN embedding_vectors v ON v.model = e.model AND v.hash = e.hash
WHERE m.conv = $1`
	pgMessagesOf     = `SELECT ` + pgMsgColumns + ` FROM messages m WHERE m.conv = $1 AND m.id = ANY($2)`
	pgEmbedConvTotal = `SELECT count(*) FROM messages m WHERE m.conv = $1 AND m.role IN ('user', 'assistant') AND m.text <> ''`
	pgEmbedConvDone  = `SELECT count(*) FROM message_embeddings e JOIN messages m ON m.id = e.message_id WHERE m.conv = $1 AND e.model = $2`
)

// PendingEmbeddings returns up to limit messages after id after (of any
// conversation, by id) that have no embedding by model.
func (p *Postgres) PendingEmbeddings(ctx context.Context, model string, after int64, limit int) ([]EmbedText, error) {
	rows, err := p.pool.Query(ctx, pgEmbedPending, after, model, limit)
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
func (p *Postgres) MaxMessageID(ctx context.Context) (int64, error) {
	var n int64
	if err := p.pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM messages`).Scan(&n); err != nil {
		return 0, fmt.Errorf("reading the newest message id: %w", err)
	}
	return n, nil
}

// CountPendingEmbeddings counts the messages without an embedding by model.
func (p *Postgres) CountPendingEmbeddings(ctx context.Context, model string) (int64, error) {
	var n int64
	if err := p.pool.QueryRow(ctx, pgEmbedPendingCount, model).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting messages to embed: %w", err)
	}
	return n, nil
}

// CachedEmbeddings returns the stored vectors by model of the given text
// hashes, by hex of the hash.
func (p *Postgres) CachedEmbeddings(ctx context.Context, model string, hashes [][]byte) (map[string][]float32, error) {
	if len(hashes) == 0 {
		return nil, nil
	}
	rows, err := p.pool.Query(ctx, pgEmbedCached, model, hashes)
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
func (p *Postgres) PutEmbeddings(ctx context.Context, vs []MessageVector) error {
	if len(vs) == 0 {
		return nil
	}
	err := p.tx(ctx, func(tx pgx.Tx) error {
		// One writer at a time over every replica: the seqs are then
		// handed out in the order the batches commit, so a reader that
		// has seen a seq has seen every smaller one (VectorsSince).
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('recall-embeddings', 0))`); err != nil {
			return err
		}
		b := &pgx.Batch{}
		for _, v := range vs {
			b.Queue(pgEmbedPut, v.MessageID, v.Model, v.Hash, EncodeVector(v.Vec))
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("storing embeddings: %w", err)
	}
	return nil
}

// VectorsSince returns the conversation's vectors (every model) stored
// after seq, oldest first, at most limit.
func (p *Postgres) VectorsSince(ctx context.Context, key pipeline.Key, seq int64, limit int) ([]MessageVector, error) {
	conv, err := pgConv(ctx, p.pool, key)
	if err != nil || conv == 0 {
		return nil, err
	}
	rows, err := p.pool.Query(ctx, pgEmbedSince, conv, seq, limit)
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
// (every model), in no particular order (see SQLite.ConversationVectors).
// The vector passed to fn is reused: fn copies what it keeps.
func (p *Postgres) ConversationVectors(ctx context.Context, key pipeline.Key, fn func(MessageVector)) error {
	conv, err := pgConv(ctx, p.pool, key)
	if err != nil || conv == 0 {
		return err
	}
	rows, err := p.pool.Query(ctx, pgEmbedConv, conv)
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
func (p *Postgres) LastVectorSeq(ctx context.Context) (int64, error) {
	var n int64
	err := p.pool.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM message_embeddings`).Scan(&n)
	return n, err
}

// MessagesOf returns the given messages of the conversation (in no
// particular order); ids of other conversations or of no message bring
// nothing.
func (p *Postgres) MessagesOf(ctx context.Context, key pipeline.Key, ids []int64) ([]Message, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	conv, err := pgConv(ctx, p.pool, key)
	if err != nil || conv == 0 {
		return nil, err
	}
	rows, err := p.pool.Query(ctx, pgMessagesOf, conv, ids)
	if err != nil {
		return nil, fmt.Errorf("reading messages of %s: %w", key, err)
	}
	out, err := pgScanMessages(rows, key)
	if err != nil {
		return nil, fmt.Errorf("reading messages of %s: %w", key, err)
	}
	return out, nil
}

// EmbeddingCoverage counts the conversation's messages that are embedded
// by model, and those that can be (what people and the bot said).
func (p *Postgres) EmbeddingCoverage(ctx context.Context, key pipeline.Key, model string) (done, total int64, err error) {
	conv, err := pgConv(ctx, p.pool, key)
	if err != nil || conv == 0 {
		return 0, 0, err
	}
	if err := p.pool.QueryRow(ctx, pgEmbedConvTotal, conv).Scan(&total); err != nil {
		return 0, 0, fmt.Errorf("counting the messages of %s: %w", key, err)
	}
	if err := p.pool.QueryRow(ctx, pgEmbedConvDone, conv, model).Scan(&done); err != nil {
		return 0, 0, fmt.Errorf("counting the embedded messages of %s: %w", key, err)
	}
	return done, total, nil
}

// DropOtherEmbeddings deletes the embeddings of every model but model
// (after a change of model, once the new one covers the archive).
func (p *Postgres) DropOtherEmbeddings(ctx context.Context, model string) (int64, error) {
	tag, err := p.pool.Exec(ctx, `DELETE FROM message_embeddings WHERE model <> $1`, model)
	if err != nil {
		return 0, fmt.Errorf("dropping the embeddings of other models: %w", err)
	}
	return tag.RowsAffected(), nil
}

// EmbeddingStore is the database's side of the embeddings (package embed's
// Store): *SQLite, or *Postgres with database.url.
type EmbeddingStore interface {
	PendingEmbeddings(ctx context.Context, model string, after int64, limit int) ([]EmbedText, error)
	CountPendingEmbeddings(ctx context.Context, model string) (int64, error)
	MaxMessageID(ctx context.Context) (int64, error)
	CachedEmbeddings(ctx context.Context, model string, hashes [][]byte) (map[string][]float32, error)
	PutEmbeddings(ctx context.Context, vs []MessageVector) error
	VectorsSince(ctx context.Context, key pipeline.Key, seq int64, limit int) ([]MessageVector, error)
	ConversationVectors(ctx context.Context, key pipeline.Key, fn func(MessageVector)) error
	LastVectorSeq(ctx context.Context) (int64, error)
	MessagesOf(ctx context.Context, key pipeline.Key, ids []int64) ([]Message, error)
	EmbeddingCoverage(ctx context.Context, key pipeline.Key, model string) (done, total int64, err error)
	DropOtherEmbeddings(ctx context.Context, model string) (int64, error)
}

var (
	_ EmbeddingStore = (*SQLite)(nil)
	_ EmbeddingStore = (*Postgres)(nil)
)
