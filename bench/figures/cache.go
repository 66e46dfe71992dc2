package figures

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/recallbot/recall/memory"
)

// Fixtures are cached in os.TempDir()/<name>/recall.db beside schema.stamp,
// a hash of the name and memory's schema fingerprint: a database built by
// another generator version (bump the name) or other migrations is rebuilt.
// A database is built under a temporary name and renamed when complete, so an
// interrupted build is never used. Delete the folder to rebuild it.

// stamp identifies a fixture's content and schema.
func stamp(name string) (string, error) {
	h := sha256.New()
	h.Write([]byte(name))
	if err := memory.WriteSchemaFingerprint(h); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func removeDB(p string) {
	for _, s := range []string{"", "-wal", "-shm", "-journal"} {
		_ = os.Remove(p + s)
	}
}

// cachedDB returns the folder of the cached fixture name, calling build on a
// temporary path first when it is missing or stale. progress (nil: none)
// hears that a build starts and ends: what describes the fixture.
func cachedDB(ctx context.Context, name, what string, progress io.Writer, build func(ctx context.Context, path string) error) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	dir := filepath.Join(os.TempDir(), name)
	final := filepath.Join(dir, "recall.db")
	stampFile := filepath.Join(dir, "schema.stamp")
	want, err := stamp(name)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(final); err == nil {
		if got, _ := os.ReadFile(stampFile); string(got) == want {
			return dir, nil
		}
		fmt.Fprintf(progress, "the cached fixture %s was built with other migrations (or none recorded): rebuilding\n", dir)
		removeDB(final)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	stale, _ := filepath.Glob(filepath.Join(dir, "building-*"))
	for _, p := range stale { // interrupted builds
		_ = os.Remove(p)
	}
	tmp := filepath.Join(dir, fmt.Sprintf("building-%d.db", os.Getpid()))
	start := time.Now()
	fmt.Fprintf(progress, "building %s in %s (once; cached for later runs)\n", what, dir)
	if err := build(ctx, tmp); err != nil {
		removeDB(tmp)
		return "", fmt.Errorf("building %s: %w", what, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		removeDB(tmp)
		return "", err
	}
	removeDB(tmp) // leftovers (-wal, -shm) of the build name
	if err := os.WriteFile(stampFile, []byte(want), 0o600); err != nil {
		return "", err
	}
	fmt.Fprintf(progress, "built %s in %s\n", what, time.Since(start).Round(time.Second))
	return dir, nil
}

// copyFile copies a fixture database so a run can change it.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// mkdirTemp makes a fresh folder in dir (os.TempDir() when "").
func mkdirTemp(dir, pattern string) (string, error) { return os.MkdirTemp(dir, pattern) }

func removeAll(dir string) { _ = os.RemoveAll(dir) }
