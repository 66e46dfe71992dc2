package memory

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/access"
	"github.com/recallbot/recall/pipeline"
)

// reopen closes s and opens the store in dir again, as a restart does.
func reopen(t *testing.T, s *Store, dir string) *Store {
	t.Helper()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return openStore(t, dir)
}

func TestAccessStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	at := time.Date(2030, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	must(t, s.PutAccessRule(ctx, access.Rule{UserID: "telegram:2", Allowed: true, By: "telegram:1", Updated: at}))
	must(t, s.PutAccessRule(ctx, access.Rule{UserID: "telegram:3", Allowed: true, By: "telegram:1", Updated: at}))
	must(t, s.PutAccessRule(ctx, access.Rule{UserID: "telegram:3", Allowed: false, By: "console:local", Updated: at.Add(time.Hour)}))
	req := access.PairingRequest{UserID: "telegram:4", Name: "Ada", Code: "ABC234", Key: pipeline.Key{Channel: "telegram", Chat: "4"},
		Created: at, Expires: at.Add(24 * time.Hour)}
	must(t, s.PutPairingRequest(ctx, req))
	must(t, s.PutPairingRequest(ctx, access.PairingRequest{UserID: "telegram:5", Code: "XYZ789", Created: at, Expires: at}))
	must(t, s.DeletePairingRequest(ctx, "telegram:5"))
	must(t, s.DeletePairingRequest(ctx, "telegram:nobody"))

	s = reopen(t, s, dir)
	rules, err := s.AccessRules(ctx)
	must(t, err)
	want := []access.Rule{
		{UserID: "telegram:2", Allowed: true, By: "telegram:1", Updated: at},
		{UserID: "telegram:3", Allowed: false, By: "console:local", Updated: at.Add(time.Hour)},
	}
	if len(rules) != len(want) {
		t.Fatalf("AccessRules = %+v, want %+v", rules, want)
	}
	for i := range want {
		if rules[i] != want[i] {
			t.Errorf("rule %d = %+v, want %+v", i, rules[i], want[i])
		}
	}
	reqs, err := s.PairingRequests(ctx)
	must(t, err)
	if len(reqs) != 1 || reqs[0] != req {
		t.Errorf("PairingRequests = %+v, want [%+v]", reqs, req)
	}
	if v, err := s.SQLite().SchemaVersion(ctx); err != nil || v != latestMigration(t) {
		t.Errorf("schema version %d, %v; want %d", v, err, latestMigration(t))
	}
}

// TestAccessSurvivesRestart runs the access stage over a real store: a
// stranger's code, an admin's /allow and /deny, then a restart.
func TestAccessSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	open := func(s *Store) *access.List {
		a := access.New(false, []string{"telegram:10"}, access.WithAdmins("telegram:1"), access.WithStore(s))
		must(t, a.Load(ctx))
		return a
	}
	a := open(s)
	h := pipeline.Chain(pipeline.HandlerFunc(func(context.Context, *pipeline.Turn) error { return nil }), a.Middleware())
	out := &sink{}
	in := pipeline.Inbound{Key: pipeline.Key{Channel: "telegram", Chat: "20"}, SenderID: "20", SenderName: "Bo", Text: "hi"}
	must(t, h.Handle(ctx, &pipeline.Turn{In: in, Out: out}))
	p := a.Pending()
	if len(p) != 1 || !strings.Contains(out.last(), p[0].Code) {
		t.Fatalf("pending %+v after the refusal %q", p, out.last())
	}
	code := p[0].Code

	s = reopen(t, s, dir)
	a = open(s)
	if r, ok := a.Request(code); !ok || r.UserID != "telegram:20" || r.Name != "Bo" || r.Key != in.Key {
		t.Fatalf("after a restart Request(%s) = %+v, %v", code, r, ok)
	}
	must(t, a.Allow(ctx, "telegram:20", "telegram:1"))
	must(t, a.Deny(ctx, "telegram:10", "telegram:1")) // a config entry

	s = reopen(t, s, dir)
	a = open(s)
	if !a.Allowed("telegram:20") || a.Allowed("telegram:10") || len(a.Pending()) != 0 {
		t.Errorf("after a restart: allowed 20=%v 10=%v pending=%+v; want true, false, none",
			a.Allowed("telegram:20"), a.Allowed("telegram:10"), a.Pending())
	}
}

// sink is a Sender that keeps what was sent.
type sink struct{ texts []string }

func (s *sink) Send(_ context.Context, out pipeline.Outbound) (string, error) {
	s.texts = append(s.texts, out.Text)
	return "1", nil
}

func (s *sink) last() string {
	if len(s.texts) == 0 {
		return ""
	}
	return s.texts[len(s.texts)-1]
}

func TestUsagePersistsByUTCDay(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	lisbon := time.FixedZone("UTC-1", -3600)
	late := time.Date(2030, 3, 1, 23, 30, 0, 0, time.UTC)
	must(t, s.AddUsage(ctx, "telegram:1", late, 100))
	must(t, s.AddUsage(ctx, "telegram:1", late.In(lisbon), 50)) // the same UTC day, written in another zone
	must(t, s.AddUsage(ctx, "telegram:2", late, 7))
	must(t, s.AddUsage(ctx, "telegram:1", late, 0))
	must(t, s.AddUsage(ctx, "telegram:1", late.Add(time.Hour), 9)) // the next UTC day

	s = reopen(t, s, dir)
	tests := []struct {
		user string
		at   time.Time
		want int
	}{
		{"telegram:1", late, 150},
		{"telegram:1", time.Date(2030, 3, 1, 0, 0, 0, 0, time.UTC), 150},
		{"telegram:1", late.Add(time.Hour), 9},
		{"telegram:2", late, 7},
		{"telegram:3", late, 0},
	}
	for _, tt := range tests {
		if got, err := s.Usage(ctx, tt.user, tt.at); err != nil || got != tt.want {
			t.Errorf("Usage(%s, %s) = %d, %v; want %d", tt.user, tt.at, got, err, tt.want)
		}
	}
	if tokens, users, err := s.UsageOn(ctx, late); err != nil || tokens != 157 || users != 2 {
		t.Errorf("UsageOn = %d, %d, %v; want 157, 2", tokens, users, err)
	}
}

func TestDiscard(t *testing.T) {
	for _, name := range []string{"sqlite", "json", "postgres"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, storage := openStoreNamed(t, t.TempDir(), name)
			k := pipeline.Key{Channel: "telegram", Chat: "77"}
			must(t, s.PutSettings(ctx, Settings{Owner: k.Owner(), Storage: storage, Threshold: 10, MemoryEnabled: true}))
			must(t, s.Append(ctx, exchange(k, 1, "answered walrus", "yes")...))
			refused := exchange(k, 2, "refused walrus", "")[:1]
			must(t, s.Append(ctx, refused...))

			for _, id := range []string{"1", "nope", ""} {
				if gone, err := s.Discard(ctx, k, id); err != nil || gone {
					t.Errorf("Discard(%q) = %v, %v; want nothing removed", id, gone, err)
				}
			}
			if gone, err := s.Discard(ctx, pipeline.Key{Channel: "telegram", Chat: "78"}, "2"); err != nil || gone {
				t.Errorf("Discard in an unknown conversation = %v, %v", gone, err)
			}
			if gone, err := s.Discard(ctx, k, "2"); err != nil || !gone {
				t.Fatalf("Discard(2) = %v, %v; want removed", gone, err)
			}
			if stored, _, err := s.Lookup(ctx, k, "2"); err != nil || stored {
				t.Errorf("the discarded message is still stored (%v)", err)
			}
			hits, err := s.Search(ctx, k, Query{Text: "walrus"})
			must(t, err)
			if len(hits) != 1 { // the answered question only
				t.Errorf("search finds %d messages, want 1: %+v", len(hits), hits)
			}
			for _, h := range hits {
				if strings.Contains(h.Message.Text, "refused") {
					t.Errorf("search still finds the discarded message")
				}
			}
			un, err := s.Unanswered(ctx, "telegram", time.Time{})
			must(t, err)
			if len(un) != 0 {
				t.Errorf("Unanswered after Discard = %+v", un)
			}
		})
	}
}

func TestStats(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	now := time.Now().UTC()
	a := pipeline.Key{Channel: "telegram", Chat: "1"}
	g := pipeline.Key{Channel: "telegram", Chat: "-100"}
	j := pipeline.Key{Channel: "whatsapp", Chat: "3@s.whatsapp.net"}
	must(t, s.PutSettings(ctx, Settings{Owner: j.Owner(), Storage: StorageJSON, Threshold: 10}))
	must(t, s.Append(ctx, exchange(a, 1, "old", "old answer")...)) // 2026-01-01
	today := exchange(a, 2, "today", "answer")
	today[0].Time, today[1].Time = now, now
	must(t, s.Append(ctx, today...))
	grp := exchange(g, 3, "group", "answer") // sender 7 again: the same person as in a, on telegram
	grp[0].SenderID = "8"
	must(t, s.Append(ctx, grp...))
	js := exchange(j, 4, "json", "answer")
	js[0].Time, js[1].Time = now, now
	must(t, s.Append(ctx, js...))
	must(t, s.AddUsage(ctx, "telegram:7", now, 1200))
	must(t, s.AddUsage(ctx, "telegram:8", now, 34))

	st, err := s.Stats(ctx, now)
	must(t, err)
	want := Stats{Owners: 3, Senders: 3, Messages: 8, MessagesToday: 4, TokensToday: 1234, TokenUsers: 2, JSONOwners: 1, SchemaVersion: latestMigration(t)}
	got := st
	got.DBBytes, got.WALBytes, got.JSONBytes, got.Queue, got.DataDir, got.DayStart = 0, 0, 0, WriteStats{}, "", time.Time{}
	if got != want {
		t.Errorf("Stats = %+v\nwant %+v", got, want)
	}
	if fi, err := os.Stat(filepath.Join(dir, "recall.db")); err != nil || st.DBBytes != fi.Size() || st.DBBytes == 0 {
		t.Errorf("DBBytes = %d, file %v", st.DBBytes, err)
	}
	if st.WALBytes == 0 || st.JSONBytes == 0 || st.Queue.Written == 0 {
		t.Errorf("WAL %d, JSON %d bytes, %d written; want all > 0", st.WALBytes, st.JSONBytes, st.Queue.Written)
	}
	if !st.DayStart.Equal(now.Truncate(24*time.Hour)) || st.DayStart.Hour() != 0 {
		t.Errorf("DayStart = %v", st.DayStart)
	}
}

// latestMigration is the number of the newest embedded migration.
func latestMigration(t *testing.T) int {
	t.Helper()
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil || len(names) == 0 {
		t.Fatal(names, err)
	}
	sort.Strings(names)
	n, err := strconv.Atoi(strings.SplitN(filepath.Base(names[len(names)-1]), "_", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	return n
}
