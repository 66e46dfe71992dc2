package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/recallbot/recall/access"
	"github.com/recallbot/recall/pipeline"
)

// copySource fills a data directory's store as a bot that ran for a while
// leaves it: three owners (one on a JSON file), archived messages under a
// level-1 and a level-2 summary, notes, a fact, settings, a day's usage, an
// access decision and a handled id.
func copySource(t *testing.T, dir string) *Store {
	t.Helper()
	ctx := context.Background()
	s := openStore(t, dir)
	keys := []pipeline.Key{{Channel: "telegram", Chat: "1"}, {Channel: "telegram", Chat: "-200", Thread: "5"}, {Channel: "whatsapp", Chat: "4915@s.whatsapp.net"}}
	must(t, s.PutSettings(ctx, Settings{Owner: keys[2].Owner(), Storage: StorageJSON, Threshold: 7, MemoryEnabled: true}))
	must(t, s.PutSettings(ctx, Settings{Owner: keys[0].Owner(), Storage: StorageSQLite, Threshold: 12, MemoryEnabled: true, FactsOff: true}))
	for ki, k := range keys {
		for i := range 30 {
			must(t, s.Enqueue(exchange(k, i, fmt.Sprintf("message %d of chat %d about the lighthouse", i, ki), "noted "+fmt.Sprint(i))...))
		}
		must(t, s.Flush(ctx))
		act, err := s.Active(ctx, k)
		must(t, err)
		a, err := s.Archive(ctx, k, ids(act[:10]), Summary{Text: "first part of chat " + fmt.Sprint(ki)}, 5)
		must(t, err)
		b, err := s.Archive(ctx, k, ids(act[10:20]), Summary{Text: "second part"}, 5)
		must(t, err)
		_, err = s.Fold(ctx, k, []int64{a.ID, b.ID}, Summary{Level: 2, Text: "both parts of chat " + fmt.Sprint(ki)})
		must(t, err)
		must(t, s.Remember(ctx, k.Owner(), "place", "the lighthouse of chat "+fmt.Sprint(ki)))
		_, _, err = s.AddFact(ctx, k.Owner(), Fact{Content: "likes lighthouses " + fmt.Sprint(ki), Key: k.String(), Sources: []string{"3"}})
		must(t, err)
	}
	must(t, s.AddUsage(ctx, "telegram:1", time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), 1234))
	must(t, s.PutAccessRule(ctx, access.Rule{UserID: "telegram:1", Allowed: true, By: "admin"}))
	_, err := s.MarkHandled(ctx, keys[0], "99")
	must(t, err)
	return s
}

// TestCopyToPostgres: `bot migrate --to postgres://…` copies a data
// directory (SQLite and a JSON file) into PostgreSQL: every owner reads back
// the same (export), the counts are those of the source, the side tables
// follow, and a second run copies nothing again.
func TestCopyToPostgres(t *testing.T) {
	ctx := context.Background()
	src := copySource(t, t.TempDir())
	url := pgTestURL(t)
	dst, err := OpenPostgres(ctx, url)
	must(t, err)
	t.Cleanup(func() { dst.Close() })

	owners, err := src.Owners(ctx)
	must(t, err)
	before := map[string]OwnerData{}
	for _, o := range owners {
		if before[o], err = src.Export(ctx, o, nil); err != nil {
			t.Fatal(err)
		}
	}
	wa := pipeline.Key{Channel: "whatsapp", Chat: "4915@s.whatsapp.net"}
	jsonFile := src.json.Path(wa.Owner())

	var calls int
	rep, err := CopyToPostgres(ctx, src, dst, func(done, total, msgs int) { calls++ })
	must(t, err)
	want := CopyCounts{Owners: 3, Conversations: 3, Messages: 180, Summaries: 9, Notes: 3, Facts: 3, Settings: 2, Access: 1, Usage: 1, Handled: 1}
	if rep.Source != want || rep.Copied != 3 || rep.Skipped != 0 || rep.Retired != 1 || calls != 3 {
		t.Errorf("report %+v (progress told %d times), want source %+v, 3 copied, 1 JSON file retired", rep, calls, want)
	}
	// The JSON user's file no longer answers for them on this machine (it
	// would, beside the database), and is kept under another name.
	if _, err := os.Stat(jsonFile); !os.IsNotExist(err) {
		t.Errorf("the JSON file is still in place (%v)", err)
	}
	if _, err := os.Stat(jsonFile + JSONRetiredSuffix); err != nil {
		t.Errorf("the JSON file was not kept: %v", err)
	}
	if src.json.Has(wa.Owner()) {
		t.Error("the JSON backend still has the owner")
	}
	// The database reads back as the data directory did, through a store
	// on it (another replica).
	pgs := openStoreOn(t, t.TempDir(), url)
	for _, o := range owners {
		a := before[o]
		b, err := pgs.Export(ctx, o, nil)
		must(t, err)
		ca, fa := copyFingerprint(a)
		cb, fb := copyFingerprint(b)
		if ca != cb || fa != fb {
			t.Errorf("%s: PostgreSQL has %+v, the source %+v", o, cb, ca)
		}
		if b.Settings != nil && b.Settings.Storage != StorageSQLite {
			t.Errorf("%s: storage %q in PostgreSQL, want the database", o, b.Settings.Storage)
		}
	}
	if hits, err := pgs.Search(ctx, wa, Query{Text: "lighthouse", ArchivedOnly: true}); err != nil || len(hits) == 0 {
		t.Errorf("the JSON user's archive is not searchable in PostgreSQL: %v, %v", hits, err)
	}
	sums, err := pgs.Summaries(ctx, wa, false)
	must(t, err)
	for _, sm := range sums {
		if sm.Level == 1 {
			if prov, err := pgs.Provenance(ctx, wa, sm.ID); err != nil || len(prov) != 10 {
				t.Errorf("summary %q traces to %d messages (%v), want 10", sm.Text, len(prov), err)
			}
		}
	}
	if n, err := pgs.Usage(ctx, "telegram:1", time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)); err != nil || n != 1234 {
		t.Errorf("usage in PostgreSQL = %d, %v; want 1234", n, err)
	}
	if ok, err := pgs.Handled(ctx, pipeline.Key{Channel: "telegram", Chat: "1"}, "99"); err != nil || !ok {
		t.Errorf("the handled id did not follow (%v)", err)
	}
	if rules, err := pgs.AccessRules(ctx); err != nil || len(rules) != 1 || !rules[0].Allowed {
		t.Errorf("access decisions in PostgreSQL = %+v, %v", rules, err)
	}

	again, err := CopyToPostgres(ctx, src, dst, nil)
	must(t, err)
	if again.Copied != 0 || again.Skipped != 2 || again.Retired != 0 || again.Source.Messages != 120 {
		t.Errorf("second run %+v, want nothing copied again (2 owners there, the JSON one moved)", again)
	}
	if n, _ := pgs.Usage(ctx, "telegram:1", time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)); n != 1234 {
		t.Errorf("usage after a second run = %d, want 1234 (not added twice)", n)
	}
}

// TestCopyToPostgresResumes: a copy interrupted after its first owner
// leaves that owner whole in PostgreSQL and no other; the next run skips it
// and copies the rest.
func TestCopyToPostgresResumes(t *testing.T) {
	ctx := context.Background()
	src := copySource(t, t.TempDir())
	dst, err := OpenPostgres(ctx, pgTestURL(t))
	must(t, err)
	t.Cleanup(func() { dst.Close() })

	cut, cancel := context.WithCancel(ctx)
	_, err = CopyToPostgres(cut, src, dst, func(done, total, msgs int) {
		if done == 1 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted copy: %v, want context.Canceled", err)
	}
	owners, err := dst.Owners(ctx)
	must(t, err)
	if len(owners) != 1 {
		t.Fatalf("after the interruption PostgreSQL holds %v, want the first owner only", owners)
	}
	rep, err := CopyToPostgres(ctx, src, dst, nil)
	must(t, err)
	if rep.Skipped != 1 || rep.Copied != 2 || rep.Source.Messages != 180 {
		t.Errorf("resumed copy %+v, want 1 skipped, 2 copied, 180 messages", rep)
	}
}

// TestCopyToPostgresRefusesOtherData: a database that holds other data for
// an owner is not silently merged into a copy that reads back different.
func TestCopyToPostgresRefusesOtherData(t *testing.T) {
	ctx := context.Background()
	src := copySource(t, t.TempDir())
	dst, err := OpenPostgres(ctx, pgTestURL(t))
	must(t, err)
	t.Cleanup(func() { dst.Close() })
	k := pipeline.Key{Channel: "telegram", Chat: "1"}
	if _, err := dst.Append(ctx, exchange(k, 500, "written on PostgreSQL already", "ok")); err != nil {
		t.Fatal(err)
	}
	_, err = CopyToPostgres(ctx, src, dst, nil)
	var mm *CopyMismatchError
	if !errors.As(err, &mm) || mm.Owner != k.Owner() || mm.Dest.Messages != mm.Source.Messages+2 {
		t.Fatalf("copy onto other data: %v, want a mismatch for %s with 2 more messages", err, k.Owner())
	}
}

// TestCopyToPostgresInParts: a conversation bigger than a part is copied in
// several transactions that add up to it — messages, archive, summaries
// and their provenance — and a repeated part adds nothing.
func TestCopyToPostgresInParts(t *testing.T) {
	ctx := context.Background()
	src := copySource(t, t.TempDir())
	owners, err := src.Owners(ctx)
	must(t, err)
	before := map[string]OwnerData{}
	for _, o := range owners {
		if before[o], err = src.Export(ctx, o, nil); err != nil {
			t.Fatal(err)
		}
	}
	d := before["telegram:1"]
	parts := copyParts(d, 7)
	if len(parts) != 9 || len(parts[0].Conversations[0].Summaries) != 3 || len(parts[8].Conversations[0].Messages) != 4 {
		t.Fatalf("60 messages in parts of 7: %d parts, want 9 (the first with the 3 summaries, the last with 4 messages)", len(parts))
	}
	dst, err := OpenPostgres(ctx, pgTestURL(t))
	must(t, err)
	t.Cleanup(func() { dst.Close() })
	if _, err := dst.Import(ctx, parts[3]); err != nil { // a part copied before an interruption
		t.Fatal(err)
	}
	rep, err := copyToPostgres(ctx, src, dst, nil, 7)
	must(t, err)
	if rep.Copied != 3 || rep.Source.Messages != 180 {
		t.Errorf("report %+v, want 3 owners and 180 messages copied", rep)
	}
	for _, o := range owners {
		got, err := dst.Export(ctx, o, nil)
		must(t, err)
		ca, fa := copyFingerprint(before[o])
		cb, fb := copyFingerprint(got)
		if ca != cb || fa != fb {
			t.Errorf("%s: PostgreSQL has %+v, the source %+v", o, cb, ca)
		}
	}
	k := pipeline.Key{Channel: "telegram", Chat: "1"}
	sums, err := dst.Summaries(ctx, k, false)
	must(t, err)
	for _, sm := range sums {
		if sm.Level == 1 {
			if prov, err := dst.Provenance(ctx, k, sm.ID); err != nil || len(prov) != 10 {
				t.Errorf("summary %q traces to %d messages (%v), want 10", sm.Text, len(prov), err)
			}
		}
	}
}
