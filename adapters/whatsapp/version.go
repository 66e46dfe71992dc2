package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/store"
)

// VersionFile, in data.dir, holds the last WhatsApp Web version WhatsApp
// accepted a login with ("2.3000.1031234567"), used when the current one
// cannot be fetched.
const VersionFile = "whatsapp-version"

// versionTimeout bounds fetching the current version from web.whatsapp.com.
const versionTimeout = 15 * time.Second

// LatestVersionFunc returns WhatsApp Web's current version.
type LatestVersionFunc func(ctx context.Context) (store.WAVersionContainer, error)

// fetchLatestVersion asks web.whatsapp.com for its current version
// (whatsmeow.GetLatestVersion), bounded by versionTimeout.
func fetchLatestVersion(ctx context.Context) (store.WAVersionContainer, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	v, err := whatsmeow.GetLatestVersion(ctx, &http.Client{Timeout: versionTimeout})
	if err != nil {
		return store.WAVersionContainer{}, err
	}
	return *v, nil
}

// versionMu guards whatsmeow's process-wide version settings.
var versionMu sync.Mutex

// setClientVersion makes v the version whatsmeow presents to WhatsApp. The
// login and registration payloads are clones of store.BaseClientPayload,
// whose AppVersion was copied from the built-in version when the library
// loaded, so store.SetWAVersion alone (which sets the registration's build
// hash) changes nothing that is sent: both are set.
func setClientVersion(v store.WAVersionContainer) {
	versionMu.Lock()
	defer versionMu.Unlock()
	store.SetWAVersion(v)
	store.BaseClientPayload.UserAgent.AppVersion = v.ProtoAppVersion()
}

// currentClientVersion is the version the next login presents.
func currentClientVersion() store.WAVersionContainer {
	versionMu.Lock()
	defer versionMu.Unlock()
	av := store.BaseClientPayload.GetUserAgent().GetAppVersion()
	return store.WAVersionContainer{av.GetPrimary(), av.GetSecondary(), av.GetTertiary()}
}

// ParseClientVersion parses whatsapp.client_version: three dot-separated
// numbers, "2.3000.1031234567".
func ParseClientVersion(s string) (store.WAVersionContainer, error) {
	v, err := store.ParseVersion(strings.TrimSpace(s))
	if err != nil || v.IsZero() {
		return store.WAVersionContainer{}, fmt.Errorf("%q is not a WhatsApp Web version (three numbers, like 2.3000.1031234567)", s)
	}
	return v, nil
}

// versions picks the WhatsApp Web version the client presents: the one an
// operator forced (whatsapp.client_version), else the current one fetched
// from web.whatsapp.com, else the last one WhatsApp accepted (cached in the
// data dir), else whatsmeow's built-in one.
type versions struct {
	forced store.WAVersionContainer // zero: not forced
	latest LatestVersionFunc        // nil: not fetched (a test client)
	dir    string                   // where VersionFile is; "" for none
	log    *slog.Logger
}

// pick sets the version for the next login and returns it with where it
// came from.
func (v versions) pick(ctx context.Context) (store.WAVersionContainer, string) {
	if !v.forced.IsZero() {
		setClientVersion(v.forced)
		return v.forced, "whatsapp.client_version"
	}
	if v.latest != nil {
		got, err := v.latest(ctx)
		if err == nil && !got.IsZero() {
			setClientVersion(got)
			return got, "web.whatsapp.com"
		}
		v.log.Warn("fetching the current WhatsApp Web version failed; using the last one that worked", "err", err)
	}
	if cached, err := v.cached(); err == nil {
		setClientVersion(cached)
		return cached, VersionFile
	} else if !errors.Is(err, os.ErrNotExist) {
		v.log.Warn("reading the cached WhatsApp Web version", "err", err)
	}
	return currentClientVersion(), "built in"
}

// refresh handles a 405: it fetches the current version and sets it when
// it differs from the one rejected; false when there is nothing new to try.
func (v versions) refresh(ctx context.Context, rejected store.WAVersionContainer) (store.WAVersionContainer, bool, error) {
	if !v.forced.IsZero() || v.latest == nil {
		return rejected, false, nil
	}
	got, err := v.latest(ctx)
	if err != nil {
		return rejected, false, fmt.Errorf("fetching the current WhatsApp Web version: %w", err)
	}
	if got.IsZero() || got == rejected {
		return rejected, false, nil
	}
	setClientVersion(got)
	return got, true, nil
}

// cached reads the last version WhatsApp accepted.
func (v versions) cached() (store.WAVersionContainer, error) {
	if v.dir == "" {
		return store.WAVersionContainer{}, os.ErrNotExist
	}
	b, err := os.ReadFile(filepath.Join(v.dir, VersionFile))
	if err != nil {
		return store.WAVersionContainer{}, err
	}
	return ParseClientVersion(string(b))
}

// remember caches the version WhatsApp just accepted a login with.
func (v versions) remember(ver store.WAVersionContainer) {
	if v.dir == "" || ver.IsZero() {
		return
	}
	if cached, err := v.cached(); err == nil && cached == ver {
		return
	}
	path := filepath.Join(v.dir, VersionFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(ver.String()+"\n"), 0o600); err == nil {
		err = os.Rename(tmp, path)
		if err == nil {
			return
		}
	}
	v.log.Debug("caching the WhatsApp Web version failed", "path", path)
}

// OutdatedError is a login WhatsApp keeps refusing with 405 "client
// outdated": Version is the one it refused. It matches ErrOutdated.
type OutdatedError struct {
	Version store.WAVersionContainer
	Forced  bool // the version came from whatsapp.client_version
	Cause   error
}

func (e *OutdatedError) Error() string {
	what := "set whatsapp.client_version (RECALL_WHATSAPP_CLIENT_VERSION) to the current WhatsApp Web version " +
		"(see README, \"WhatsApp says 405\") and restart, or upgrade Recall"
	if e.Forced {
		what = "whatsapp.client_version is set to this version: set it to the current WhatsApp Web version " +
			"(see README, \"WhatsApp says 405\") or remove it so the current one is fetched, and restart"
	}
	msg := fmt.Sprintf("whatsapp: WhatsApp rejects client version %s (405 client outdated); %s", e.Version, what)
	if e.Cause != nil {
		msg += fmt.Sprintf(" (%v)", e.Cause)
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrOutdated) hold.
func (e *OutdatedError) Unwrap() error { return ErrOutdated }
