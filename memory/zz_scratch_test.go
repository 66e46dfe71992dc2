package memory

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

func TestZZScratch(t *testing.T) {
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := pipeline.Key{Channel: "telegram", Chat: "1"}
	s.Append(ctx, []Message{{Key: k, Role: RoleUser, PlatformID: "1", Text: "hello there world", Time: time.Now()}})
	hits, err := s.Search(ctx, k, Query{Text: "c1"})
	t.Log(hits, err)
}
