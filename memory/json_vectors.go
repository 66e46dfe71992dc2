package memory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/recallbot/recall/pipeline"
)

// Embeddings of JSON owners' messages (memory.embeddings) live beside the
// owner's file, in JSONFileName(owner)+".vectors" (0600):
//
//	{"format": "recall-vectors", "version": 1,
//	 "items": [{"conv": "telegram:1:", "id": 42, "model": "…", "hash": "hex", "vec": "base64 of little-endian float32"}]}
//
// The file holds only vectors of messages the owner's file holds, with the
// same text: whenever a change of the owner's file removes messages (a
// purge, retention, a move to SQLite), the vectors file is rewritten
// without theirs in the same update, or removed with the owner's file.

// TextHash is the key of a text's vector: the first 16 bytes of its SHA-256.
func TextHash(text string) []byte {
	h := sha256.Sum256([]byte(text))
	return h[:16]
}

// JSONVector is one embedded message of a JSON owner.
type JSONVector struct {
	Conv  string // the conversation key
	ID    int64  // the message id in the owner's file
	Model string
	Hash  []byte
	Vec   []float32
}

type jsonVectorItem struct {
	Conv  string `json:"conv"`
	ID    int64  `json:"id"`
	Model string `json:"model"`
	Hash  string `json:"hash"`
	Vec   string `json:"vec"`
}

type jsonVectorsFile struct {
	Format  string           `json:"format"`
	Version int              `json:"version"`
	Items   []jsonVectorItem `json:"items"`
}

const jsonVectorsFormat = "recall-vectors"

// VectorsPath is the file of the owner's vectors.
func (j *JSON) VectorsPath(owner string) string { return j.Path(owner) + ".vectors" }

// VectorsVersion counts the writes of the owner's vectors file by this
// process (0: none yet): a reader that loaded them at version v reads them
// again when the version is past v.
func (j *JSON) VectorsVersion(owner string) int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.vecVersion[owner]
}

// Vectors returns the owner's stored vectors (none without a file).
func (j *JSON) Vectors(ctx context.Context, owner string) ([]JSONVector, error) {
	if err := j.check(ctx); err != nil {
		return nil, err
	}
	o := j.entry(owner)
	defer j.release(o)
	o.mu.RLock()
	defer o.mu.RUnlock()
	return j.readVectors(owner)
}

// PutVectors adds vectors to the owner's file, dropping those of other
// models when dropOthers, and keeping only vectors of messages the owner
// still has with the same text (a message purged meanwhile gets none).
func (j *JSON) PutVectors(ctx context.Context, owner string, add []JSONVector, dropOthers string) error {
	if err := j.check(ctx); err != nil {
		return err
	}
	o := j.entry(owner)
	defer j.release(o)
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := j.loadLocked(owner, o); err != nil {
		return err
	}
	have, err := j.readVectors(owner)
	if err != nil {
		return err
	}
	type k struct {
		conv  string
		id    int64
		model string
	}
	byKey := map[k]int{}
	for i, v := range have {
		byKey[k{v.Conv, v.ID, v.Model}] = i
	}
	for _, v := range add {
		if i, ok := byKey[k{v.Conv, v.ID, v.Model}]; ok {
			have[i] = v
			continue
		}
		byKey[k{v.Conv, v.ID, v.Model}] = len(have)
		have = append(have, v)
	}
	if dropOthers != "" {
		kept := have[:0]
		for _, v := range have {
			if v.Model == dropOthers {
				kept = append(kept, v)
			}
		}
		have = kept
	}
	return j.writeVectors(owner, keepCurrent(have, o.f))
}

// pruneVectorsLocked rewrites the owner's vectors file after a change of
// its messages (o.mu held): only the vectors of messages f still holds
// stay; no message left, no file.
func (j *JSON) pruneVectorsLocked(owner string, f *jsonFile) error {
	have, err := j.readVectors(owner)
	if err != nil || len(have) == 0 {
		return err
	}
	kept := keepCurrent(have, f)
	if len(kept) == len(have) {
		return nil
	}
	return j.writeVectors(owner, kept)
}

// keepCurrent keeps the vectors whose message f holds with the same text.
func keepCurrent(vs []JSONVector, f *jsonFile) []JSONVector {
	type k struct {
		conv string
		id   int64
	}
	texts := map[k]string{}
	for _, c := range f.Data.Conversations {
		for _, m := range c.Messages {
			texts[k{c.Key, m.ID}] = m.Text
		}
	}
	var out []JSONVector
	for _, v := range vs {
		if t, ok := texts[k{v.Conv, v.ID}]; ok && bytes.Equal(TextHash(t), v.Hash) {
			out = append(out, v)
		}
	}
	return out
}

func (j *JSON) readVectors(owner string) ([]JSONVector, error) {
	path := j.VectorsPath(owner)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var f jsonVectorsFile
	if err := json.Unmarshal(b, &f); err != nil || f.Format != jsonVectorsFormat {
		// Derived data: a damaged file is embedded again.
		return nil, nil
	}
	out := make([]JSONVector, 0, len(f.Items))
	for _, it := range f.Items {
		h, err1 := hex.DecodeString(it.Hash)
		raw, err2 := base64.StdEncoding.DecodeString(it.Vec)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, JSONVector{Conv: it.Conv, ID: it.ID, Model: it.Model, Hash: h, Vec: DecodeVector(raw)})
	}
	return out, nil
}

// writeVectors replaces the owner's vectors file (write, fsync, rename),
// or removes it when vs is empty.
func (j *JSON) writeVectors(owner string, vs []JSONVector) error {
	path := j.VectorsPath(owner)
	j.mu.Lock()
	j.vecVersion[owner]++
	j.mu.Unlock()
	if len(vs) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", path, err)
		}
		return nil
	}
	f := jsonVectorsFile{Format: jsonVectorsFormat, Version: 1, Items: make([]jsonVectorItem, len(vs))}
	for i, v := range vs {
		f.Items[i] = jsonVectorItem{Conv: v.Conv, ID: v.ID, Model: v.Model, Hash: hex.EncodeToString(v.Hash), Vec: base64.StdEncoding.EncodeToString(EncodeVector(v.Vec))}
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	tmp := filepath.Join(j.dir, "."+filepath.Base(path)+".tmp")
	fh, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, err = fh.Write(b)
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return j.syncDir()
}

// JSONOwnerMessages returns the messages of every conversation of a JSON
// owner that can be embedded (what people and the bot said), with their
// keys.
func (j *JSON) EmbeddableMessages(ctx context.Context, owner string) ([]Message, error) {
	f, _, err := j.snapshot(ctx, owner)
	if err != nil {
		return nil, err
	}
	var out []Message
	for _, c := range f.Data.Conversations {
		key, err := pipeline.ParseKey(c.Key)
		if err != nil {
			continue
		}
		for _, m := range c.Messages {
			if (m.Role == RoleUser || m.Role == RoleAssistant) && m.Text != "" {
				m.Key = key
				out = append(out, m)
			}
		}
	}
	return out, nil
}
