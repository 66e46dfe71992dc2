package memory

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// walPages is the size of the database's WAL file in 4 KiB pages. SQLite
// reuses the file from its start after a checkpoint, so the size is the
// WAL's high-water mark.
func walPages(t *testing.T, s *SQLite) int {
	t.Helper()
	fi, err := os.Stat(s.Path() + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Size() / 4096)
}

// appendTurns commits n exchanges of ~2 KB each, one transaction each, as
// the writer does in a quiet chat.
func appendTurns(t *testing.T, s *SQLite, from, n int) {
	t.Helper()
	key := pipeline.Key{Channel: "telegram", Chat: "1"}
	text := strings.Repeat("checkpoint words travel through the log ", 50)
	for i := from; i < from+n; i++ {
		msgs := []Message{
			{Key: key, Role: RoleUser, SenderID: "1", PlatformID: strconv.Itoa(i), Text: text + strconv.Itoa(i), Time: time.Now(), Tokens: 400},
			{Key: key, Role: RoleAssistant, ReplyTo: strconv.Itoa(i), Text: text, Time: time.Now(), Tokens: 400},
		}
		if _, err := s.Append(t.Context(), msgs); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckpointLeavesTheCommitAlone: a commit that takes the WAL past the
// checkpoint size does not copy the WAL itself (SQLite's auto-checkpoint
// would, and the turn waiting for that commit would pay for it); the
// background checkpoint does, and the WAL then starts over instead of
// growing.
func TestCheckpointLeavesTheCommitAlone(t *testing.T) {
	s, err := OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.ckpt.pages, s.ckpt.inline = 100, 100_000
	s.ckpt.paused.Store(true)
	n := 0
	for walPages(t, s) < 300 {
		appendTurns(t, s, n, 10)
		n += 10
	}
	if got := s.ckpt.runs.Load() + s.ckpt.inlined.Load(); got != 0 {
		t.Fatalf("%d checkpoints while paused", got)
	}
	var sum int
	if err := s.r.QueryRowContext(t.Context(), `SELECT count(*) FROM messages`).Scan(&sum); err != nil || sum != 2*n {
		t.Fatalf("%d messages readable, want %d (%v)", sum, 2*n, err)
	}

	s.ckpt.paused.Store(false)
	appendTurns(t, s, n, 1) // the WAL is past 100 pages: the commit nudges
	n++
	high := walPages(t, s)
	deadline := time.Now().Add(10 * time.Second)
	for s.ckpt.runs.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if s.ckpt.runs.Load() == 0 {
		t.Fatal("no background checkpoint within 10 s")
	}
	if s.ckpt.inlined.Load() != 0 {
		t.Errorf("%d checkpoints ran inside a commit", s.ckpt.inlined.Load())
	}
	// Checkpointed while the writer was idle, the WAL starts over from its
	// beginning: its high-water mark stays where it was.
	appendTurns(t, s, n, 10)
	if got := walPages(t, s); got != high {
		t.Errorf("the WAL grew from %d to %d pages after a background checkpoint", high, got)
	}
}

// TestCheckpointInlineBound: when background checkpoints cannot keep up
// (here they never run), the commit that takes the WAL past the inline size
// checkpoints it, so the WAL stays bounded.
func TestCheckpointInlineBound(t *testing.T) {
	s, err := OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.ckpt.pages, s.ckpt.inline = 50, 200
	s.ckpt.paused.Store(true)
	appendTurns(t, s, 0, 100)
	if s.ckpt.inlined.Load() == 0 {
		t.Fatal("no checkpoint inside a commit past the inline size")
	}
	if got := walPages(t, s); got > 2*200 { // plus one commit's pages: an FTS merge writes ~150

		t.Errorf("the WAL reached %d pages; want it bounded near 200", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenSQLite(context.Background(), s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	var n int
	if err := s2.r.QueryRowContext(t.Context(), `SELECT count(*) FROM messages`).Scan(&n); err != nil || n != 200 {
		t.Fatalf("%d messages after reopening, want 200 (%v)", n, err)
	}
}
