package embed

import (
	"context"
	"encoding/hex"
	"os"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// JSONStore is where the vectors of JSON owners' messages live, beside
// their files (*memory.JSON).
type JSONStore interface {
	Has(owner string) bool
	Owners(ctx context.Context) ([]string, error)
	Path(owner string) string
	EmbeddableMessages(ctx context.Context, owner string) ([]memory.Message, error)
	Vectors(ctx context.Context, owner string) ([]memory.JSONVector, error)
	PutVectors(ctx context.Context, owner string, add []memory.JSONVector, dropOthers string) error
	VectorsVersion(owner string) int64
	Around(ctx context.Context, key pipeline.Key, ids []int64) ([]memory.Message, error)
}

var _ JSONStore = (*memory.JSON)(nil)

// source is where a conversation's vectors are read from: the database,
// or the files of a JSON owner.
type source interface {
	LastVectorSeq(ctx context.Context, key pipeline.Key) (int64, error)
	VectorsSince(ctx context.Context, key pipeline.Key, seq int64, limit int) ([]memory.MessageVector, error)
	ConversationVectors(ctx context.Context, key pipeline.Key, fn func(memory.MessageVector)) error
	MessagesOf(ctx context.Context, key pipeline.Key, ids []int64) ([]memory.Message, error)
	EmbeddingCoverage(ctx context.Context, key pipeline.Key, model string) (done, total int64, err error)
}

// dbSource is the database's side.
type dbSource struct{ Store }

func (d dbSource) LastVectorSeq(ctx context.Context, _ pipeline.Key) (int64, error) {
	return d.Store.LastVectorSeq(ctx)
}

// jsonSource is a JSON owner's side: its vectors file is read again
// whenever it was written since (its version).
type jsonSource struct{ j JSONStore }

func (s jsonSource) LastVectorSeq(_ context.Context, key pipeline.Key) (int64, error) {
	return s.j.VectorsVersion(key.Owner()), nil
}

func (s jsonSource) VectorsSince(ctx context.Context, key pipeline.Key, seq int64, _ int) ([]memory.MessageVector, error) {
	v := s.j.VectorsVersion(key.Owner())
	if v <= seq {
		return nil, nil
	}
	var out []memory.MessageVector
	err := s.ConversationVectors(ctx, key, func(m memory.MessageVector) {
		m.Seq = v
		out = append(out, m)
	})
	return out, err
}

func (s jsonSource) ConversationVectors(ctx context.Context, key pipeline.Key, fn func(memory.MessageVector)) error {
	vs, err := s.j.Vectors(ctx, key.Owner())
	if err != nil {
		return err
	}
	conv := key.String()
	for _, v := range vs {
		if v.Conv == conv {
			fn(memory.MessageVector{MessageID: v.ID, Model: v.Model, Hash: v.Hash, Vec: v.Vec})
		}
	}
	return nil
}

func (s jsonSource) MessagesOf(ctx context.Context, key pipeline.Key, ids []int64) ([]memory.Message, error) {
	around, err := s.j.Around(ctx, key, ids)
	if err != nil {
		return nil, err
	}
	want := make(map[int64]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	out := around[:0]
	for _, m := range around {
		if want[m.ID] {
			out = append(out, m)
		}
	}
	return out, nil
}

func (s jsonSource) EmbeddingCoverage(ctx context.Context, key pipeline.Key, model string) (done, total int64, err error) {
	msgs, err := s.j.EmbeddableMessages(ctx, key.Owner())
	if err != nil {
		return 0, 0, err
	}
	vs, err := s.j.Vectors(ctx, key.Owner())
	if err != nil {
		return 0, 0, err
	}
	have := map[int64]bool{}
	conv := key.String()
	for _, v := range vs {
		if v.Conv == conv && v.Model == model {
			have[v.ID] = true
		}
	}
	for _, m := range msgs {
		if m.Key == key {
			total++
			if have[m.ID] {
				done++
			}
		}
	}
	return done, total, nil
}

// jsonPending is what a JSON owner has to embed by model: its messages
// without a vector of their text, and the vectors it has by text hash.
func jsonPending(ctx context.Context, j JSONStore, owner, model string) (todo []memory.Message, byHash map[string][]float32, others bool, err error) {
	msgs, err := j.EmbeddableMessages(ctx, owner)
	if err != nil {
		return nil, nil, false, err
	}
	vs, err := j.Vectors(ctx, owner)
	if err != nil {
		return nil, nil, false, err
	}
	type k struct {
		conv string
		id   int64
	}
	done := map[k]string{}
	byHash = map[string][]float32{}
	for _, v := range vs {
		if v.Model != model {
			others = true
			continue
		}
		h := hex.EncodeToString(v.Hash)
		done[k{v.Conv, v.ID}] = h
		byHash[h] = v.Vec
	}
	for _, m := range msgs {
		if h, ok := done[k{m.Key.String(), m.ID}]; !ok || h != hex.EncodeToString(Hash(m.Text)) {
			todo = append(todo, m)
		}
	}
	return todo, byHash, others, nil
}

// jsonState is what the worker saw of an owner's file at its last pass.
type jsonState struct {
	size int64
	mod  time.Time
}

// jsonPass embeds what the JSON owners have not embedded by the configured
// model yet, owner by owner (an owner whose file did not change since the
// last pass is skipped), batch by batch; once an owner is embedded by it,
// the vectors of earlier models go. progress hears the messages handled.
func (w *Worker) jsonPass(ctx context.Context, seen map[string]jsonState, progress func(n int)) (embedded int, err error) {
	j := w.opts.JSON
	if j == nil {
		return 0, nil
	}
	owners, err := j.Owners(ctx)
	if err != nil {
		return 0, err
	}
	model := w.model.Model()
	for _, owner := range owners {
		var st jsonState
		if fi, err := os.Stat(j.Path(owner)); err == nil {
			st = jsonState{fi.Size(), fi.ModTime()}
			if seen != nil && seen[owner] == st {
				continue
			}
		}
		todo, byHash, others, err := jsonPending(ctx, j, owner, model)
		if err != nil {
			return embedded, err
		}
		for len(todo) > 0 {
			batch := todo[:min(len(todo), w.opts.Batch)]
			todo = todo[len(batch):]
			var texts, keys []string
			for _, m := range batch {
				h := hex.EncodeToString(Hash(m.Text))
				if _, ok := byHash[h]; ok || contains(keys, h) {
					continue
				}
				texts = append(texts, clip(m.Text))
				keys = append(keys, h)
			}
			vecs, err := w.embed(ctx, model, texts)
			if err != nil {
				return embedded, err
			}
			for i, k := range keys {
				byHash[k] = normalize(vecs[i])
			}
			add := make([]memory.JSONVector, len(batch))
			for i, m := range batch {
				h := Hash(m.Text)
				add[i] = memory.JSONVector{Conv: m.Key.String(), ID: m.ID, Model: model, Hash: h, Vec: byHash[hex.EncodeToString(h)]}
			}
			if err := j.PutVectors(ctx, owner, add, ""); err != nil {
				return embedded, err
			}
			embedded += len(texts)
			if progress != nil {
				progress(len(batch))
			}
			if w.opts.Stored != nil {
				w.opts.Stored(len(batch))
			}
		}
		if others {
			if err := j.PutVectors(ctx, owner, nil, model); err != nil {
				return embedded, err
			}
		}
		if seen != nil {
			seen[owner] = st
		}
	}
	return embedded, nil
}

// jsonPendingCount counts the JSON owners' messages to embed by model.
func jsonPendingCount(ctx context.Context, j JSONStore, model string) (int64, error) {
	if j == nil {
		return 0, nil
	}
	owners, err := j.Owners(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, owner := range owners {
		todo, _, _, err := jsonPending(ctx, j, owner, model)
		if err != nil {
			return 0, err
		}
		n += int64(len(todo))
	}
	return n, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
