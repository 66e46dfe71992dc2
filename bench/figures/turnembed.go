package figures

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/recallbot/recall/bench/chattext"
	"github.com/recallbot/recall/chat"

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

// HybridResult holds the turns of TurnOverheadHybrid.
type HybridResult struct {
	FullText, Hybrid       []time.Duration // the big conversation's chain, per turn
	FullTextAsm, HybridAsm []time.Duration // its assembly
	FullTextCPU, HybridCPU []time.Duration // process CPU time during each turn
	FirstHybrid            time.Duration   // the first hybrid turn: the index of the archive's vectors is loaded
	Vectors                int64           // messages embedded in the fixture
	FixtureBytes           [2]int64        // the fixture's size without and with the vectors
}

// TurnOverheadHybrid measures the turn of TurnOverhead with hybrid
// retrieval on beside the same turn with full text only: two rigs on two
// copies of the embedded turn fixture, one with memory.embeddings pointing
// at a fake endpoint that answers at once (and its background worker
// embedding the new messages), one without; turns alternate between them,
// the same messages in the same order, so both see the same machine noise.
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
	g := chattext.NewWords(11)
	var rigs [2]*rig
	var lat [2]*latencies
	for i := range rigs {
		dir, err := mkdirTemp(o.TempDir, "recall-turn-hybrid-")
		if err != nil {
			return res, err
		}
		defer removeAll(dir)
		if err := copyFile(src, filepath.Join(dir, "recall.db")); err != nil {
			return res, err
		}
		lat[i] = &latencies{}
		rc := rigConfig{
			dir: dir, bgSummary: true, allowed: []string{"telegram:" + turnUser},
			model:   &fakeModel{replies: g.Pool(64, 12, 80, turnPeople), summaries: g.Pool(16, 60, 110, turnPeople)},
			wrapAsm: func(a chat.Assembler) chat.Assembler { return &timedAssembler{Assembler: a, lat: lat[i]} },
		}
		if i == 1 {
			rc.embeddings = benchEmbeddings(srv)
		}
		r, err := newRig(ctx, rc)
		if err != nil {
			return res, err
		}
		defer r.close()
		rigs[i] = r
	}
	if err := rigs[1].store.SQLite().DB().QueryRowContext(ctx, `SELECT count(*) FROM message_embeddings`).Scan(&res.Vectors); err != nil {
		return res, err
	}
	drivers := [2]*convDriver{}
	for i := range drivers {
		drivers[i] = &convDriver{key: turnKey, user: turnUser, name: turnName, people: turnPeople, g: chattext.NewWords(21)}
	}
	for w := range o.Warmup {
		for i := range rigs {
			took, _, err := drivers[i].turn(ctx, rigs[i].handler)
			if err != nil {
				return res, err
			}
			if i == 1 && w == 0 {
				res.FirstHybrid = took
			}
		}
	}
	for i := range lat {
		lat[i].reset()
	}
	for range o.Turns {
		t, c, err := drivers[0].turn(ctx, rigs[0].handler)
		if err != nil {
			return res, err
		}
		res.FullText, res.FullTextCPU = append(res.FullText, t), append(res.FullTextCPU, c)
		t, c, err = drivers[1].turn(ctx, rigs[1].handler)
		if err != nil {
			return res, err
		}
		res.Hybrid, res.HybridCPU = append(res.Hybrid, t), append(res.HybridCPU, c)
	}
	res.FullTextAsm, res.HybridAsm = lat[0].of(turnKey), lat[1].of(turnKey)
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
