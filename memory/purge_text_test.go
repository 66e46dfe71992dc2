package memory

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/turnqueue"
)

// TestPurgeLeavesNoText: after a purge, the purged words are nowhere the
// store keeps anything: not in any table's text or bytes (SQLite: every
// table, FTS5's shadow tables included; PostgreSQL: every column of every
// table of the schema, the turn queue included, and pg_dump's output when
// pg_dump is on the machine), not in any file under the data directory
// (the SQLite file and its WAL after the purge's checkpoint, the JSON
// files). Words of what the purge does not cover stay findable: the
// control that the search would see them.
func TestPurgeLeavesNoText(t *testing.T) {
	for _, name := range []string{"sqlite", "json", "postgres"} {
		for _, scope := range []string{"owner", "conversation", "sender"} {
			t.Run(name+"/"+scope, func(t *testing.T) { testPurgeLeavesNoText(t, name, scope) })
		}
	}
}

func testPurgeLeavesNoText(t *testing.T, name, scope string) {
	ctx := context.Background()
	dir := t.TempDir()
	s, storage := openStoreNamed(t, dir, name)
	const (
		secret = "zqxpurged4417" // what the purge covers
		kept   = "zqxkept8812"   // what it does not
	)
	own := pipeline.Key{Channel: "telegram", Chat: "100"}                // the person's private chat
	topic := pipeline.Key{Channel: "telegram", Chat: "100", Thread: "9"} // another conversation of theirs
	group := pipeline.Key{Channel: "telegram", Chat: "-500"}             // a group they wrote in
	if storage == StorageJSON {
		for _, o := range []string{own.Owner(), group.Owner()} {
			must(t, s.PutSettings(ctx, Settings{Owner: o, Storage: StorageJSON, Threshold: 10, MemoryEnabled: true}))
		}
	}
	var purged, keptKeys []pipeline.Key
	senderOnly := false
	switch scope {
	case "owner":
		purged, keptKeys = []pipeline.Key{own, topic}, []pipeline.Key{group}
	case "conversation":
		purged, keptKeys = []pipeline.Key{own}, []pipeline.Key{topic, group}
	case "sender":
		purged, keptKeys, senderOnly = []pipeline.Key{group}, []pipeline.Key{own, topic}, true
	}
	write := func(k pipeline.Key, word string) {
		for i := 0; i < 12; i++ {
			text := fmt.Sprintf("ordinary words %d", i)
			if i%4 == 0 {
				text = "my code is " + word
			}
			msgs := exchange(k, i, text, "noted")
			if senderOnly && k == group {
				msgs[0].SenderID = "100" // the person, in the group
			}
			must(t, s.Enqueue(msgs...))
		}
		if k == group {
			// Someone else in the group: theirs stays.
			must(t, s.Enqueue(exchange(k, 50, "their own "+kept, "ok")...))
		}
	}
	for _, k := range purged {
		write(k, secret)
	}
	for _, k := range keptKeys {
		write(k, kept)
	}
	must(t, s.Flush(ctx))
	for _, k := range append(append([]pipeline.Key{}, purged...), keptKeys...) {
		word := kept
		for _, p := range purged {
			if p == k {
				word = secret
			}
		}
		act, err := s.Active(ctx, k)
		must(t, err)
		_, err = s.Archive(ctx, k, ids(act[:6]), Summary{Text: "User said their code is " + word}, 3)
		must(t, err)
		_, _, err = s.AddFact(ctx, k.Owner(), Fact{Content: "code is " + word, Key: k.String(), Sources: []string{"0"}})
		must(t, err)
	}
	noteOwner, noteKept := own.Owner(), group.Owner()
	if scope != "owner" {
		noteOwner, noteKept = group.Owner(), own.Owner()
	}
	must(t, s.Remember(ctx, noteOwner, "code", "remember "+map[bool]string{true: secret, false: kept}[scope == "owner"]))
	must(t, s.Remember(ctx, noteKept, "other", "remember "+kept))
	if scope != "conversation" {
		// The person's own note in the group goes with their messages
		// there; another member's stays.
		must(t, s.RememberBy(ctx, group.Owner(), "telegram:100", "mine", "remember "+secret))
		must(t, s.RememberBy(ctx, group.Owner(), "telegram:7", "theirs", "remember "+kept))
	}
	if s.pg != nil {
		queueTurns(t, s, append(append([]pipeline.Key{}, purged...), keptKeys...), secret, kept, purged, senderOnly)
	}
	must(t, s.sqlite.Checkpoint(ctx))
	if len(storeTraces(t, s, dir, secret)) == 0 {
		t.Fatal("control failed: the purged words are nowhere before the purge")
	}

	switch scope {
	case "owner":
		_, err := s.Purge(ctx, PurgeScope{Owner: own.Owner()})
		must(t, err)
		_, err = s.PurgeSender(ctx, SenderScope{Channel: "telegram", SenderID: "100", Except: own.Owner()})
		must(t, err)
	case "conversation":
		_, err := s.Purge(ctx, PurgeScope{Owner: own.Owner(), Key: own})
		must(t, err)
	case "sender":
		_, err := s.PurgeSender(ctx, SenderScope{Channel: "telegram", SenderID: "100", Except: own.Owner()})
		must(t, err)
	}
	if found := storeTraces(t, s, dir, secret); len(found) > 0 {
		t.Errorf("the purged words are still in %v", found)
	}
	if found := storeTraces(t, s, dir, kept); len(found) == 0 {
		t.Errorf("control failed: the words the purge does not cover are gone too")
	}
}

// queueTurns runs each conversation's turns through the shared turn queue
// as replicas do, so its table holds their text as it does after real
// turns (finished rows are kept to drop redeliveries).
func queueTurns(t *testing.T, s *Store, keys []pipeline.Key, secret, kept string, purged []pipeline.Key, senderOnly bool) {
	t.Helper()
	last := map[pipeline.Key]bool{}
	done := make(chan pipeline.Key, len(keys))
	h := pipeline.HandlerFunc(func(_ context.Context, tn *pipeline.Turn) error {
		if tn.In.MessageID == "last" {
			done <- tn.In.Key
		}
		return nil
	})
	q := turnqueue.New(s.pg.pool, h, "test", turnqueue.Options{Workers: 2})
	q.Register("telegram", turnqueue.Channel{Out: nil})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- q.Run(ctx) }()
	defer func() { cancel(); <-stopped }()
	for _, k := range keys {
		word := kept
		for _, p := range purged {
			if p == k {
				word = secret
			}
		}
		sender := "7"
		if senderOnly && k == group(keys) {
			sender = "100"
		}
		for i, text := range []string{"/remember my code is " + word, "what is " + word + "?"} {
			must(t, q.Submit(pipeline.Inbound{Key: k, MessageID: fmt.Sprint("q", i), SenderID: sender, Text: text}, nil))
		}
		// The conversation's turns run in order: when its last one runs,
		// the ones before are done.
		must(t, q.Submit(pipeline.Inbound{Key: k, MessageID: "last", SenderID: sender, Text: "ok"}, nil))
		last[k] = true
	}
	for range last {
		<-done
	}
}

// group picks the group's key among keys (its chat id is negative).
func group(keys []pipeline.Key) pipeline.Key {
	for _, k := range keys {
		if strings.HasPrefix(k.Chat, "-") {
			return k
		}
	}
	return pipeline.Key{}
}

// storeTraces lists where word still is: files under dir, SQLite's tables,
// PostgreSQL's tables and dump.
func storeTraces(t *testing.T, s *Store, dir, word string) []string {
	t.Helper()
	needle := []byte(strings.ToLower(word))
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(bytes.ToLower(b), needle) {
			out = append(out, "file "+filepath.Base(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, sqliteTraces(t, s.sqlite, needle)...)
	if s.pg != nil {
		out = append(out, pgAllTraces(t, s.pg, word)...)
	}
	return out
}

// sqliteTraces reads every value of every table (FTS5's index is in its
// shadow tables: the virtual table itself cannot be scanned).
func sqliteTraces(t *testing.T, l *SQLite, needle []byte) []string {
	t.Helper()
	ctx := context.Background()
	db := l.DB()
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'`)
	must(t, err)
	var tables []string
	for rows.Next() {
		var n string
		must(t, rows.Scan(&n))
		tables = append(tables, n)
	}
	must(t, rows.Err())
	rows.Close()
	var out []string
	for _, tb := range tables {
		rows, err := db.QueryContext(ctx, `SELECT * FROM "`+tb+`"`)
		must(t, err)
		cols, err := rows.Columns()
		must(t, err)
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		n := 0
		for rows.Next() {
			must(t, rows.Scan(ptrs...))
			for _, v := range vals {
				var b []byte
				switch v := v.(type) {
				case string:
					b = []byte(v)
				case []byte:
					b = v
				}
				if bytes.Contains(bytes.ToLower(b), needle) {
					n++
				}
			}
		}
		must(t, rows.Err())
		rows.Close()
		if n > 0 {
			out = append(out, fmt.Sprintf("sqlite %s (%d values)", tb, n))
		}
	}
	return out
}

// pgAllTraces looks in every column of every table of the schema (as
// text; bytes as bytes), then in pg_dump's output of the schema when
// pg_dump is installed.
func pgAllTraces(t *testing.T, p *Postgres, word string) []string {
	t.Helper()
	ctx := context.Background()
	rows, err := p.pool.Query(ctx, `SELECT table_name, column_name, data_type FROM information_schema.columns
		WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`)
	must(t, err)
	type col struct{ table, name, typ string }
	var cols []col
	for rows.Next() {
		var c col
		must(t, rows.Scan(&c.table, &c.name, &c.typ))
		cols = append(cols, c)
	}
	must(t, rows.Err())
	rows.Close()
	if len(cols) == 0 {
		t.Fatal("no columns in the schema")
	}
	var out []string
	for _, c := range cols {
		cond := fmt.Sprintf(`strpos(lower(%q::text), lower($1)) > 0`, c.name)
		arg := any(word)
		if c.typ == "bytea" {
			cond, arg = fmt.Sprintf(`position($1::bytea in %q) > 0`, c.name), []byte(word)
		}
		var n int
		if err := p.pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %q WHERE %s`, c.table, cond), arg).Scan(&n); err != nil {
			t.Fatalf("reading %s.%s: %v", c.table, c.name, err)
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("postgres %s.%s (%d rows)", c.table, c.name, n))
		}
	}
	return append(out, pgDumpTraces(t, p, word)...)
}

// pgDumpTraces greps pg_dump's output of the test's schema (nothing when
// pg_dump is not installed).
func pgDumpTraces(t *testing.T, p *Postgres, word string) []string {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_dump")
	if len(bins) == 0 {
		return nil
	}
	var schema string
	must(t, p.pool.QueryRow(context.Background(), `SELECT current_schema()`).Scan(&schema))
	u, err := url.Parse(os.Getenv("RECALL_TEST_POSTGRES_URL"))
	must(t, err)
	out, err := exec.Command(bins[len(bins)-1], "--schema="+schema, "--data-only", "--dbname="+u.String()).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	if !bytes.Contains(out, []byte("COPY ")) {
		t.Fatalf("pg_dump wrote no data: %.300s", out)
	}
	if bytes.Contains(bytes.ToLower(out), []byte(strings.ToLower(word))) {
		return []string{"pg_dump"}
	}
	return nil
}
