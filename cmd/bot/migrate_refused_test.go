package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/recallbot/recall/memory/pgtest"
)

// `bot migrate --to postgres://…` goes on past a message PostgreSQL refuses
// (here a constraint of the test's): the message is named on stderr with
// its conversation and the server's reason, the summary counts it, and a
// second run ends the same way instead of failing on it again.
func TestMigrateToPostgresReportsRefusedRows(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	newEnv(t, "", "RECALL_DATABASE_URL="+url).mustRun(t, "", "migrate")
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `ALTER TABLE messages ADD CONSTRAINT no_nutmeg CHECK (position('nutmeg' in text) = 0)`); err != nil {
		t.Fatal(err)
	}
	_ = c.Close(ctx)
	src := newEnv(t, "")
	src.mustRun(t, "", "import", writeJSONFile(t, "export.json", otherConversation()))
	for run := range 2 {
		r := src.mustRun(t, "", "migrate", "--to", url)
		if !strings.Contains(r.Stderr, "could not copy message ") || !strings.Contains(r.Stderr, "of telegram:4242:") || !strings.Contains(r.Stderr, "no_nutmeg") {
			t.Errorf("run %d: want the refused message named on stderr, with its conversation and the reason:\n%s", run, r)
		}
		if !strings.Contains(r.Stdout, "2 messages") || !strings.Contains(r.Stdout, "could not copy 1 rows (1 messages; listed above") {
			t.Errorf("run %d: want 2 messages copied and 1 not in the summary:\n%s", run, r)
		}
	}
}
