package memory

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// exportBytes is the store's export document (every owner) as `bot
// export` writes it, stamped at a fixed time.
func exportBytes(t *testing.T, s *Store) []byte {
	t.Helper()
	e, err := s.ExportAll(context.Background())
	must(t, err)
	return exportDoc(t, e)
}

func exportDoc(t *testing.T, e Export) []byte {
	t.Helper()
	e.Exported = time.Time{}
	var buf bytes.Buffer
	must(t, WriteExport(&buf, e))
	return buf.Bytes()
}

// TestCopyRoundTrip: a data directory copied into PostgreSQL (migrate --to)
// and back into an empty one (migrate --from) exports the same bytes —
// ids, summaries and their sources, notes, facts, settings — and the side
// tables come back; the data directory answers as before (search,
// provenance). The user who kept a JSON file has their data in the
// database now (storage_type), and their rows numbered in its tables (a
// file numbers its own): the same content, other ids.
func TestCopyRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := copySource(t, t.TempDir())
	// The JSON user's file is renamed by the copy: export first.
	before, err := src.ExportAll(ctx)
	must(t, err)
	// Embeddings (memory.embeddings) of 20 messages in the database, and
	// of 5 in the JSON user's file (by the file's ids).
	vecs := map[string][]float32{} // by text: what each message's vector must be after the trip
	var put []MessageVector
	for _, d := range before.Owners {
		for _, c := range d.Conversations {
			for i, m := range c.Messages[:20] {
				v := []float32{float32(i), float32(len(m.Text)), 1}
				vecs[d.Owner+"\x00"+m.Text] = v
				if d.Settings != nil && d.Settings.Storage == StorageJSON {
					if i < 5 {
						must(t, src.json.PutVectors(ctx, d.Owner, []JSONVector{{Conv: c.Key, ID: m.ID, Model: "m", Hash: textHash(m.Text), Vec: v}}, ""))
					} else {
						delete(vecs, d.Owner+"\x00"+m.Text)
					}
					continue
				}
				put = append(put, MessageVector{MessageID: m.ID, Model: "m", Hash: textHash(m.Text), Vec: v})
			}
		}
	}
	must(t, src.sqlite.PutEmbeddings(ctx, put))
	pg, _ := copiedToPostgres(t, src)

	dir := filepath.Join(t.TempDir(), "back")
	var calls int
	rep, err := CopyFromPostgres(ctx, pg, dir, func(done, total, msgs int) { calls++ })
	must(t, err)
	wantCounts := CopyCounts{Owners: 3, Conversations: 3, Messages: 180, Summaries: 9, Notes: 3, Facts: 3, Settings: 2, Access: 1, Usage: 1, Handled: 1, Embeddings: 45}
	if rep.Source != wantCounts || rep.Copied != 3 || rep.Skipped != 0 || calls != 3 {
		t.Errorf("report %+v (progress told %d times), want %+v, 3 copied", rep, calls, wantCounts)
	}
	if _, err := os.Stat(filepath.Join(dir, CopyBackMarker)); !os.IsNotExist(err) {
		t.Errorf("the marker of a copy under way is still there after it finished (%v)", err)
	}
	back := openStore(t, dir)
	after, err := back.ExportAll(ctx)
	must(t, err)
	if len(after.Owners) != len(before.Owners) {
		t.Fatalf("%d owners after the round trip, %d before", len(after.Owners), len(before.Owners))
	}
	for i, d := range before.Owners {
		got := after.Owners[i]
		if d.Settings != nil && d.Settings.Storage == StorageJSON {
			if got.Settings == nil || got.Settings.Storage != StorageSQLite {
				t.Errorf("%s: settings %+v after the round trip, want the database as storage", d.Owner, got.Settings)
			}
			ca, fa := copyFingerprint(d)
			if cb, fb := copyFingerprint(got); ca != cb || fa != fb {
				t.Errorf("%s (a JSON file before): other content after the round trip", d.Owner)
			}
			continue
		}
		w, g := exportDoc(t, NewExport(d)), exportDoc(t, NewExport(got))
		if !bytes.Equal(w, g) {
			t.Errorf("%s: the round trip exports other bytes:\n%s", d.Owner, firstDiff(w, g))
		}
	}
	// Every embedding came back, on its message.
	got := 0
	for _, d := range after.Owners {
		vs, err := back.sqlite.ownerVectors(ctx, d.Owner)
		must(t, err)
		text := map[int64]string{}
		for _, c := range d.Conversations {
			for _, m := range c.Messages {
				text[m.ID] = m.Text
			}
		}
		for _, v := range vs {
			if w := vecs[d.Owner+"\x00"+text[v.MessageID]]; fmt.Sprint(w) != fmt.Sprint(v.Vec) || !bytes.Equal(v.Hash, textHash(text[v.MessageID])) {
				t.Errorf("%s: message %d %q has vector %v, want %v", d.Owner, v.MessageID, text[v.MessageID], v.Vec, w)
			}
			got++
		}
	}
	if got != len(vecs) {
		t.Errorf("%d embeddings after the round trip, want %d", got, len(vecs))
	}
	k := pipeline.Key{Channel: "whatsapp", Chat: "4915@s.whatsapp.net"}
	if hits, err := back.Search(ctx, k, Query{Text: "lighthouse", ArchivedOnly: true}); err != nil || len(hits) == 0 {
		t.Errorf("the archive copied back is not searchable: %v, %v", hits, err)
	}
	sums, err := back.Summaries(ctx, k, false)
	must(t, err)
	for _, sm := range sums {
		if sm.Level == 1 {
			if prov, err := back.Provenance(ctx, k, sm.ID); err != nil || len(prov) != 10 {
				t.Errorf("summary %q traces to %d messages (%v), want 10", sm.Text, len(prov), err)
			}
		}
	}
	if n, err := back.Usage(ctx, "telegram:1", time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)); err != nil || n != 1234 {
		t.Errorf("usage copied back = %d, %v; want 1234", n, err)
	}
	if ok, err := back.Handled(ctx, pipeline.Key{Channel: "telegram", Chat: "1"}, "99"); err != nil || !ok {
		t.Errorf("the handled id did not come back (%v)", err)
	}
	if rules, err := back.AccessRules(ctx); err != nil || len(rules) != 1 || !rules[0].Allowed {
		t.Errorf("access decisions copied back = %+v, %v", rules, err)
	}
	// New messages after the copy get new ids, above the copied ones.
	must(t, back.Append(ctx, exchange(k, 900, "after the move", "ok")...))
	act, err := back.Active(ctx, k)
	must(t, err)
	if n := len(act); n < 2 || act[n-1].ID <= act[n-2].ID || act[n-2].Text != "after the move" {
		t.Errorf("a message stored after the copy: %+v", act[max(0, n-2):])
	}
}

// firstDiff shows where two documents part.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-200)
	return "want …" + string(a[from:min(len(a), i+200)]) + "…\n got …" + string(b[from:min(len(b), i+200)]) + "…"
}

// TestCopyFromPostgresRefuses: a data directory that holds data (the
// SQLite file, or a per-user JSON file) is not filled from PostgreSQL, and
// loses nothing; an unfinished copy from another database is not
// completed from this one; a store is not opened on an unfinished copy.
func TestCopyFromPostgresRefuses(t *testing.T) {
	ctx := context.Background()
	pg, err := OpenPostgres(ctx, pgTestURL(t))
	must(t, err)
	t.Cleanup(func() { pg.Close() })
	k := pipeline.Key{Channel: "telegram", Chat: "5"}
	_, err = pg.Append(ctx, exchange(k, 1, "in the database", "ok"))
	must(t, err)

	full := t.TempDir()
	s := copySource(t, full)
	before := exportBytes(t, s)
	must(t, s.Close(ctx))
	_, err = CopyFromPostgres(ctx, pg, full, nil)
	if !errors.Is(err, ErrTargetNotEmpty) || !strings.Contains(err.Error(), "2 owners' data in recall.db") || !strings.Contains(err.Error(), "1 per-user JSON files") {
		t.Fatalf("copy into a data directory with data: %v, want ErrTargetNotEmpty saying what is there", err)
	}
	if after := exportBytes(t, openStore(t, full)); !bytes.Equal(after, before) {
		t.Error("the refused copy changed the data directory")
	}

	other := t.TempDir()
	must(t, os.WriteFile(filepath.Join(other, CopyBackMarker), []byte("db.example:5432/recall\n"), 0o600))
	if _, err := CopyFromPostgres(ctx, pg, other, nil); !errors.Is(err, ErrUnfinishedCopy) || !strings.Contains(err.Error(), "db.example:5432/recall") {
		t.Errorf("resuming another database's copy: %v, want ErrUnfinishedCopy naming it", err)
	}
	if _, err := Open(ctx, Options{Dir: other}); !errors.Is(err, ErrUnfinishedCopy) {
		t.Errorf("a store opened on an unfinished copy: %v, want ErrUnfinishedCopy", err)
	}
}

// TestCopyFromPostgresKilledChild is the process TestCopyFromPostgresKilled
// kills: it copies into RECALL_COPY_DIR and, once its first owner is
// copied, says so and waits to be killed.
func TestCopyFromPostgresKilledChild(t *testing.T) {
	dir, url := os.Getenv("RECALL_COPY_DIR"), os.Getenv("RECALL_COPY_URL")
	if dir == "" {
		t.Skip("run by TestCopyFromPostgresKilled")
	}
	ctx := context.Background()
	pg, err := OpenPostgres(ctx, url)
	must(t, err)
	_, err = copyFromPostgres(ctx, pg, dir, func(done, total, msgs int) {
		os.Stdout.WriteString("copied one\n")
		select {} // until killed
	}, 7)
	t.Fatalf("the copy returned (%v) instead of waiting to be killed", err)
}

// TestCopyFromPostgresKilled: `bot migrate --from` killed with SIGKILL after
// its first owner leaves a data directory that no bot opens (half a copy),
// and the same copy run again skips that owner, completes the rest and
// reads back as PostgreSQL exports.
func TestCopyFromPostgresKilled(t *testing.T) {
	ctx := context.Background()
	src := copySource(t, t.TempDir())
	pg, url := copiedToPostgres(t, src)
	want := exportBytes(t, openStoreOn(t, t.TempDir(), url))

	dir := filepath.Join(t.TempDir(), "back")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCopyFromPostgresKilledChild$")
	cmd.Env = append(os.Environ(), "RECALL_COPY_DIR="+dir, "RECALL_COPY_URL="+url)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "copied one" {
	}
	if sc.Text() != "copied one" {
		_ = cmd.Wait()
		t.Fatal("the child ended before its first owner was copied")
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	if _, err := Open(ctx, Options{Dir: dir}); !errors.Is(err, ErrUnfinishedCopy) {
		t.Fatalf("a store on the killed copy: %v, want ErrUnfinishedCopy", err)
	}
	rep, err := copyFromPostgres(ctx, pg, dir, nil, 7)
	must(t, err)
	if rep.Skipped != 1 || rep.Copied != 2 || rep.Source.Messages != 180 {
		t.Errorf("resumed copy %+v, want 1 owner skipped, 2 copied, 180 messages", rep)
	}
	if got := exportBytes(t, openStore(t, dir)); !bytes.Equal(got, want) {
		t.Errorf("after the resumed copy the data directory exports other bytes than PostgreSQL:\n%s", firstDiff(want, got))
	}
}

// copiedToPostgres copies src into the test database and returns it, open
// until the test ends, and its URL.
func copiedToPostgres(t *testing.T, src *Store) (*Postgres, string) {
	t.Helper()
	url := pgTestURL(t)
	pg, err := OpenPostgres(context.Background(), url)
	must(t, err)
	t.Cleanup(func() { pg.Close() })
	_, err = CopyToPostgres(context.Background(), src, pg, nil)
	must(t, err)
	return pg, url
}
