package memory

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/access"
	"github.com/recallbot/recall/pipeline"
)

// openStoreOn opens a Store in dir whose database is PostgreSQL at url.
func openStoreOn(t *testing.T, dir, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Dir: dir, DatabaseURL: url, RetryBase: time.Millisecond, RetryMax: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// openStoreNamed opens a store on the backend a store-level test names:
// "sqlite" and "json" (the per-user storage type its owners get) in dir,
// "postgres" on a fresh schema (its owners' storage type is sqlite: the
// database). It returns the storage type to give the test's owners.
func openStoreNamed(t *testing.T, dir, name string) (*Store, Storage) {
	t.Helper()
	if name == "postgres" {
		return openStoreOn(t, dir, pgTestURL(t)), StorageSQLite
	}
	return openStore(t, dir), Storage(name)
}

// TestStoreOnPostgres: with database.url set, conversations go to
// PostgreSQL, not to data.dir, and a second process on the same database
// (another machine: its own data.dir) sees them; a per-user JSON file is
// refused with a clear error and nothing moves.
func TestStoreOnPostgres(t *testing.T) {
	ctx := context.Background()
	u := pgTestURL(t)
	a, b := openStoreOn(t, t.TempDir(), u), openStoreOn(t, t.TempDir(), u)
	k := pipeline.Key{Channel: "telegram", Chat: "1"}
	must(t, a.Append(ctx, exchange(k, 1, "we are moving to Lisbon", "lovely")...))
	must(t, a.Append(ctx, exchange(k, 2, "the piano comes too", "of course")...))
	if owners, err := a.SQLite().Owners(ctx); err != nil || len(owners) != 0 {
		t.Fatalf("data.dir/recall.db holds owners %q (%v); want none", owners, err)
	}
	recent, err := b.Recent(ctx, k, 0, 0)
	if err != nil || len(recent) != 4 {
		t.Fatalf("the other process sees %d messages (%v), want 4", len(recent), err)
	}
	if hits, err := b.Search(ctx, k, Query{Text: "lisbon"}); err != nil || len(hits) != 1 || hits[0].Message.Text != "we are moving to Lisbon" {
		t.Fatalf("search from the other process: %+v %v", hits, err)
	}
	if turns, err := b.TurnsSinceSummary(ctx, k); err != nil || turns != 2 {
		t.Fatalf("TurnsSinceSummary = %d, %v; want 2", turns, err)
	}
	owners, err := b.Owners(ctx)
	if err != nil || strings.Join(owners, ",") != k.Owner() {
		t.Fatalf("owners %q %v", owners, err)
	}

	err = a.PutSettings(ctx, Settings{Owner: k.Owner(), Storage: StorageJSON, Threshold: 10, MemoryEnabled: true})
	if !errors.Is(err, ErrNoJSONStorage) {
		t.Fatalf("asking for a JSON file on PostgreSQL: %v", err)
	}
	if a.json.Has(k.Owner()) {
		t.Fatal("a JSON file was written")
	}
	if st, err := a.Settings(ctx, k.Owner()); err != nil || st.Storage != StorageSQLite {
		t.Fatalf("settings after the refusal: %+v %v", st, err)
	}
	if n, _ := b.Recent(ctx, k, 0, 0); len(n) != 4 {
		t.Fatalf("after the refusal the database holds %d messages, want 4", len(n))
	}

	// Memory off: only the recent window is kept.
	if n, err := a.TrimToWindow(ctx, k, time.Time{}, 1); err != nil || n != 2 {
		t.Fatalf("TrimToWindow = %d, %v; want 2", n, err)
	}
	if hits, _ := b.Search(ctx, k, Query{Text: "lisbon"}); len(hits) != 0 {
		t.Fatal("a trimmed message is still found")
	}
}

// TestUnansweredOnPostgres: after a restart, the user messages left
// without a reply are found in PostgreSQL, less those handled otherwise.
func TestUnansweredOnPostgres(t *testing.T) {
	ctx := context.Background()
	s := openStoreOn(t, t.TempDir(), pgTestURL(t))
	tg := pipeline.Key{Channel: "telegram", Chat: "1"}
	wa := pipeline.Key{Channel: "whatsapp", Chat: "2@s.whatsapp.net"}
	now := func(ms []Message) []Message {
		for i := range ms {
			ms[i].Time = time.Now()
		}
		return ms
	}
	must(t, s.Append(ctx, now(exchange(tg, 1, "answered", "yes"))...))
	must(t, s.Append(ctx, now(exchange(tg, 2, "waiting for a reply", "")[:1])...))
	must(t, s.Append(ctx, now(exchange(tg, 3, "the model failed on this one", "")[:1])...))
	if _, err := s.MarkHandled(ctx, tg, "3"); err != nil {
		t.Fatal(err)
	}
	must(t, s.Append(ctx, now(exchange(wa, 4, "other channel", "")[:1])...))
	got, err := s.Unanswered(ctx, "telegram", time.Now().Add(-time.Hour))
	must(t, err)
	if len(got) != 1 || got[0].Text != "waiting for a reply" || got[0].Key != tg {
		t.Fatalf("Unanswered = %+v", got)
	}
	st, err := s.Stats(ctx, time.Now())
	must(t, err)
	names, _ := pgMigrationFiles.ReadDir("pgmigrations")
	if st.Messages != 5 || st.Owners != 2 || st.Senders != 2 || st.SchemaVersion != len(names) {
		t.Fatalf("stats %+v", st)
	}
}

// TestSharedTablesOnPostgres: two processes on one database share the
// access decisions, pairing requests, the daily token quota and the
// handled message ids — a message one of them handled is not handled
// again by the other.
func TestSharedTablesOnPostgres(t *testing.T) {
	ctx := context.Background()
	u := pgTestURL(t)
	a, b := openStoreOn(t, t.TempDir(), u), openStoreOn(t, t.TempDir(), u)
	k := pipeline.Key{Channel: "telegram", Chat: "1"}

	first, err := a.MarkHandled(ctx, k, "42")
	if err != nil || !first {
		t.Fatalf("MarkHandled on a = %v, %v", first, err)
	}
	if first, err := b.MarkHandled(ctx, k, "42"); err != nil || first {
		t.Fatalf("MarkHandled of the same message on b = %v, %v; want not first", first, err)
	}
	if ok, err := b.Handled(ctx, k, "42"); err != nil || !ok {
		t.Fatalf("Handled on b = %v, %v", ok, err)
	}

	now := time.Now()
	must(t, a.AddUsage(ctx, "telegram:7", now, 1000))
	must(t, b.AddUsage(ctx, "telegram:7", now, 500))
	if n, err := a.Usage(ctx, "telegram:7", now); err != nil || n != 1500 {
		t.Fatalf("shared usage = %d, %v; want 1500", n, err)
	}
	if tokens, users, err := b.UsageOn(ctx, now); err != nil || tokens != 1500 || users != 1 {
		t.Fatalf("UsageOn = %d, %d, %v", tokens, users, err)
	}

	must(t, a.PutAccessRule(ctx, access.Rule{UserID: "telegram:7", Allowed: true, By: "telegram:1"}))
	rules, err := b.AccessRules(ctx)
	if err != nil || len(rules) != 1 || !rules[0].Allowed || rules[0].By != "telegram:1" {
		t.Fatalf("access rules on b = %+v, %v", rules, err)
	}
	must(t, a.PutPairingRequest(ctx, access.PairingRequest{UserID: "telegram:8", Code: "ABC123", Name: "Bo", Key: k, Created: now, Expires: now.Add(time.Hour)}))
	reqs, err := b.PairingRequests(ctx)
	if err != nil || len(reqs) != 1 || reqs[0].Code != "ABC123" || reqs[0].Key != k {
		t.Fatalf("pairing requests on b = %+v, %v", reqs, err)
	}
	must(t, b.DeletePairingRequest(ctx, "telegram:8"))
	if reqs, _ := a.PairingRequests(ctx); len(reqs) != 0 {
		t.Fatalf("pairing requests after deleting on b: %+v", reqs)
	}
	var rows int
	if err := a.SQLite().DB().QueryRowContext(ctx, `SELECT (SELECT count(*) FROM handled) + (SELECT count(*) FROM usage) + (SELECT count(*) FROM access)`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("data.dir/recall.db got %d rows (%v); want none", rows, err)
	}
}
