package whatsapp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionStoreUpgrade runs whatsmeow's real sqlstore schema upgrade on a
// temporary database file with our SQLite driver, twice (the second open
// finds the schema current), and checks what a login relies on.
func TestSessionStoreUpgrade(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx := context.Background()
	c, err := openSession(ctx, dir, nil)
	if err != nil {
		t.Fatalf("openSession: %v", err)
	}
	st, err := os.Stat(SessionPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o600 {
		t.Errorf("session file mode = %o, want 600", perm)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("data dir mode = %v (%v), want 700", st.Mode().Perm(), err)
	}
	devs, err := c.GetAllDevices(ctx)
	if err != nil {
		t.Fatalf("GetAllDevices: %v", err)
	}
	if len(devs) != 0 {
		t.Fatalf("a new store holds %d devices", len(devs))
	}
	cli, err := newWhatsmeow(ctx, c, nil)
	if err != nil {
		t.Fatalf("newWhatsmeow: %v", err)
	}
	w := &waClient{c: cli}
	if w.HasSession() {
		t.Error("HasSession on an empty store")
	}
	if me := w.Me(); me.PN.User != "" || me.LID.User != "" {
		t.Errorf("Me on an empty store = %+v", me)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Opening again: the schema is current, nothing to do, no error.
	c, err = openSession(ctx, dir, nil)
	if err != nil {
		t.Fatalf("second openSession: %v", err)
	}
	c.Close()
}

func TestSessionDSN(t *testing.T) {
	dsn := sessionDSN("/data dir/whatsapp.db")
	for _, want := range []string{"file:/data%20dir/whatsapp.db?", "foreign_keys%281%29", "busy_timeout%2810000%29", "journal_mode%28wal%29", "_txlock=immediate"} {
		if !strings.Contains(dsn, want) {
			t.Errorf("DSN %q lacks %q", dsn, want)
		}
	}
}
