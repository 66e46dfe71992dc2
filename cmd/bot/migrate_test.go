package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/memory/pgtest"
)

// `bot migrate` applies the configured database's migrations and says
// which; run again, it has nothing to do. On SQLite (data.dir) and on
// PostgreSQL (database.url).
func TestMigrateApplies(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		env := newEnv(t, "")
		r := env.mustRun(t, "", "migrate")
		if !strings.Contains(r.Stdout, "SQLite") || !strings.Contains(r.Stdout, "applied 0001_init.sql") {
			t.Errorf("first migrate: want the SQLite migrations it applied:\n%s", r)
		}
		r = env.mustRun(t, "", "migrate")
		if !strings.Contains(r.Stdout, "up to date") {
			t.Errorf("second migrate: want up to date:\n%s", r)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		env := newEnv(t, "", "RECALL_DATABASE_URL="+pgtest.URL(t))
		r := env.mustRun(t, "", "migrate")
		if !strings.Contains(r.Stdout, "PostgreSQL: applied 0001_init.sql, 0002_side.sql") {
			t.Errorf("first migrate: want the PostgreSQL migrations it applied:\n%s", r)
		}
		r = env.mustRun(t, "", "migrate")
		if !strings.Contains(r.Stdout, "PostgreSQL: up to date") {
			t.Errorf("second migrate: want up to date:\n%s", r)
		}
	})
}

// `bot migrate --to postgres://…` copies a data directory — the SQLite file
// and a user's JSON file — into PostgreSQL: a bot on the database (another
// machine: an empty data directory) exports the same messages; a second run
// copies nothing again; a bad target is a usage error.
func TestMigrateToPostgres(t *testing.T) {
	url := pgtest.URL(t)
	src := newEnv(t, "")
	e := otherConversation()
	jsonUser := memory.OwnerData{
		Owner:    "telegram:77",
		Settings: &memory.Settings{Owner: "telegram:77", Storage: memory.StorageJSON, Threshold: 9, MemoryEnabled: true},
		Memories: []memory.UserMemory{{Key: "city", Content: "Porto"}},
		Conversations: []memory.ConversationData{{Key: "telegram:77:", Messages: []memory.Message{
			{Role: memory.RoleUser, SenderID: "77", PlatformID: "j1", Text: "my json-stored words", Time: time.Date(2025, 4, 1, 9, 0, 0, 0, time.UTC), Tokens: 4, Active: true},
		}}},
	}
	e.Owners = append(e.Owners, jsonUser)
	src.mustRun(t, "", "import", writeJSONFile(t, "export.json", e))
	before := exportOf(t, src)

	r := src.mustRun(t, "", "migrate", "--to", url)
	if !strings.Contains(r.Stdout, "copied 2 owners (0 were there already)") || !strings.Contains(r.Stdout, "4 messages") {
		t.Errorf("migrate --to: want 2 owners and 4 messages copied:\n%s", r)
	}
	if !strings.Contains(r.Stderr, "copied 2/2 owners") {
		t.Errorf("migrate --to: want its progress on stderr:\n%s", r)
	}
	replica := newEnv(t, "", "RECALL_DATABASE_URL="+url)
	after := exportOf(t, replica)
	for owner, msgs := range before {
		if got := after[owner]; !equalSigs(got, msgs) {
			t.Errorf("%s in PostgreSQL: %v, want %v", owner, got, msgs)
		}
	}
	if len(after) != len(before) {
		t.Errorf("PostgreSQL holds %d owners, the data directory %d", len(after), len(before))
	}

	if !strings.Contains(r.Stdout, "1 per-user JSON files were renamed") {
		t.Errorf("migrate --to: want the JSON user's file named as moved aside:\n%s", r)
	}
	r = src.mustRun(t, "", "migrate", "--to", url)
	if !strings.Contains(r.Stdout, "copied 0 owners (1 were there already)") {
		t.Errorf("second migrate --to: want nothing copied again:\n%s", r)
	}
	if r := src.run(t, "", "migrate", "--to", "mysql://x@y/z"); r.Code != 2 || !strings.Contains(r.Stderr, "postgres://") {
		t.Errorf("migrate --to a non-PostgreSQL URL: want exit 2 naming what is expected:\n%s", r)
	}
	if r := newEnv(t, "").run(t, "", "migrate", "--to", url); r.Code != 1 || !strings.Contains(r.Stderr, "nothing to copy") {
		t.Errorf("migrate --to from an empty data directory: want exit 1, nothing to copy:\n%s", r)
	}
}

// exportOf runs `bot export` and returns each owner's messages.
func exportOf(t *testing.T, env botEnv) map[string][]msgSig {
	t.Helper()
	r := env.mustRun(t, "", "export")
	var e memory.Export
	if err := json.Unmarshal([]byte(r.Stdout), &e); err != nil {
		t.Fatalf("bot export: %v\n%s", err, r)
	}
	out := map[string][]msgSig{}
	for _, d := range e.Owners {
		for _, c := range d.Conversations {
			out[d.Owner] = append(out[d.Owner], sigs(c.Messages)...)
		}
	}
	return out
}

func equalSigs(a, b []msgSig) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// withoutStamp drops the export's exported_at line: the rest of two
// exports of the same data is byte for byte the same.
func withoutStamp(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, `"exported_at":`) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// `bot migrate --from postgres://…` copies a database back into an empty
// data directory: SQLite → PostgreSQL → SQLite exports the same bytes (ids,
// archive, summaries, notes, facts, settings), with a progress line; run
// again it refuses the now full directory, and bad input is a usage error.
func TestMigrateFromPostgres(t *testing.T) {
	url := pgtest.URL(t)
	t0 := time.Date(2025, 5, 2, 8, 0, 0, 0, time.UTC)
	e := otherConversation()
	e.Owners = append(e.Owners, memory.OwnerData{
		Owner:    "telegram:-1009",
		Settings: &memory.Settings{Owner: "telegram:-1009", Storage: memory.StorageSQLite, Threshold: 12, MemoryEnabled: true, Created: t0, Updated: t0},
		Memories: []memory.UserMemory{{Key: "team", Content: "the night shift", Created: t0, Updated: t0}},
		Facts:    []memory.Fact{{Content: "the team meets on Mondays", Key: "telegram:-1009:", Created: t0, Updated: t0}},
		Conversations: []memory.ConversationData{{Key: "telegram:-1009:", TurnsSinceSummary: 1, LastSummary: t0.Add(time.Hour), Messages: []memory.Message{
			{Role: memory.RoleUser, SenderID: "5", SenderName: "Ines", PlatformID: "g1", Text: "the boiler broke again", Time: t0, Tokens: 5, ChunkID: 1},
			{Role: memory.RoleAssistant, ReplyTo: "g1", Text: "noted, the boiler", Time: t0.Add(time.Second), Tokens: 4, ChunkID: 1},
			{Role: memory.RoleUser, SenderID: "6", SenderName: "Rui", PlatformID: "g2", Text: "fixed it", Time: t0.Add(time.Hour), Tokens: 2, Active: true},
		}, Summaries: []memory.Summary{{ID: 1, Level: 1, Text: "Ines reported the broken boiler", Active: true, Sources: []int64{1}, From: t0, To: t0.Add(time.Second), Tokens: 6, Created: t0.Add(time.Hour)}}}},
	})
	src := newEnv(t, "")
	src.mustRun(t, "", "import", writeJSONFile(t, "export.json", e))
	before := src.mustRun(t, "", "export").Stdout
	src.mustRun(t, "", "migrate", "--to", url)

	back := newEnv(t, "")
	r := back.mustRun(t, "", "migrate", "--from", url)
	if !strings.Contains(r.Stdout, "copied 2 owners (0 were there already)") || !strings.Contains(r.Stdout, "6 messages, 1 summaries, 1 notes, 1 facts") {
		t.Errorf("migrate --from: want 2 owners, 6 messages, the summary, note and fact copied:\n%s", r)
	}
	if !strings.Contains(r.Stderr, "copied 2/2 owners") {
		t.Errorf("migrate --from: want its progress on stderr:\n%s", r)
	}
	if after := back.mustRun(t, "", "export").Stdout; withoutStamp(after) != withoutStamp(before) {
		t.Errorf("SQLite → PostgreSQL → SQLite exports other bytes:\n--- before ---\n%s\n--- after ---\n%s", before, after)
	}

	if r := back.run(t, "", "migrate", "--from", url); r.Code != 1 || !strings.Contains(r.Stderr, "not empty") || !strings.Contains(r.Stderr, "2 owners' data in recall.db") {
		t.Errorf("migrate --from into a data directory with data: want exit 1 saying what is there:\n%s", r)
	}
	for _, args := range [][]string{
		{"migrate", "--from", "sqlite:///tmp/x.db"},
		{"migrate", "--from", "postgres:///nohost"},
		{"migrate", "--to", url, "--from", url},
	} {
		if r := newEnv(t, "").run(t, "", args...); r.Code != 2 || !strings.Contains(r.Stderr, "usage: bot migrate") {
			t.Errorf("bot %v: want exit 2 with the usage:\n%s", args, r)
		}
	}
	if r := newEnv(t, "").run(t, "", "migrate", "--help"); !strings.Contains(r.Stderr, "--from postgres://") || !strings.Contains(r.Stderr, "empty") {
		t.Errorf("bot migrate --help: want the way back explained:\n%s", r)
	}
}
