package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/embed"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
)

// NewEmbedder returns the embeddings endpoint of memory.embeddings (its
// base URL and key, or the LLM's), nil when no model is set.
func NewEmbedder(cfg config.Config) (*llm.Embedder, error) {
	e := cfg.Memory.Embeddings
	if !e.Enabled() {
		return nil, nil
	}
	base, key := cfg.EmbeddingsEndpoint()
	emb, err := llm.NewEmbedder(llm.EmbedderOptions{BaseURL: base, APIKey: key, Model: e.Model, Dimensions: e.Dimensions})
	if err != nil {
		return nil, fmt.Errorf("memory.embeddings: %w", err)
	}
	return emb, nil
}

// buildEmbeddings makes the hybrid retrieval parts when memory.embeddings
// is set: the Searcher the assembler fuses with full text, and the worker
// that embeds new messages (started by Run, stopped by Close).
func (a *App) buildEmbeddings(store *memory.Store, waitForLoad bool) error {
	emb, err := NewEmbedder(a.Config)
	if err != nil || emb == nil {
		return err
	}
	e := a.Config.Memory.Embeddings
	loadWait := time.Duration(0) // the searcher's default: a turn waits 300 ms at most
	if waitForLoad {
		loadWait = time.Hour
	}
	// On SQLite the worker is the one writer of vectors while the bot
	// runs (bot reindex takes the data directory's lock): it tells the
	// searcher. On PostgreSQL every replica's worker writes: a search
	// looks for new vectors itself.
	notified := store.Postgres() == nil
	a.Vectors = embed.NewSearcher(store.Embeddings(), emb, embed.SearcherOptions{Timeout: e.Timeout, LoadWait: loadWait, JSON: store.JSON(), Notified: notified, Log: a.Log})
	a.Embedding = embed.NewWorker(store.Embeddings(), emb, embed.WorkerOptions{Batch: e.Batch, JSON: store.JSON(), Stored: a.Vectors.Stored, Log: a.Log})
	return nil
}

// closeEmbeddings stops the embeddings worker (what it had not embedded is
// embedded at the next start).
func (a *App) closeEmbeddings(ctx context.Context) error {
	if a.Embedding == nil {
		return nil
	}
	return errors.Join(a.Embedding.Close(ctx), a.Vectors.Close(ctx))
}
