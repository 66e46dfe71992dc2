package whatsapp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.mau.fi/whatsmeow/proto/waWa6"
	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/types"

	"github.com/recallbot/recall/pipeline"
)

// payloads builds the login and the registration payloads whatsmeow would
// send now, from a real device of a real session store.
func payloads(t *testing.T) (login, register *waWa6.ClientPayload) {
	t.Helper()
	c, err := openSession(context.Background(), Options{DataDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	dev := c.NewDevice()
	register = dev.GetClientPayload()
	dev.ID = &types.JID{User: botPhone, Server: types.DefaultUserServer}
	login = dev.GetClientPayload()
	return login, register
}

// payloadVersion is the version inside a payload.
func payloadVersion(p *waWa6.ClientPayload) store.WAVersionContainer {
	av := p.GetUserAgent().GetAppVersion()
	return store.WAVersionContainer{av.GetPrimary(), av.GetSecondary(), av.GetTertiary()}
}

// runUntilConnected starts an adapter on a fake client and waits for its
// login; the version is chosen by then.
func runUntilConnected(t *testing.T, opts Options) *Adapter {
	t.Helper()
	fc := newFakeClient(t)
	opts.Client = fc
	a, err := New(opts, func(pipeline.Inbound, pipeline.Sender) error { return nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	fc.waitFor("the login", func() bool { return fc.connected })
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
		a.Close()
	})
	return a
}

// The version fetched at start is the one inside the payloads whatsmeow
// sends (not only its SetWAVersion global, which the payload does not
// read), and the registration's build hash matches it; once WhatsApp
// accepted it, it is cached in the data dir.
func TestFetchedVersionIsInThePayload(t *testing.T) {
	keepVersion(t)
	builtIn := currentClientVersion()
	want := store.WAVersionContainer{2, 3000, builtIn[2] + 12345}
	dir := t.TempDir()
	runUntilConnected(t, Options{DataDir: dir, LatestVersion: func(context.Context) (store.WAVersionContainer, error) { return want, nil }})
	login, register := payloads(t)
	if got := payloadVersion(login); got != want {
		t.Errorf("the login payload carries %s, want %s (built in: %s)", got, want, builtIn)
	}
	if got := payloadVersion(register); got != want {
		t.Errorf("the registration payload carries %s, want %s", got, want)
	}
	if h := want.Hash(); string(register.GetDevicePairingData().GetBuildHash()) != string(h[:]) {
		t.Error("the registration's build hash is not the new version's")
	}
	b, err := os.ReadFile(filepath.Join(dir, VersionFile))
	if err != nil || strings.TrimSpace(string(b)) != want.String() {
		t.Errorf("cached version %q (%v), want %s", b, err, want)
	}
}

// When web.whatsapp.com cannot be reached, the last version WhatsApp
// accepted is used.
func TestCachedVersionWhenTheFetchFails(t *testing.T) {
	keepVersion(t)
	dir := t.TempDir()
	cached := store.WAVersionContainer{2, 3000, 1029999999}
	if err := os.WriteFile(filepath.Join(dir, VersionFile), []byte(cached.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runUntilConnected(t, Options{DataDir: dir, LatestVersion: func(context.Context) (store.WAVersionContainer, error) {
		return store.WAVersionContainer{}, errors.New("dial tcp: lookup web.whatsapp.com: no such host")
	}})
	if login, _ := payloads(t); payloadVersion(login) != cached {
		t.Errorf("the payload carries %s, want the cached %s", payloadVersion(login), cached)
	}
}

// whatsapp.client_version forces the version; nothing is fetched.
func TestForcedVersion(t *testing.T) {
	keepVersion(t)
	forced := store.WAVersionContainer{2, 3000, 1031234567}
	runUntilConnected(t, Options{DataDir: t.TempDir(), ClientVersion: " 2.3000.1031234567 ", LatestVersion: func(context.Context) (store.WAVersionContainer, error) {
		t.Error("fetched a version although one is forced")
		return store.WAVersionContainer{}, errors.New("no")
	}})
	if login, _ := payloads(t); payloadVersion(login) != forced {
		t.Errorf("the payload carries %s, want the forced %s", payloadVersion(login), forced)
	}
	for _, bad := range []string{"2.3000", "latest", "0.0.0", "2.3000.x"} {
		if _, err := New(Options{Client: newFakeClient(t), ClientVersion: bad}, func(pipeline.Inbound, pipeline.Sender) error { return nil }, nil); err == nil || !strings.Contains(err.Error(), "whatsapp.client_version") {
			t.Errorf("client_version %q: %v, want an error naming the key", bad, err)
		}
	}
}
