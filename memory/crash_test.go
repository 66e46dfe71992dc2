package memory

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// TestCrashChild is the process TestKillDuringWrites kills: it writes
// exchanges and archives chunks until it dies.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("RECALL_CRASH_DIR")
	if dir == "" {
		t.Skip("run by TestKillDuringWrites")
	}
	ctx := context.Background()
	s, err := Open(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	k := pipeline.Key{Channel: "telegram", Chat: "1"}
	st, _ := s.Status(ctx, k)
	fmt.Println("ready")
	for i := int(st.Total / 2); ; i++ {
		msgs := exchange(k, i, fmt.Sprintf("message %d about the weather", i), "answer")
		if i%3 == 0 {
			_ = s.Enqueue(msgs...) // write-behind
		} else if err := s.Append(ctx, msgs...); err != nil {
			t.Fatal(err)
		} else {
			fmt.Printf("stored %d\n", i)
		}
		if i%10 == 9 {
			act, err := s.Active(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if len(act) > 8 {
				if _, err := s.Archive(ctx, k, ids(act[:len(act)-8]), Summary{Text: fmt.Sprintf("chunk up to %d", i)}, 5); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// A process killed with SIGKILL in the middle of batches leaves a database
// that passes integrity_check, with no half-written chunk, and no message
// that was reported stored is lost.
func TestKillDuringWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	var lastTotal int64
	for round := 0; round < 5; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
		cmd.Env = append(os.Environ(), "RECALL_CRASH_DIR="+dir)
		out, err := cmd.StdoutPipe()
		must(t, err)
		must(t, cmd.Start())
		sc := bufio.NewScanner(out)
		for sc.Scan() && sc.Text() != "ready" {
		}
		lastStored := make(chan int, 1)
		go func() {
			last := -1
			for sc.Scan() {
				fmt.Sscanf(sc.Text(), "stored %d", &last)
			}
			lastStored <- last
		}()
		time.Sleep(time.Duration(50+rand.IntN(250)) * time.Millisecond)
		must(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		last := <-lastStored

		total := checkCrashedDB(t, filepath.Join(dir, "recall.db"))
		if last >= 0 {
			db, err := OpenSQLite(context.Background(), filepath.Join(dir, "recall.db"))
			must(t, err)
			stored, answered, err := db.Lookup(context.Background(), pipeline.Key{Channel: "telegram", Chat: "1"}, fmt.Sprint(last))
			db.Close()
			must(t, err)
			if !stored || !answered {
				t.Fatalf("round %d: exchange %d was reported stored but is missing after the kill", round, last)
			}
		}
		if total < lastTotal {
			t.Fatalf("round %d: %d messages, fewer than the %d before", round, total, lastTotal)
		}
		if total == lastTotal {
			t.Logf("round %d: no progress (child killed early)", round)
		}
		lastTotal = total
	}
}

func checkCrashedDB(t *testing.T, path string) int64 {
	t.Helper()
	ctx := context.Background()
	db, err := OpenSQLite(ctx, path)
	must(t, err)
	defer db.Close()
	var res string
	must(t, db.DB().QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&res))
	if res != "ok" {
		t.Fatalf("integrity_check: %s", res)
	}
	k := pipeline.Key{Channel: "telegram", Chat: "1"}
	sums, err := db.Summaries(ctx, k, false)
	must(t, err)
	chunks := map[int64]bool{}
	for _, s := range sums {
		for _, c := range s.Sources {
			chunks[c] = true
		}
	}
	rows, err := db.DB().QueryContext(ctx, `SELECT chunk_id, is_active, count(*) FROM messages GROUP BY chunk_id, is_active`)
	must(t, err)
	defer rows.Close()
	for rows.Next() {
		var chunk, active, n int64
		must(t, rows.Scan(&chunk, &active, &n))
		if chunk == 0 && active != 1 || chunk != 0 && active != 0 {
			t.Errorf("chunk %d has messages with is_active=%d", chunk, active)
		}
		if chunk != 0 && !chunks[chunk] {
			t.Errorf("chunk %d (%d messages) has no summary: half-written", chunk, n)
		}
		delete(chunks, chunk)
	}
	if len(chunks) > 0 {
		b, _ := json.Marshal(chunks)
		t.Errorf("summaries point at chunks with no messages: %s", b)
	}
	// FTS must agree with the table.
	var fts, msgs int64
	must(t, db.DB().QueryRowContext(ctx, `SELECT count(*) FROM messages`).Scan(&msgs))
	conv, err := convID(ctx, db.DB(), k)
	must(t, err)
	must(t, db.DB().QueryRowContext(ctx, `SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?`,
		matchTerm(ftsTerm(ftsConvPrefix(conv), ftsKindText, "weather"))).Scan(&fts))
	var users int64
	must(t, db.DB().QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE role = 'user'`).Scan(&users))
	if fts != users {
		t.Errorf("FTS has %d rows for 'weather', table has %d user messages", fts, users)
	}
	return msgs
}
