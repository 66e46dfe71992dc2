package memory

import (
	"context"
	"path/filepath"
	"testing"
)

// Each connection's page cache stays resident for its life (SQLite's memory
// never shrinks): the readers, whose caches every commit drops, keep a small
// one; the writer 1 MiB, the pages its appends walk.
func TestPageCacheSizesOfReadersAndWriter(t *testing.T) {
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var reader, writer int
	if err := s.r.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&reader); err != nil {
		t.Fatal(err)
	}
	if err := s.w.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&writer); err != nil {
		t.Fatal(err)
	}
	if reader != -readerCacheKiB || readerCacheKiB > 512 {
		t.Errorf("a reader's cache_size is %d; want -%d KiB, at most 512 KiB", reader, readerCacheKiB)
	}
	if writer != -writerCacheKiB || writerCacheKiB > 1024 {
		t.Errorf("the writer's cache_size is %d; want -%d KiB, at most 1 MiB", writer, writerCacheKiB)
	}
}
