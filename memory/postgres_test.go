package memory

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The PostgreSQL tests run against the server named by
// RECALL_TEST_POSTGRES_URL (.ci/postgres starts a throwaway one; .ci/run
// always sets it). Each test gets a schema of its own, dropped at the end.

var pgSchemaSeq atomic.Int64

// pgTestURL returns a URL whose connections use a fresh, empty schema.
func pgTestURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("RECALL_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("RECALL_TEST_POSTGRES_URL is not set (run .ci/postgres to start a throwaway PostgreSQL)")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to RECALL_TEST_POSTGRES_URL: %v", err)
	}
	defer admin.Close(ctx)
	schema := fmt.Sprintf("recall_test_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, pgSchemaSeq.Add(1))
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("creating schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func cfOpenPostgres(t testing.TB) *Postgres {
	t.Helper()
	p, err := OpenPostgres(context.Background(), pgTestURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
