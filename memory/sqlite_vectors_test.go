package memory

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/recallbot/recall/memory/pgtest"
	"github.com/recallbot/recall/pipeline"
)

func textHash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:16]
}

// vectorDB is a database with the embeddings store, for the tests that
// run on both, and its SQL: statements and counts ($1 parameters, which
// SQLite reads too).
type vectorDB struct {
	db interface {
		Backend
		EmbeddingStore
	}
	exec  func(q string, args ...any) error
	count func(q string) (int, error)
}

// vectorDBs is a fresh SQLite database, and a PostgreSQL one when
// RECALL_TEST_POSTGRES_URL is set.
func vectorDBs(t *testing.T) map[string]vectorDB {
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "recall.db"))
	must(t, err)
	t.Cleanup(func() { s.Close() })
	out := map[string]vectorDB{"sqlite": {s,
		func(q string, args ...any) error { _, err := s.w.ExecContext(ctx, q, args...); return err },
		func(q string) (n int, err error) { return n, s.w.QueryRowContext(ctx, q).Scan(&n) }}}
	if os.Getenv(pgtest.EnvURL) != "" {
		p := cfOpenPostgres(t)
		out["postgres"] = vectorDB{p,
			func(q string, args ...any) error { _, err := p.pool.Exec(ctx, q, args...); return err },
			func(q string) (n int, err error) { return n, p.pool.QueryRow(ctx, q).Scan(&n) }}
	}
	return out
}

// The embeddings tables, on SQLite and PostgreSQL: identical texts share
// one vector; a message purged before its vector is stored gets none (and
// leaves none); an edited text is pending again; a purge leaves no vector
// behind.
func TestEmbeddingStorage(t *testing.T) {
	for name, v := range vectorDBs(t) {
		t.Run(name, func(t *testing.T) { testEmbeddingStorage(t, v) })
	}
}

func testEmbeddingStorage(t *testing.T, v vectorDB) {
	ctx := context.Background()
	s := v.db
	exec := func(q string, args ...any) {
		t.Helper()
		must(t, v.exec(q, args...))
	}
	key := pipeline.Key{Channel: "telegram", Chat: "7"}
	now := time.Now()
	var msgs []Message
	for i, text := range []string{"ok thanks", "we bought a car", "ok thanks", "see you"} {
		msgs = append(msgs, Message{Key: key, Role: RoleUser, PlatformID: string(rune('a' + i)), Text: text, Time: now})
	}
	if _, err := s.Append(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	todo, err := s.PendingEmbeddings(ctx, "m", 0, 10)
	if err != nil || len(todo) != 4 {
		t.Fatalf("pending = %v, %v; want 4", todo, err)
	}
	// The last message goes before its vector is stored.
	exec(`DELETE FROM messages WHERE id = $1`, todo[3].ID)
	var vs []MessageVector
	for i, m := range todo {
		vs = append(vs, MessageVector{MessageID: m.ID, Model: "m", Hash: textHash(m.Text), Vec: []float32{float32(i), 1}})
	}
	if err := s.PutEmbeddings(ctx, vs); err != nil {
		t.Fatal(err)
	}
	count := func(q string) int {
		t.Helper()
		n, err := v.count(q)
		must(t, err)
		return n
	}
	if v, m := count(`SELECT count(*) FROM embedding_vectors`), count(`SELECT count(*) FROM message_embeddings`); v != 2 || m != 3 {
		t.Errorf("%d vectors for %d messages, want 2 (identical texts share one; none for the deleted message) for 3", v, m)
	}
	cached, err := s.CachedEmbeddings(ctx, "m", [][]byte{textHash("ok thanks"), textHash("never said")})
	if err != nil || len(cached) != 1 {
		t.Errorf("cached = %v, %v; want the one stored text", cached, err)
	}
	var loaded int
	if err := s.ConversationVectors(ctx, key, func(MessageVector) { loaded++ }); err != nil || loaded != 3 {
		t.Errorf("loaded %d (%v), want 3", loaded, err)
	}
	if done, total, err := s.EmbeddingCoverage(ctx, key, "m"); err != nil || done != 3 || total != 3 {
		t.Errorf("coverage %d of %d (%v)", done, total, err)
	}
	// An edited text is embedded again.
	exec(`UPDATE messages SET text = 'we bought a red car' WHERE id = $1`, todo[1].ID)
	if todo, err := s.PendingEmbeddings(ctx, "m", 0, 10); err != nil || len(todo) != 1 || todo[0].Text != "we bought a red car" {
		t.Errorf("pending after an edit = %v, %v", todo, err)
	}
	if v := count(`SELECT count(*) FROM embedding_vectors`); v != 1 {
		t.Errorf("%d vectors after the edit, want 1 (the edited text's is gone)", v)
	}
	if _, err := s.Purge(ctx, PurgeScope{Owner: key.Owner()}); err != nil {
		t.Fatal(err)
	}
	if v, m := count(`SELECT count(*) FROM embedding_vectors`), count(`SELECT count(*) FROM message_embeddings`); v != 0 || m != 0 {
		t.Errorf("after the purge: %d vectors, %d message embeddings", v, m)
	}
}
