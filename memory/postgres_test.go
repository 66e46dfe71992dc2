package memory

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/recallbot/recall/memory/pgtest"
)

// pgTestURL gives the test a fresh schema on RECALL_TEST_POSTGRES_URL's
// server, or skips it (see pgtest).
func pgTestURL(t testing.TB) string { return pgtest.URL(t) }

func cfOpenPostgres(t testing.TB) *Postgres {
	t.Helper()
	p, err := OpenPostgres(context.Background(), pgTestURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestPostgresMigratesOnce: replicas that start together on an empty
// database all open it, and the migrations run once (without the advisory
// lock, the second CREATE TABLE fails).
func TestPostgresMigratesOnce(t *testing.T) {
	u := pgTestURL(t)
	ctx := context.Background()
	const replicas = 6
	errs := make(chan error, replicas)
	opened := make(chan *Postgres, replicas)
	start := make(chan struct{})
	for range replicas {
		go func() {
			<-start
			p, err := OpenPostgres(ctx, u)
			errs <- err
			opened <- p
		}()
	}
	close(start)
	for range replicas {
		if err := <-errs; err != nil {
			t.Errorf("opening: %v", err)
		}
		if p := <-opened; p != nil {
			t.Cleanup(func() { p.Close() })
		}
	}
	if t.Failed() {
		return
	}
	p := cfOpenPostgres(t)
	names, _ := pgMigrationFiles.ReadDir("pgmigrations")
	var rows, version int
	if err := p.pool.QueryRow(ctx, `SELECT count(*), max(version) FROM schema_version`).Scan(&rows, &version); err != nil {
		t.Fatal(err)
	}
	if rows != len(names) || version != len(names) {
		t.Fatalf("schema_version has %d rows up to %d, want %d", rows, version, len(names))
	}
}

// TestPostgresRanksLikeSQLite: the same archive ranks and scores the same
// on PostgreSQL as on SQLite, hit for hit, across conversations of
// different sizes.
func TestPostgresRanksLikeSQLite(t *testing.T) {
	p, s := cfOpenPostgres(t), cfOpenSQLite(t)
	g := newBenchText(77)
	people := []string{"Maria", "Tomás", "Zoë"}
	var msgs []Message
	for c := range 5 {
		k := cfKey("telegram", strconv.Itoa(10+c))
		for i := range 40 + 30*c {
			m := cfUser(k, fmt.Sprint(i), g.message(RoleUser, people), cfT0.Add(time.Duration(i)*time.Second))
			m.SenderName = people[(i+c)%len(people)]
			msgs = append(msgs, m)
		}
	}
	cfAppend(t, s, msgs...)
	cfAppend(t, p, msgs...)
	// Archive part of each conversation so ArchivedOnly is compared too.
	for c := range 5 {
		k := cfKey("telegram", strconv.Itoa(10+c))
		for _, b := range []Backend{s, p} {
			act := cfActive(t, b, k)
			cfArchive(t, b, k, cfIDs(act[:len(act)/2]), "half", cfT0, 0)
		}
	}
	qg := newBenchText(78)
	for c := range 5 {
		k := cfKey("telegram", strconv.Itoa(10+c))
		for range 30 {
			text := qg.query(people)
			for _, q := range []Query{{Text: text, Limit: 50}, {Text: text, Limit: 4, TokenBudget: 30}, {Text: text, ArchivedOnly: true}} {
				hs, hp := cfSearch(t, s, k, q), cfSearch(t, p, k, q)
				if len(hs) != len(hp) {
					t.Fatalf("%s %+v: SQLite %d hits, PostgreSQL %d", k, q, len(hs), len(hp))
				}
				for i := range hs {
					if hs[i].Message.PlatformID != hp[i].Message.PlatformID || hs[i].Score != hp[i].Score {
						t.Fatalf("%s %+v hit %d: SQLite %s %v, PostgreSQL %s %v", k, q, i, hs[i].Message.PlatformID, hs[i].Score, hp[i].Message.PlatformID, hp[i].Score)
					}
				}
			}
		}
	}
}

// TestPostgresPurgeLeavesNoTerms: a purged message leaves nothing in the
// search index, and the conversation's statistics (N, total length) count
// only what remains.
func TestPostgresPurgeLeavesNoTerms(t *testing.T) {
	p := cfOpenPostgres(t)
	ctx := context.Background()
	k := cfKey("telegram", "1")
	cfAppend(t, p, cfUser(k, "1", "secret lisbon plans", cfT0), cfBot(k, "1", "noted, lisbon", cfT0.Add(time.Second)),
		cfUser(k, "2", "the piano is heavy", cfT0.Add(48*time.Hour)))
	terms := func(word string) int {
		t.Helper()
		var n int
		if err := p.pool.QueryRow(ctx, `SELECT count(*) FROM message_terms WHERE term = $1`, []byte(porterStem(word))).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	stats := func() (docs, tokens int64) {
		t.Helper()
		if err := p.pool.QueryRow(ctx, `SELECT search_docs, search_tokens FROM conversations WHERE key = $1`, k.String()).Scan(&docs, &tokens); err != nil {
			t.Fatal(err)
		}
		return
	}
	if n := terms("lisbon"); n != 2 {
		t.Fatalf("lisbon indexed in %d messages, want 2", n)
	}
	if d, tk := stats(); d != 3 || tk != (3+1)+2+(4+1) {
		t.Fatalf("statistics %d messages, %d tokens", d, tk)
	}
	if _, err := p.Purge(ctx, PurgeScope{Owner: k.Owner(), OlderThan: cfT0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if n := terms("lisbon") + terms("secret"); n != 0 {
		t.Fatalf("%d index rows of purged messages remain", n)
	}
	if d, tk := stats(); d != 1 || tk != 5 {
		t.Fatalf("statistics after purge: %d messages, %d tokens, want 1, 5", d, tk)
	}
	if _, err := p.Purge(ctx, PurgeScope{Owner: k.Owner()}); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := p.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM message_terms) + (SELECT count(*) FROM messages) + (SELECT count(*) FROM conversations)`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d rows remain after purging the owner", left)
	}
}
