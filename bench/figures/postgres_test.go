package figures

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/memory/pgtest"
)

// TestPostgresArchive: the archive fixture copied into PostgreSQL holds the
// SQLite fixture's messages, searches alike beside it, and is reused by
// the next run (no second copy).
func TestPostgresArchive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 10,000-message fixture (a minute and a half under -race)")
	}
	base := os.Getenv(pgtest.EnvURL)
	if base == "" {
		t.Skip(pgtest.EnvURL + " is not set")
	}
	t.Setenv("TMPDIR", t.TempDir()) // the SQLite fixture's cache
	ctx := context.Background()
	l := ArchiveLayout{Name: fmt.Sprintf("recall-bench-pgtest-%d", os.Getpid()), Total: 10_000, BigArchived: 2000}
	schema := strings.ReplaceAll(l.Name, "-", "_")
	t.Cleanup(func() { _ = DropPostgresSchema(context.Background(), base, schema) })
	var log strings.Builder
	u, err := PostgresArchive(ctx, base, l, &log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "copying the archive fixture") {
		t.Errorf("first run: no copy announced:\n%s", log.String())
	}
	pg, err := memory.OpenPostgres(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	var n int
	if err := pg.Pool().QueryRow(ctx, `SELECT count(*) FROM messages`).Scan(&n); err != nil || n != l.Total {
		t.Errorf("PostgreSQL holds %d messages (%v), want %d", n, err, l.Total)
	}
	dir, err := ArchiveFixture(ctx, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := memory.Open(ctx, memory.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	pgS, sqS, err := SearchPostgres(ctx, pg, st, BigKey, SearchQueries(30))
	if err != nil {
		t.Fatal(err)
	}
	if len(pgS) != 30 || len(sqS) != 30 || MeanHits(pgS) == 0 || MeanHits(pgS) != MeanHits(sqS) {
		t.Errorf("searches: PostgreSQL %d queries, %.2f hits each; SQLite %d, %.2f", len(pgS), MeanHits(pgS), len(sqS), MeanHits(sqS))
	}
	log.Reset()
	if _, err := PostgresArchive(ctx, base, l, &log); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "copying") {
		t.Errorf("second run copied again:\n%s", log.String())
	}
}

// TestTurnOverheadPostgres: the turn figure's conversation runs on
// PostgreSQL (the fixture copied there once, a fresh clone per run) beside
// SQLite, every turn answered on both; the next run reuses the copy, and a
// run leaves no database of its own behind.
func TestTurnOverheadPostgres(t *testing.T) {
	base := os.Getenv(pgtest.EnvURL)
	if base == "" {
		t.Skip(pgtest.EnvURL + " is not set")
	}
	t.Setenv("TMPDIR", t.TempDir()) // the SQLite fixture's cache
	ctx := context.Background()
	const archived = 260 // a fixture no other run makes
	name := strings.ReplaceAll(turnFixtureName(archived), "-", "_")
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the test: the copy it made
		if _, err := admin.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("dropping %s: %v", name, err)
		}
		_ = admin.Close(context.Background())
	})
	if _, err := admin.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil { // left by an interrupted run
		t.Fatal(err)
	}
	var log strings.Builder
	o := TurnOptions{Archived: archived, Turns: 6, Warmup: 2, Progress: &log}
	res, err := TurnOverheadPostgres(ctx, base, o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "copying the turn fixture") {
		t.Errorf("first run: no copy announced:\n%s", log.String())
	}
	if len(res.Postgres) != 6 || len(res.SQLite) != 6 || len(res.PostgresAsm) != 6 || len(res.SQLiteAsm) != 6 {
		t.Errorf("turns measured: PostgreSQL %d (%d assemblies), SQLite %d (%d)", len(res.Postgres), len(res.PostgresAsm), len(res.SQLite), len(res.SQLiteAsm))
	}
	log.Reset()
	if _, err := TurnOverheadPostgres(ctx, base, o); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "copying") {
		t.Errorf("second run copied again:\n%s", log.String())
	}
	var left []string
	rows, err := admin.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE $1`, name+"_run_%")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		_ = rows.Scan(&n)
		left = append(left, n)
	}
	if rows.Close(); len(left) > 0 {
		t.Errorf("run databases left behind: %v", left)
	}
}
