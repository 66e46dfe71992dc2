package media

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// Kept owns the photos kept on disk (media.keep_images): under its
// directory (data/media), one directory per owner and one per
// conversation, one file per photo named by when it came and its platform
// id — files 0600, directories 0700. A /purge removes what its scope
// covers.
type Kept struct{ dir string }

// NewKept keeps photos under dir.
func NewKept(dir string) *Kept { return &Kept{dir: dir} }

// Dir is where photos are kept.
func (k *Kept) Dir() string { return k.dir }

// dirName is a name made safe for a path (memory.JSONFileName's rule).
func dirName(s string) string { return strings.TrimSuffix(memory.JSONFileName(s), ".json") }

func (k *Kept) ownerDir(owner string) string { return filepath.Join(k.dir, dirName(owner)) }

func (k *Kept) convDir(key pipeline.Key) string {
	return filepath.Join(k.ownerDir(key.Owner()), dirName(key.String()))
}

// Save writes a photo's bytes (written whole or not at all) and returns
// its path.
func (k *Kept) Save(key pipeline.Key, at time.Time, platformID string, data []byte) (string, error) {
	dir := k.convDir(key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("keeping a photo: %w", err)
	}
	ext := ".jpg"
	switch http.DetectContentType(data) {
	case "image/png":
		ext = ".png"
	case "image/gif":
		ext = ".gif"
	case "image/webp":
		ext = ".webp"
	}
	name := filepath.Join(dir, strconv.FormatInt(at.UnixMilli(), 10)+"-"+dirName(platformID)+ext)
	tmp, err := os.CreateTemp(dir, ".photo-*")
	if err != nil {
		return "", fmt.Errorf("keeping a photo: %w", err)
	}
	_, werr := tmp.Write(data)
	if err := tmp.Sync(); werr == nil {
		werr = err
	}
	if err := tmp.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), name) // CreateTemp made it 0600
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("keeping a photo: %w", werr)
	}
	return name, nil
}

// Purge removes the kept photos a purge's scope covers: the owner's, one
// conversation's, or those that came before scope.OlderThan. It returns
// how many files it removed.
func (k *Kept) Purge(scope memory.PurgeScope) (int, error) {
	root := k.ownerDir(scope.Owner)
	if scope.Key != (pipeline.Key{}) {
		root = k.convDir(scope.Key)
	}
	if _, err := os.Stat(root); os.IsNotExist(err) {
		return 0, nil
	}
	if scope.OlderThan.IsZero() {
		n := 0
		_ = filepath.WalkDir(root, func(_ string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return nil
		})
		if err := os.RemoveAll(root); err != nil {
			return 0, fmt.Errorf("removing kept photos: %w", err)
		}
		return n, nil
	}
	return k.purgeOlderIn(root, scope.OlderThan)
}

// purgeOlderIn removes the photos under root that came before t.
func (k *Kept) purgeOlderIn(root string, t time.Time) (int, error) {
	cut := t.UnixMilli()
	n := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ms, _, ok := strings.Cut(d.Name(), "-")
		if at, perr := strconv.ParseInt(ms, 10, 64); !ok || perr != nil || at >= cut {
			return nil
		}
		if err := os.Remove(path); err != nil {
			return err
		}
		n++
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("removing kept photos: %w", err)
	}
	return n, nil
}

// PurgeOlder removes every owner's kept photos that came before t
// (memory.retention_days).
func (k *Kept) PurgeOlder(t time.Time) (int, error) {
	owners, err := os.ReadDir(k.dir)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("listing kept photos: %w", err)
	}
	n := 0
	for _, o := range owners {
		if !o.IsDir() {
			continue
		}
		m, err := k.purgeOlderIn(filepath.Join(k.dir, o.Name()), t)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// keep writes a photo's bytes when photos are kept (Options.Keep); a
// failure is logged and the turn goes on.
func (s *Stage) keep(t *pipeline.Turn, data []byte) {
	if s.opts.Keep == nil || t.In.MessageID == "" {
		return
	}
	at := t.In.Time
	if at.IsZero() {
		at = time.Now()
	}
	if _, err := s.opts.Keep.Save(t.In.Key, at, t.In.MessageID, data); err != nil {
		t.Logger().Warn("keeping a photo on disk", "err", err)
	}
}
