package figures

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// PostgresSchema returns a URL of base whose connections use the schema
// name (created when missing; emptied first when fresh). The figures keep
// their PostgreSQL data in schemas of their own, so any server will do.
func PostgresSchema(ctx context.Context, base, name string, fresh bool) (string, error) {
	c, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer func() { _ = c.Close(context.Background()) }()
	ident := pgx.Identifier{name}.Sanitize()
	if fresh {
		if _, err := c.Exec(ctx, `DROP SCHEMA IF EXISTS `+ident+` CASCADE`); err != nil {
			return "", fmt.Errorf("dropping schema %s: %w", name, err)
		}
	}
	if _, err := c.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+ident); err != nil {
		return "", fmt.Errorf("creating schema %s: %w", name, err)
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// DropPostgresSchema drops a schema PostgresSchema made.
func DropPostgresSchema(ctx context.Context, base, name string) error {
	c, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close(context.Background()) }()
	_, err = c.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`)
	return err
}

// PostgresArchive is the archive fixture l in PostgreSQL: the SQLite
// fixture (ArchiveFixture) copied by `bot migrate --to`'s code
// (memory.CopyToPostgres) into a schema named for it on the server at base,
// then vacuumed and analyzed as autovacuum leaves a database. The copy is
// resumable, so an interrupted build goes on where it stopped; a finished
// one is recorded in the schema (with what it was built from: a copy made
// with other migrations is built again) and reused. It returns the schema's
// URL.
func PostgresArchive(ctx context.Context, base string, l ArchiveLayout, progress io.Writer) (string, error) {
	dir, err := ArchiveFixture(ctx, l, progress)
	if err != nil {
		return "", err
	}
	schema := strings.ReplaceAll(l.Name, "-", "_")
	u, err := PostgresSchema(ctx, base, schema, false)
	if err != nil {
		return "", err
	}
	p, err := memory.OpenPostgres(ctx, u)
	if err != nil {
		return "", err
	}
	defer func() { _ = p.Close() }()
	// What the copy was made from: the SQLite fixture's stamp (its
	// migrations and index format) and PostgreSQL's schema version.
	sqStamp, err := os.ReadFile(filepath.Join(dir, "schema.stamp"))
	if err != nil {
		return "", err
	}
	pv, err := p.SchemaVersion(ctx)
	if err != nil {
		return "", err
	}
	want := fmt.Sprintf("%s pg%d", strings.TrimSpace(string(sqStamp)), pv)
	var got string
	err = p.Pool().QueryRow(ctx, `SELECT stamp FROM bench_fixture_done`).Scan(&got)
	switch {
	case err == nil && got == want:
		return u, nil
	case err == nil: // built from another schema: build again
		_ = p.Close()
		fmt.Fprintf(progress, "  the PostgreSQL copy of the fixture was made with other migrations: rebuilding\n")
		if u, err = PostgresSchema(ctx, base, schema, true); err != nil {
			return "", err
		}
		if p, err = memory.OpenPostgres(ctx, u); err != nil {
			return "", err
		}
	}
	if _, err := p.Pool().Exec(ctx, `DROP TABLE IF EXISTS bench_fixture_done`); err != nil { // an older record
		return "", err
	}
	fmt.Fprintf(progress, "  copying the archive fixture (%s messages) into PostgreSQL schema %s, once (resumable)\n", l, schema)
	st, err := memory.Open(ctx, memory.Options{Dir: dir})
	if err != nil {
		return "", err
	}
	defer st.Close(context.Background())
	start, last := time.Now(), time.Now()
	rep, err := memory.CopyToPostgres(ctx, st, p, func(done, total, msgs int) {
		if time.Since(last) > 10*time.Second || done == total {
			last = time.Now()
			fmt.Fprintf(progress, "    %d/%d conversations' owners, %d messages, %s\n", done, total, msgs, time.Since(start).Round(time.Second))
		}
	})
	if err != nil {
		return "", fmt.Errorf("copying the archive fixture into PostgreSQL: %w", err)
	}
	if _, err := p.Pool().Exec(ctx, `VACUUM ANALYZE`); err != nil {
		return "", err
	}
	if _, err := p.Pool().Exec(ctx, `CREATE TABLE bench_fixture_done (stamp TEXT NOT NULL, messages BIGINT NOT NULL)`); err != nil {
		return "", err
	}
	if _, err := p.Pool().Exec(ctx, `INSERT INTO bench_fixture_done VALUES ($1, $2)`, want, rep.Source.Messages); err != nil {
		return "", err
	}
	return u, nil
}

// SearchPostgres compares archive search on PostgreSQL (pg, the fixture
// copied by PostgresArchive) with SQLite's (st, the same fixture), as the
// bot runs each: every query on both, rotating which goes first, after a
// warm-up of 10. Limit 20, token budget 1,500.
func SearchPostgres(ctx context.Context, pg *memory.Postgres, st *memory.Store, key pipeline.Key, queries []string) (pgS, sqS []SearchSample, err error) {
	q := func(text string) memory.Query {
		return memory.Query{Text: text, ArchivedOnly: true, Limit: 20, TokenBudget: 1500}
	}
	sq := st.SQLite()
	for _, text := range queries[:min(10, len(queries))] {
		if _, err := pg.Search(ctx, key, q(text)); err != nil {
			return nil, nil, err
		}
		if _, err := sq.Search(ctx, key, q(text)); err != nil {
			return nil, nil, err
		}
	}
	run := func(b memory.Backend, qi int, to *[]SearchSample, who string) error {
		t := time.Now()
		h, err := b.Search(ctx, key, q(queries[qi]))
		if err != nil {
			return fmt.Errorf("%s %.40q: %w", who, queries[qi], err)
		}
		*to = append(*to, SearchSample{Query: qi, Took: time.Since(t), Hits: len(h)})
		return nil
	}
	for qi := range queries {
		first, second := func() error { return run(pg, qi, &pgS, "PostgreSQL") }, func() error { return run(sq, qi, &sqS, "SQLite") }
		if qi%2 == 1 {
			first, second = second, first
		}
		if err := first(); err != nil {
			return nil, nil, err
		}
		if err := second(); err != nil {
			return nil, nil, err
		}
	}
	return pgS, sqS, nil
}
