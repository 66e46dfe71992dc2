// Package pgtest gives tests a PostgreSQL database of their own: a fresh
// schema on the server named by RECALL_TEST_POSTGRES_URL (.ci/postgres
// starts a throwaway server and prints its URL; .ci/run always sets it),
// dropped when the test ends. Without the variable the test is skipped.
// Start gives a test a server of its own instead, configured as it needs
// (TLS, pg_hba.conf, passwords).
package pgtest

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

// EnvURL names the environment variable with the server's URL.
const EnvURL = "RECALL_TEST_POSTGRES_URL"

var seq atomic.Int64

// URL returns a postgres:// URL whose connections use a new, empty schema,
// dropped at the end of t. It skips t when EnvURL is not set.
func URL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		t.Skip(EnvURL + " is not set (run .ci/postgres to start a throwaway PostgreSQL)")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to %s: %v", EnvURL, err)
	}
	defer func() { _ = admin.Close(ctx) }()
	schema := fmt.Sprintf("recall_test_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, seq.Add(1))
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("creating schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer func() { _ = c.Close(context.Background()) }()
		if _, err := c.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvURL, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
