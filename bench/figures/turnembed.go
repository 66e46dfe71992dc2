package figures

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/embed"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
)

// Embeddings in the turn figure: the turn fixture with every message
// embedded by a fake model (llmtest's deterministic vectors) at
// benchEmbedDims dimensions, served by llmtest's /v1/embeddings on
// 127.0.0.1 with no delay: what remains is the turn's own cost of hybrid
// retrieval (one HTTP round trip for the question, the index scan, the
// rescoring read, the fusion) and the background worker embedding the
// turn's new messages.
const (
	benchEmbedModel = "bench-embed"
	benchEmbedDims  = 256 // OpenAI's text-embedding-3-small asked for 256; nomic-embed-text has 768
)

// embeddedTurnFixture returns the path of the cached turn fixture whose
// messages are all embedded, building it from TurnFixture first.
func embeddedTurnFixture(ctx context.Context, archived int, progress io.Writer) (string, error) {
	src, err := TurnFixture(ctx, archived, progress)
	if err != nil {
		return "", err
	}
	name := turnFixtureName(archived) + fmt.Sprintf("-embed%d", benchEmbedDims)
	dir, err := cachedDB(ctx, name, "the turn fixture with embeddings ("+count(archived)+" archived messages)", progress,
		func(ctx context.Context, path string) error {
			if err := copyFile(src, path); err != nil {
				return err
			}
			srv := llmtest.Start(llmtest.Echo(""))
			defer srv.Close()
			s, err := memory.OpenSQLite(ctx, path)
			if err != nil {
				return err
			}
			defer s.Close()
			e, err := llm.NewEmbedder(llm.EmbedderOptions{BaseURL: srv.URL, Model: benchEmbedModel, Dimensions: benchEmbedDims})
			if err != nil {
				return err
			}
			_, err = embed.Reindex(ctx, s, nil, e, 512, nil)
			return err
		})
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "recall.db"), nil
}

// benchEmbeddings is memory.embeddings pointing at srv.
func benchEmbeddings(srv *llmtest.Server) config.Embeddings {
	e := config.Default().Memory.Embeddings
	e.Model, e.BaseURL, e.Dimensions = benchEmbedModel, srv.URL, benchEmbedDims
	return e
}

// HybridResult holds the turns of TurnOverheadHybrid: Base with full text
// only, Variant with hybrid retrieval.
type HybridResult struct {
	PairResult
	Vectors      int64    // messages embedded in the fixture
	FixtureBytes [2]int64 // the fixture's size without and with the vectors
}

// TurnOverheadHybrid measures the turn of TurnOverhead with hybrid
// retrieval on beside the same turn with full text only (turnPair), on
// copies of the embedded turn fixture: the variant's memory.embeddings
// points at a fake endpoint that answers at once (and its background
// worker embeds the new messages). Its first turn loads the index of the
// archive's vectors (PairResult.FirstVariant).
func TurnOverheadHybrid(ctx context.Context, o TurnOptions) (HybridResult, error) {
	var res HybridResult
	plain, err := TurnFixture(ctx, o.Archived, o.Progress)
	if err != nil {
		return res, err
	}
	src, err := embeddedTurnFixture(ctx, o.Archived, o.Progress)
	if err != nil {
		return res, err
	}
	res.FixtureBytes = [2]int64{fileSize(plain), fileSize(src)}
	srv := llmtest.Start(llmtest.Echo(""))
	defer srv.Close()
	res.PairResult, err = turnPair(ctx, o, src, [2]func(*rigConfig){nil, func(rc *rigConfig) { rc.embeddings = benchEmbeddings(srv) }}, func(_, hybrid *rig) error {
		return hybrid.store.SQLite().DB().QueryRowContext(ctx, `SELECT count(*) FROM message_embeddings`).Scan(&res.Vectors)
	})
	if err != nil {
		return res, err
	}
	if n := srv.EmbeddingCalls(); len(n) == 0 {
		return res, fmt.Errorf("the hybrid rig never called the embeddings endpoint")
	}
	return res, nil
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}
