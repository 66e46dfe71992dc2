package memory

import (
	"context"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// A conversation's question is kept until it is deleted or a day past its
// expiry, one per conversation (a new one replaces it), and across a
// reopen; on SQLite and on PostgreSQL.
func TestQuestionsAreKept(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testQuestionsAreKept(t, Options{Dir: t.TempDir()}) })
	t.Run("postgres", func(t *testing.T) { testQuestionsAreKept(t, Options{Dir: t.TempDir(), DatabaseURL: pgTestURL(t)}) })
}

func testQuestionsAreKept(t *testing.T, opts Options) {
	ctx := context.Background()
	s, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Millisecond)
	a := pipeline.Key{Channel: "telegram", Chat: "1"}
	b := pipeline.Key{Channel: "telegram", Chat: "2", Thread: "7"}
	old := pipeline.Key{Channel: "whatsapp", Chat: "3"}
	for _, q := range []Question{
		{Key: a, Asked: "1", Kind: "summary.storage", Expires: now.Add(time.Minute)},
		{Key: a, Asked: "1", Kind: "summary.threshold", Args: "json", Expires: now.Add(2 * time.Minute)}, // replaces the one before
		{Key: b, Asked: "9", Kind: "purge.what", Expires: now.Add(-time.Hour)},                           // expired, told so
		{Key: old, Asked: "3", Kind: "purge.days", Expires: now.Add(-questionsKeep - time.Hour)},         // forgotten
	} {
		if err := s.PutQuestion(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	got, err := s.Questions(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[pipeline.Key]Question{}
	for _, q := range got {
		byKey[q.Key] = q
	}
	if len(got) != 2 || byKey[a].Kind != "summary.threshold" || byKey[a].Args != "json" || !byKey[a].Expires.Equal(now.Add(2*time.Minute)) ||
		byKey[b].Asked != "9" || byKey[b].Kind != "purge.what" {
		t.Fatalf("questions after a reopen: %+v", got)
	}
	if err := s.DeleteQuestion(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Questions(ctx, now); len(got) != 1 || got[0].Key != b {
		t.Fatalf("after deleting a's: %+v", got)
	}
}
