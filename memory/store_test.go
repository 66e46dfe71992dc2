package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Dir: dir, RetryBase: time.Millisecond, RetryMax: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func exchange(key pipeline.Key, i int, user, bot string) []Message {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
	id := fmt.Sprint(i)
	return []Message{
		{Key: key, Role: RoleUser, SenderID: "7", SenderName: "Ann", PlatformID: id, Text: user, Time: at},
		{Key: key, Role: RoleAssistant, ReplyTo: id, Text: bot, Time: at.Add(time.Second)},
	}
}

// fileHas reports whether any of the files holds needle.
func fileHas(t *testing.T, needle string, paths ...string) []string {
	t.Helper()
	var found []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(bytes.ToLower(b), []byte(strings.ToLower(needle))) {
			found = append(found, filepath.Base(p))
		}
	}
	return found
}

func TestPurgeLeavesNoTrace(t *testing.T) {
	for _, name := range []string{"sqlite", "json", "postgres"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s, storage := openStoreNamed(t, dir, name)
			secret := "zqxsecret4417"
			a := pipeline.Key{Channel: "telegram", Chat: "100"}
			b := pipeline.Key{Channel: "telegram", Chat: "200"}
			if storage == StorageJSON {
				if err := s.PutSettings(ctx, Settings{Owner: a.Owner(), Storage: StorageJSON, Threshold: 10, MemoryEnabled: true}); err != nil {
					t.Fatal(err)
				}
			}
			// Queued together, A's and B's messages share write batches
			// (and FTS segments).
			for i := 0; i < 20; i++ {
				text := "ordinary words number " + fmt.Sprint(i)
				if i%5 == 0 {
					text = "my code is " + secret
				}
				must(t, s.Enqueue(exchange(a, i, text, "noted")...))
				must(t, s.Enqueue(exchange(b, i, "other chat "+fmt.Sprint(i), "ok")...))
			}
			must(t, s.Flush(ctx))
			act, err := s.Active(ctx, a)
			must(t, err)
			_, err = s.Archive(ctx, a, ids(act[:10]), Summary{Text: "User said their code is " + secret}, 5)
			must(t, err)
			_, _, err = s.AddFact(ctx, a.Owner(), Fact{Content: "code is " + secret, Key: a.String()})
			must(t, err)
			must(t, s.sqlite.Checkpoint(ctx))
			files := []string{filepath.Join(dir, "recall.db"), filepath.Join(dir, "recall.db-wal"), s.json.Path(a.Owner())}
			if s.pg != nil {
				if len(pgTraces(t, s.pg, secret)) < 3 {
					t.Fatal("control failed: the secret is not in the messages, summaries and facts before the purge")
				}
			} else if len(fileHas(t, secret, files...)) == 0 {
				t.Fatal("control failed: the secret is not on disk before the purge")
			}

			rep, err := s.Purge(ctx, PurgeScope{Owner: a.Owner(), Key: a})
			must(t, err)
			if rep.Messages != 40 || rep.Summaries != 1 || rep.Facts != 1 {
				t.Errorf("report = %+v, want 40 messages, 1 summary, 1 fact", rep)
			}
			if found := fileHas(t, secret, files...); len(found) > 0 {
				t.Errorf("purged text still in %v", found)
				dumpSecret(t, dir, secret, s)
			}
			if s.pg != nil {
				if found := pgTraces(t, s.pg, secret); len(found) > 0 {
					t.Errorf("purged text left traces in PostgreSQL: %v", found)
				}
			}
			if hits, _ := s.Search(ctx, a, Query{Text: secret}); len(hits) != 0 {
				t.Errorf("search still finds purged text: %v", hits)
			}
			st, err := s.Status(ctx, b)
			must(t, err)
			if st.Total != 40 {
				t.Errorf("the other conversation lost messages: %d", st.Total)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ids(ms []Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// Storage failures: a read-only database, a full disk, a closed database.
// Queued writes stay readable, are retried, and land once storage recovers.
func TestWriterSurvivesStorageFailures(t *testing.T) {
	cases := []struct {
		name         string
		break_, heal string
	}{
		{"read-only", `PRAGMA query_only = 1`, `PRAGMA query_only = 0`},
		{"disk full", `PRAGMA max_page_count = 1`, `PRAGMA max_page_count = 1073741823`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := openStore(t, t.TempDir())
			k := pipeline.Key{Channel: "console", Chat: "local"}
			must(t, s.Append(ctx, exchange(k, 0, "before the failure", "ok")...))
			if tc.name == "disk full" {
				var pages int
				must(t, s.sqlite.DB().QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages))
				tc.break_ = fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)
			}
			_, err := s.sqlite.DB().ExecContext(ctx, tc.break_)
			must(t, err)

			for i := 1; i <= 30; i++ {
				msgs := exchange(k, i, strings.Repeat("while broken ", 40)+fmt.Sprint(i), "reply")
				must(t, s.Enqueue(msgs...))
			}
			waitFor(t, func() bool { return s.WriteStats().Failing != nil })
			recent, err := s.Recent(ctx, k, 0, 0)
			must(t, err)
			if len(recent) != 62 {
				t.Fatalf("read-your-writes: Recent has %d messages, want 62", len(recent))
			}
			if ok, answered, _ := s.Lookup(ctx, k, "30"); !ok || !answered {
				t.Errorf("a queued message is not visible to dedupe")
			}
			short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			err = s.Append(short, exchange(k, 99, "sync while broken", "r")...)
			cancel()
			if err == nil {
				t.Fatal("a synchronous append succeeded on broken storage")
			}

			_, err = s.sqlite.DB().ExecContext(ctx, tc.heal)
			must(t, err)
			must(t, s.Flush(ctx))
			if s.WriteStats().Failing != nil {
				t.Errorf("still failing after recovery: %v", s.WriteStats().Failing)
			}
			st, err := s.sqlite.Status(ctx, k)
			must(t, err)
			if st.Total != 64 {
				t.Errorf("stored %d messages after recovery, want 64 (each once)", st.Total)
			}
		})
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCloseReportsUnwritten(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Dir: t.TempDir(), RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond})
	must(t, err)
	k := pipeline.Key{Channel: "console", Chat: "local"}
	_, err = s.sqlite.DB().ExecContext(ctx, `PRAGMA query_only = 1`)
	must(t, err)
	must(t, s.Enqueue(exchange(k, 1, "lost?", "r")...))
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err = s.Close(cctx)
	if err == nil || !strings.Contains(err.Error(), "2 messages") {
		t.Fatalf("Close = %v, want a report of 2 unwritten messages", err)
	}
	if err := s.Enqueue(exchange(k, 2, "after close", "r")...); !errors.Is(err, ErrClosed) {
		t.Errorf("Enqueue after Close = %v, want ErrClosed", err)
	}
}

func TestQueueFullIsReported(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Dir: t.TempDir(), QueueSize: 4, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond})
	must(t, err)
	defer s.Close(ctx)
	k := pipeline.Key{Channel: "console", Chat: "local"}
	_, err = s.sqlite.DB().ExecContext(ctx, `PRAGMA query_only = 1`)
	must(t, err)
	must(t, s.Enqueue(exchange(k, 1, "a", "b")...))
	must(t, s.Enqueue(exchange(k, 2, "c", "d")...))
	if err := s.Enqueue(exchange(k, 3, "e", "f")...); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("Enqueue beyond the queue = %v, want ErrQueueFull", err)
	}
	_, err = s.sqlite.DB().ExecContext(ctx, `PRAGMA query_only = 0`)
	must(t, err)
	must(t, s.Flush(ctx))
}

func TestMoveBetweenBackends(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	k := pipeline.Key{Channel: "telegram", Chat: "42", Thread: "7"}
	for i := 0; i < 12; i++ {
		must(t, s.Append(ctx, exchange(k, i, fmt.Sprintf("I like apples number %d", i), "good")...))
	}
	act, _ := s.Active(ctx, k)
	_, err := s.Archive(ctx, k, ids(act[:8]), Summary{Text: "apples"}, 4)
	must(t, err)
	must(t, s.Remember(ctx, k.Owner(), "city", "Lisbon"))
	must(t, s.PutSettings(ctx, Settings{Owner: k.Owner(), Storage: StorageSQLite, Threshold: 10, MemoryEnabled: true}))
	before, err := s.Export(ctx, k.Owner(), nil)
	must(t, err)

	set := Settings{Owner: k.Owner(), Storage: StorageJSON, Threshold: 15, MemoryEnabled: true}
	must(t, s.PutSettings(ctx, set))
	if !s.json.Has(k.Owner()) {
		t.Fatal("no JSON file after moving to JSON")
	}
	if owners, _ := s.sqlite.Owners(ctx); len(owners) != 0 {
		t.Fatalf("SQLite still holds %v after the move", owners)
	}
	got, err := s.Settings(ctx, k.Owner())
	must(t, err)
	if got.Storage != StorageJSON || got.Threshold != 15 {
		t.Errorf("settings after move = %+v", got)
	}
	if hits, _ := s.Search(ctx, k, Query{Text: "apples", ArchivedOnly: true}); len(hits) == 0 {
		t.Error("archive not searchable after the move")
	}
	set.Storage = StorageSQLite
	must(t, s.PutSettings(ctx, set))
	after, err := s.Export(ctx, k.Owner(), nil)
	must(t, err)
	if ownerFingerprint(after) != ownerFingerprint(before) {
		t.Errorf("round trip changed the data:\n%s\n%s", ownerFingerprint(before), ownerFingerprint(after))
	}
	if s.json.Has(k.Owner()) {
		t.Error("JSON file left behind after moving back")
	}
}

// A move to JSON interrupted after the JSON file was written but before the
// SQLite copy was removed: reopening finishes it and nothing is lost or doubled.
func TestInterruptedMoveRecovers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, Options{Dir: dir})
	must(t, err)
	k := pipeline.Key{Channel: "whatsapp", Chat: "4915112345678@s.whatsapp.net"}
	for i := 0; i < 5; i++ {
		must(t, s.Append(ctx, exchange(k, i, "hello there", "hi")...))
	}
	d, err := s.sqlite.Export(ctx, k.Owner(), nil)
	must(t, err)
	st := Settings{Owner: k.Owner(), Storage: StorageJSON, Threshold: 10}
	d.Settings = &st
	_, err = s.json.Import(ctx, d) // the crash happens right after this
	must(t, err)
	must(t, s.Close(ctx))

	s = openStore(t, dir)
	if owners, _ := s.sqlite.Owners(ctx); len(owners) != 0 {
		t.Fatalf("stale SQLite copy not removed: %v", owners)
	}
	stat, err := s.Status(ctx, k)
	must(t, err)
	if stat.Total != 10 {
		t.Errorf("after recovery %d messages, want 10", stat.Total)
	}
}

func TestUnanswered(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	tg := pipeline.Key{Channel: "telegram", Chat: "1"}
	wa := pipeline.Key{Channel: "whatsapp", Chat: "2@s.whatsapp.net"}
	js := pipeline.Key{Channel: "telegram", Chat: "3"}
	tg2 := pipeline.Key{Channel: "telegram", Chat: "4"}
	must(t, s.PutSettings(ctx, Settings{Owner: js.Owner(), Storage: StorageJSON, Threshold: 10}))
	now := func(ms []Message) []Message {
		for i := range ms {
			ms[i].Time = time.Now()
		}
		return ms
	}
	must(t, s.Append(ctx, now(exchange(tg, 1, "answered", "yes"))...))
	must(t, s.Append(ctx, now(exchange(tg, 2, "waiting for a reply", "")[:1])...))
	// A message whose turn failed (the user was told, MarkHandled) followed
	// by one that was answered: it was handled, and is not answered again
	// at start. One never run (refused, cut short) before an answered one
	// is still waiting: the red team's burst left 8,721 such unanswered for
	// good.
	for _, k := range []pipeline.Key{tg2, js} {
		must(t, s.Append(ctx, now(exchange(k, 4, "never run", "")[:1])...))
		must(t, s.Append(ctx, now(exchange(k, 5, "the model failed on this one", "")[:1])...))
		first, err := s.MarkHandled(ctx, k, "5")
		if err != nil || !first {
			t.Fatalf("MarkHandled = %v, %v", first, err)
		}
		if first, err := s.MarkHandled(ctx, k, "5"); err != nil || first {
			t.Fatalf("MarkHandled again = %v, %v; want not first", first, err)
		}
		must(t, s.Append(ctx, now(exchange(k, 6, "so I asked again", "answered"))...))
		// The dedupe stage takes it as answered: a redelivery is dropped.
		if stored, answered, err := s.Lookup(ctx, k, "5"); err != nil || !stored || !answered {
			t.Errorf("Lookup of a handled message = %v, %v, %v; want stored and answered", stored, answered, err)
		}
		if _, answered, err := s.Lookup(ctx, k, "4"); err != nil || answered {
			t.Errorf("Lookup of a message never run = answered %v, %v", answered, err)
		}
	}
	must(t, s.Append(ctx, now(exchange(wa, 3, "other channel", "")[:1])...))
	must(t, s.Append(ctx, now(exchange(js, 7, "json waiting", "")[:1])...))
	old := exchange(tg, 0, "too old", "")[:1]
	old[0].PlatformID, old[0].Time = "old", time.Now().Add(-48*time.Hour)
	must(t, s.Append(ctx, old...))
	got, err := s.Unanswered(ctx, "telegram", time.Now().Add(-24*time.Hour))
	must(t, err)
	var texts []string
	for _, m := range got {
		texts = append(texts, m.Key.String()+" "+m.Text)
	}
	want := []string{"telegram:1: waiting for a reply", "telegram:4: never run", "telegram:3: never run", "telegram:3: json waiting"}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("Unanswered = %q, want %q", texts, want)
	}
}

// Huge and binary messages are stored byte for byte, whichever insert path
// their batch takes.
func TestBinaryAndHugeMessagesAreKept(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	k := pipeline.Key{Channel: "console", Chat: "local"}
	texts := []string{
		"plain",
		"\xff\xfe binary \x00 with NUL and invalid UTF-8 \xc3\x28",
		strings.Repeat("a megabyte of text ", 1<<20/19),
		"emoji 🧠 and RTL مرحبا",
	}
	for i, text := range texts {
		must(t, s.Enqueue(Message{Key: k, Role: RoleUser, PlatformID: fmt.Sprint(i), Text: text}))
	}
	must(t, s.Flush(ctx))
	got, err := s.sqlite.Recent(ctx, k, 0, 0)
	must(t, err)
	if len(got) != len(texts) {
		t.Fatalf("stored %d messages, want %d", len(got), len(texts))
	}
	for i := range texts {
		if got[i].Text != texts[i] {
			t.Errorf("message %d changed on the way to disk (len %d → %d)", i, len(texts[i]), len(got[i].Text))
		}
	}
	if _, err := s.Search(ctx, k, Query{Text: texts[1]}); err != nil {
		t.Errorf("searching binary text: %v", err)
	}
}

// holdWriter keeps the write queue busy with a write of its own until
// release is called (at the latest at cleanup): what is enqueued meanwhile
// stays queued, so a test sees the queue as a reader may.
func holdWriter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	entered, hold, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.do(context.Background(), "", func(context.Context, Backend) error {
			close(entered)
			<-hold
			return nil
		})
	}()
	<-entered
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(hold)
			if err := <-done; err != nil {
				t.Errorf("the holding write: %v", err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// The cheap trigger counter agrees with Status on both backends, queued
// replies included (held in the queue while both are asked: a reply
// committed between the two reads may be missed once by either, by design)
// and once they are committed.
func TestTurnsSinceSummaryMatchesStatus(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	sq := pipeline.Key{Channel: "telegram", Chat: "1"}
	js := pipeline.Key{Channel: "telegram", Chat: "2"}
	must(t, s.PutSettings(ctx, Settings{Owner: js.Owner(), Storage: StorageJSON, Threshold: 10}))
	check := func(k pipeline.Key, when string) {
		t.Helper()
		n, err := s.TurnsSinceSummary(ctx, k)
		must(t, err)
		st, err := s.Status(ctx, k)
		must(t, err)
		if n != st.TurnsSinceSummary || n != 4 {
			t.Errorf("%s, %s: TurnsSinceSummary %d, Status %d, want 4", k, when, n, st.TurnsSinceSummary)
		}
	}
	for _, k := range []pipeline.Key{sq, js} {
		for i := 0; i < 3; i++ {
			must(t, s.Append(ctx, exchange(k, i, "hi", "hello")...))
		}
		release := holdWriter(t, s)
		must(t, s.Enqueue(exchange(k, 9, "queued", "reply")...))
		if len(s.w.pendingFor(k)) != 2 {
			t.Fatalf("%s: %d messages queued, want the held exchange", k, len(s.w.pendingFor(k)))
		}
		check(k, "reply queued")
		release()
		must(t, s.Flush(ctx))
		check(k, "reply committed")
	}
	if n, err := s.TurnsSinceSummary(ctx, pipeline.Key{Channel: "telegram", Chat: "404"}); n != 0 || err != nil {
		t.Errorf("unknown conversation: %d, %v", n, err)
	}
}
