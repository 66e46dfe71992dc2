package whatsapp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.mau.fi/whatsmeow/proto/waAdv"
	"go.mau.fi/whatsmeow/store/sqlstore"
	"go.mau.fi/whatsmeow/types"

	"github.com/recallbot/recall/memory/pgtest"
)

// TestSessionStoreUpgrade runs whatsmeow's real sqlstore schema upgrade on a
// temporary database file with our SQLite driver, twice (the second open
// finds the schema current), and checks what a login relies on.
func TestSessionStoreUpgrade(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx := context.Background()
	c, err := openSession(ctx, Options{DataDir: dir}, nil)
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
	c, err = openSession(ctx, Options{DataDir: dir}, nil)
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

// TestSessionStoreOnPostgres: with database.url the session store is
// whatsmeow's real sqlstore in PostgreSQL (its postgres dialect through
// pgx's database/sql driver). Replicas that start together upgrade its
// schema once (whatsmeow's upgrade takes no lock: ours does), and a device
// linked through one replica is the session of every other (another
// machine: no data directory in common).
func TestSessionStoreOnPostgres(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	const replicas = 4
	dir := t.TempDir()
	opened := make(chan *sqlstore.Container, replicas)
	errs := make(chan error, replicas)
	for range replicas {
		go func() {
			c, err := openSession(ctx, Options{DataDir: dir, DatabaseURL: url}, nil)
			errs <- err
			opened <- c
		}()
	}
	var cs []*sqlstore.Container
	for range replicas {
		if err := <-errs; err != nil {
			t.Errorf("openSession on PostgreSQL: %v", err)
		}
		if c := <-opened; c != nil {
			cs = append(cs, c)
			t.Cleanup(func() { c.Close() })
		}
	}
	if t.Failed() {
		return
	}
	dev := cs[0].NewDevice()
	dev.ID = &types.JID{User: "4915112345678", Device: 3, Server: types.DefaultUserServer}
	dev.PushName = "Recall"
	dev.Account = &waAdv.ADVSignedDeviceIdentity{Details: []byte{1}, AccountSignature: make([]byte, 64), AccountSignatureKey: make([]byte, 32), DeviceSignature: make([]byte, 64)}
	if err := dev.Save(ctx); err != nil {
		t.Fatalf("saving the linked device: %v", err)
	}
	cli, err := newWhatsmeow(ctx, cs[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	w := &waClient{c: cli}
	if !w.HasSession() || w.Me().PN.User != "4915112345678" {
		t.Errorf("another replica's session: HasSession %v, Me %+v; want the linked device", w.HasSession(), w.Me())
	}
	if _, err := os.Stat(SessionPath(dir)); !os.IsNotExist(err) {
		t.Errorf("a session file was created on PostgreSQL: %v", err)
	}
}
