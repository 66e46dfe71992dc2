package memory

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/recallbot/recall/pipeline"
)

// A read that leaves a statement stepping (a bug in a reader of the index,
// or a read cut short where nothing resets its statement) cannot end its
// transaction: its connection would keep that snapshot for good, and every
// search that lands on it would miss every message written since. The
// connection is dropped instead, and the next reads see the new message.
func TestReadNeverLeavesAConnectionOnAnOldSnapshot(t *testing.T) {
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := pipeline.Key{Channel: "telegram", Chat: "77"}
	msg := func(id, text string) Message {
		return Message{Key: key, Role: RoleUser, SenderID: "77", SenderName: "Ana", PlatformID: id, Text: text, Time: time.Now()}
	}
	if _, err := s.Append(ctx, []Message{msg("1", "we talked about the harbour"), msg("2", "and the lighthouse")}); err != nil {
		t.Fatal(err)
	}
	// Hold both readers, so that each is left mid-statement once.
	for range readerConns {
		err := s.read(ctx, func(c *sqlite3.Conn, sc *searchConn) error {
			r := &searchRun{c: c, sc: sc, key: key}
			st, err := r.stmt(`SELECT id FROM messages`)
			if err != nil {
				return err
			}
			if !st.Step() {
				t.Fatalf("no row: %v", st.Err())
			}
			return nil // st still stepping
		})
		if err != nil {
			t.Fatalf("a read that succeeded reported %v", err)
		}
	}
	if _, err := s.Append(ctx, []Message{msg("3", "the regatta is on Sunday")}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 * readerConns {
		hits, err := s.Search(ctx, key, Query{Text: "regatta"})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].Message.PlatformID != "3" {
			t.Fatalf("search %d after the write: %d hits, want the new message", i+1, len(hits))
		}
	}
}
