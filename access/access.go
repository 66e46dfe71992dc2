package access

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/recallbot/recall/pipeline"
)

const (
	// maxTold bounds the set of refused users remembered as told. Past it the
	// set starts over: someone may then be told twice, which is harmless.
	maxTold = 10000
	// maxPending bounds the pairing requests waiting for an admin. Past it a
	// stranger is refused without a code (an open invitation to spam the
	// database is not what a private bot wants).
	maxPending = 1000

	// PairingTTL is how long a pairing code stays valid.
	PairingTTL = 24 * time.Hour
	// pairingAlphabet has no 0/O, 1/I/L: a code read aloud or retyped from a
	// screenshot survives.
	pairingAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
	pairingLen      = 6
)

var (
	// ErrCannotDeny is returned by List.Deny for an admin or pipeline.ConsoleUser.
	ErrCannotDeny = errors.New("admins cannot be denied")
	// ErrBadUserID is returned for a user id that is not "channel:id".
	ErrBadUserID = errors.New(`user ids are "channel:id"`)
)

// Rule is an admin's decision about one user, kept across restarts.
type Rule struct {
	UserID  string // "telegram:123456"
	Allowed bool   // false: denied
	By      string // the admin who decided ("" when unknown)
	Updated time.Time
}

// PairingRequest is an unknown user waiting to be let in: they were given
// Code, which an admin approves with /allow CODE until Expires.
type PairingRequest struct {
	UserID  string
	Name    string // their display name when they asked
	Code    string
	Key     pipeline.Key // the private chat they asked from (where they can be told they are in); zero when they asked in a group
	Created time.Time
	Expires time.Time
}

// Store keeps admins' decisions and pairing requests across restarts.
// Methods are called with the turn's or the admin command's context; an error
// leaves the caller to decide (Allow and Deny fail, a new pairing request
// lives in memory only).
type Store interface {
	// AccessRules returns every stored decision, one per user.
	AccessRules(ctx context.Context) ([]Rule, error)
	// PutAccessRule stores a decision, replacing the user's previous one.
	PutAccessRule(ctx context.Context, r Rule) error
	// PairingRequests returns the stored requests, expired ones included.
	PairingRequests(ctx context.Context) ([]PairingRequest, error)
	// PutPairingRequest stores a request, replacing the user's previous one.
	PutPairingRequest(ctx context.Context, r PairingRequest) error
	// DeletePairingRequest removes the user's request; none is not an error.
	DeletePairingRequest(ctx context.Context, userID string) error
}

// List decides who may talk to the bot. Users are named by
// pipeline.Inbound.UserID ("telegram:123456", "whatsapp:4915112345678"). It is safe for
// concurrent use; Allow and Deny take effect for the next message.
//
// Who is let in, first rule that applies:
//
//  1. pipeline.ConsoleUser and the admins (WithAdmins): always; they cannot be denied.
//  2. A user an admin denied (Deny): never, even when listed in the config
//     or when the bot is open. Deny is the later, explicit decision; /allow
//     lifts it.
//  3. A user an admin allowed (Allow) or listed in access.allowed_users: yes.
//  4. Anyone else when the bot is open; otherwise no.
//
// With an Store (WithStore, then Load) the admins' decisions and
// the pairing requests survive restarts; without one they last until the
// process ends. The config file is never changed.
//
// In a group the sender is checked, not the group: an allowed user's message
// in a group is answered, an unknown user's in the same group is not.
type List struct {
	store Store // nil: nothing persisted
	now   func() time.Time
	log   *slog.Logger

	mu      sync.RWMutex
	open    bool                       // anyone may talk
	config  map[string]bool            // access.allowed_users
	admins  map[string]bool            // access.admins, plus pipeline.ConsoleUser
	granted map[string]bool            // allowed by an admin
	denied  map[string]bool            // denied by an admin
	pending map[string]*PairingRequest // by user
	codes   map[string]string          // pairing code → user

	toldMu sync.Mutex
	told   map[string]string // refused user → the code they were told ("" for none)

	refreshEvery time.Duration // 0: the store is read by Load only
	refreshMu    sync.Mutex
	refreshed    time.Time // when the decisions were last read from the store
}

// Option configures New.
type Option func(*List)

// WithAdmins names the admins ("channel:id"): always allowed, never denied,
// and the only users (with pipeline.ConsoleUser) who may run admin commands.
func WithAdmins(admins ...string) Option {
	return func(a *List) {
		for _, u := range admins {
			if u = normalizeUser(u); u != "" {
				a.admins[u] = true
			}
		}
	}
}

// WithStore keeps admins' decisions and pairing requests in s. Call
// Load before the first message to apply what s holds.
func WithStore(s Store) Option { return func(a *List) { a.store = s } }

// WithRefresh rereads the admins' decisions from the store before a
// turn when they were last read more than every ago, and before refusing
// anyone, so that a decision stored by another process (`bot allow`, `bot
// deny` beside the running bot) takes effect: an allow at the user's next
// message, a deny within every.
func WithRefresh(every time.Duration) Option {
	return func(a *List) { a.refreshEvery = every }
}

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option { return func(a *List) { a.now = now } }

// WithLog sets where the list logs what it decides on its own (a stale
// pairing request dropped, a store write that failed). nil discards.
func WithLog(l *slog.Logger) Option {
	return func(a *List) {
		if l != nil {
			a.log = l
		}
	}
}

// New returns an access list. open lets everyone in; otherwise only the
// allowed users ("channel:id"), the admins and pipeline.ConsoleUser may talk. Entries
// are trimmed and their channel lowercased.
func New(open bool, allowed []string, opts ...Option) *List {
	a := &List{
		now:     time.Now,
		log:     slog.New(slog.DiscardHandler),
		open:    open,
		config:  make(map[string]bool, len(allowed)),
		admins:  map[string]bool{pipeline.ConsoleUser: true},
		granted: make(map[string]bool),
		denied:  make(map[string]bool),
		pending: make(map[string]*PairingRequest),
		codes:   make(map[string]string),
		told:    make(map[string]string),
	}
	for _, u := range allowed {
		if u = normalizeUser(u); u != "" {
			a.config[u] = true
		}
	}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Load applies the stored decisions and pairing requests (a no-op without a
// store). Expired requests, and requests of users who are allowed by now, are
// deleted from the store. A decision about an admin is ignored: admins cannot
// be denied. A config entry an admin denied stays denied; that is logged, so
// an operator who added it to access.allowed_users again learns why it has
// no effect.
func (a *List) Load(ctx context.Context) error {
	if a.store == nil {
		return nil
	}
	rules, err := a.store.AccessRules(ctx)
	if err != nil {
		return fmt.Errorf("loading access decisions: %w", err)
	}
	reqs, err := a.store.PairingRequests(ctx)
	if err != nil {
		return fmt.Errorf("loading pairing requests: %w", err)
	}
	now := a.now()
	var stale []string
	a.mu.Lock()
	for _, r := range rules {
		u := normalizeUser(r.UserID)
		switch {
		case u == "" || a.admins[u]:
			continue
		case r.Allowed:
			a.granted[u] = true
			delete(a.denied, u)
		default:
			delete(a.granted, u)
			a.denied[u] = true
			if a.config[u] {
				a.log.Warn("access.allowed_users lists a user an admin denied; they stay denied until an admin sends /allow",
					"user", u, "denied_by", r.By, "denied_at", r.Updated)
			}
		}
	}
	for _, r := range reqs {
		r.UserID = normalizeUser(r.UserID)
		if !now.Before(r.Expires) || a.allowedLocked(r.UserID) || a.denied[r.UserID] || r.Code == "" {
			stale = append(stale, r.UserID)
			continue
		}
		if old := a.pending[r.UserID]; old != nil {
			delete(a.codes, old.Code)
		}
		a.pending[r.UserID] = &r
		a.codes[r.Code] = r.UserID
	}
	a.mu.Unlock()
	a.refreshMu.Lock()
	a.refreshed = now
	a.refreshMu.Unlock()
	for _, u := range stale {
		if err := a.store.DeletePairingRequest(ctx, u); err != nil {
			return fmt.Errorf("deleting the stale pairing request of %s: %w", u, err)
		}
	}
	return nil
}

// refresh applies the decisions in the store when they were last read more
// than refreshEvery ago, or at once when force (a refused user writes: they
// may have just been let in) (WithRefresh): a user allowed or denied
// by another process is let in or shut out, and their pairing request is
// dropped. A failure to read is logged; the decisions known stay.
func (a *List) refresh(ctx context.Context, force bool) {
	if a.store == nil || a.refreshEvery <= 0 {
		return
	}
	now := a.now()
	a.refreshMu.Lock()
	if !force && now.Sub(a.refreshed) < a.refreshEvery {
		a.refreshMu.Unlock()
		return
	}
	a.refreshed = now
	a.refreshMu.Unlock()
	rules, err := a.store.AccessRules(ctx)
	if err != nil {
		a.log.Warn("rereading the access decisions (the ones known stay)", "err", err)
		return
	}
	var changed []Rule
	a.mu.Lock()
	for _, r := range rules {
		u := normalizeUser(r.UserID)
		if u == "" || a.admins[u] || (r.Allowed && a.granted[u]) || (!r.Allowed && a.denied[u]) {
			continue
		}
		if r.Allowed {
			a.granted[u] = true
			delete(a.denied, u)
		} else {
			a.denied[u] = true
			delete(a.granted, u)
		}
		a.dropRequestLocked(u)
		r.UserID = u
		changed = append(changed, r)
	}
	a.mu.Unlock()
	for _, r := range changed {
		a.unmarkTold(r.UserID)
		a.log.Info("applied an access decision made beside the bot", "user", r.UserID, "allowed", r.Allowed, "by", r.By)
	}
}

// Nobody reports whether nobody but the terminal user may talk to the bot:
// it is not open, and no user is listed in access.allowed_users or
// access.admins or was let in by an admin.
func (a *List) Nobody() bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return !a.open && len(a.config) == 0 && len(a.granted) == 0 && len(a.admins) <= 1
}

// normalizeUser trims spaces and lowercases the channel ("Telegram:1" → "telegram:1").
func normalizeUser(u string) string {
	u = strings.TrimSpace(u)
	if channel, id, ok := strings.Cut(u, ":"); ok {
		return strings.ToLower(strings.TrimSpace(channel)) + ":" + strings.TrimSpace(id)
	}
	return u
}

// ParseUserID normalizes a user id typed by a person ("Telegram:123" →
// "telegram:123"). ErrBadUserID unless it is a channel of lowercase letters,
// a colon and an id without spaces.
func ParseUserID(s string) (string, error) {
	u := normalizeUser(s)
	channel, id, ok := strings.Cut(u, ":")
	if !ok || channel == "" || id == "" || strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", fmt.Errorf("%w: %q", ErrBadUserID, s)
	}
	for _, r := range channel {
		if r < 'a' || r > 'z' {
			return "", fmt.Errorf("%w: %q", ErrBadUserID, s)
		}
	}
	return u, nil
}

// Allowed reports whether the user may talk to the bot.
func (a *List) Allowed(userID string) bool {
	userID = normalizeUser(userID)
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.allowedLocked(userID)
}

func (a *List) allowedLocked(u string) bool {
	switch {
	case a.admins[u]:
		return true
	case a.denied[u]:
		return false
	default:
		return a.granted[u] || a.config[u] || a.open
	}
}

// IsAdmin reports whether the user is an admin (access.admins, or
// pipeline.ConsoleUser): they run admin commands and no limit applies to them.
func (a *List) IsAdmin(userID string) bool {
	userID = normalizeUser(userID)
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.admins[userID]
}

// IsOpen reports whether everyone is let in.
func (a *List) IsOpen() bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.open
}

// InConfig reports whether the user is listed in access.allowed_users.
func (a *List) InConfig(userID string) bool {
	userID = normalizeUser(userID)
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.config[userID]
}

// Allow lets the user in, lifting a denial, and drops their pairing request.
// With a store the decision is stored first; when that fails nothing changes
// and the error says so. by names the admin (for the record).
func (a *List) Allow(ctx context.Context, userID, by string) error {
	return a.decide(ctx, userID, by, true)
}

// Deny shuts the user out (see List for how that ranks against the config
// and open mode) and drops their pairing request; they are told once more
// that the bot is private, without a code. ErrCannotDeny for an admin or
// pipeline.ConsoleUser. With a store the decision is stored first; when that fails
// nothing changes.
func (a *List) Deny(ctx context.Context, userID, by string) error {
	return a.decide(ctx, userID, by, false)
}

func (a *List) decide(ctx context.Context, userID, by string, allow bool) error {
	u := normalizeUser(userID)
	if u == "" {
		return fmt.Errorf("%w: empty", ErrBadUserID)
	}
	if !allow && a.IsAdmin(u) {
		return fmt.Errorf("denying %s: %w", u, ErrCannotDeny)
	}
	if a.store != nil {
		r := Rule{UserID: u, Allowed: allow, By: normalizeUser(by), Updated: a.now()}
		if err := a.store.PutAccessRule(ctx, r); err != nil {
			return fmt.Errorf("storing the access decision for %s: %w", u, err)
		}
	}
	a.mu.Lock()
	if allow {
		a.granted[u] = true
		delete(a.denied, u)
	} else {
		a.denied[u] = true
		delete(a.granted, u)
	}
	_, hadRequest := a.pending[u]
	a.dropRequestLocked(u)
	a.mu.Unlock()
	a.unmarkTold(u) // told again if later refused
	if hadRequest && a.store != nil {
		if err := a.store.DeletePairingRequest(ctx, u); err != nil {
			// Harmless: Load drops requests of users decided about.
			a.log.Warn("deleting a pairing request", "user", u, "err", err)
		}
	}
	return nil
}

func (a *List) dropRequestLocked(u string) {
	if r := a.pending[u]; r != nil {
		delete(a.codes, r.Code)
		delete(a.pending, u)
	}
}

// Users lists the allowed users — access.allowed_users and those an admin
// allowed, less those an admin denied — sorted. Admins and pipeline.ConsoleUser are
// not included.
func (a *List) Users() []string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	users := make([]string, 0, len(a.config)+len(a.granted))
	for u := range a.config {
		if !a.denied[u] && !a.admins[u] {
			users = append(users, u)
		}
	}
	for u := range a.granted {
		if !a.config[u] && !a.admins[u] {
			users = append(users, u)
		}
	}
	slices.Sort(users)
	return users
}

// Denied lists the users an admin denied, sorted.
func (a *List) Denied() []string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	users := make([]string, 0, len(a.denied))
	for u := range a.denied {
		users = append(users, u)
	}
	slices.Sort(users)
	return users
}

// Pending lists the pairing requests that have not expired, oldest first.
func (a *List) Pending() []PairingRequest {
	now := a.now()
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]PairingRequest, 0, len(a.pending))
	for _, r := range a.pending {
		if now.Before(r.Expires) {
			out = append(out, *r)
		}
	}
	slices.SortFunc(out, func(x, y PairingRequest) int {
		if c := x.Created.Compare(y.Created); c != 0 {
			return c
		}
		return strings.Compare(x.UserID, y.UserID)
	})
	return out
}

// Request returns the pending, unexpired request with this code (any case,
// spaces and dashes ignored: "abc-234" finds ABC234).
func (a *List) Request(code string) (PairingRequest, bool) {
	code = NormalizeCode(code)
	now := a.now()
	a.mu.RLock()
	defer a.mu.RUnlock()
	u, ok := a.codes[code]
	if !ok {
		return PairingRequest{}, false
	}
	r := a.pending[u]
	if r == nil || !now.Before(r.Expires) {
		return PairingRequest{}, false
	}
	return *r, true
}

// NormalizeCode uppercases a pairing code and drops spaces and dashes.
func NormalizeCode(code string) string {
	return strings.ToUpper(strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return -1
		}
		return r
	}, code))
}

// LooksLikeCode reports whether s has the shape of a pairing code (whatever
// its case), so a mistyped or expired one can be told apart from a user id.
func LooksLikeCode(s string) bool {
	s = NormalizeCode(s)
	if len(s) != pairingLen {
		return false
	}
	letter := false
	for _, r := range s {
		if !strings.ContainsRune(pairingAlphabet, r) {
			return false
		}
		letter = letter || r >= 'A' && r <= 'Z'
	}
	return letter
}

// request returns the user's pending request, creating one (and storing it)
// when they have none or it expired. ok is false when too many requests are
// waiting: the user is then refused without a code.
func (a *List) request(ctx context.Context, in pipeline.Inbound, user string) (PairingRequest, bool) {
	now := a.now()
	a.mu.Lock()
	if r := a.pending[user]; r != nil && now.Before(r.Expires) {
		a.mu.Unlock()
		return *r, true
	}
	var expired []string
	for u, r := range a.pending {
		if !now.Before(r.Expires) {
			a.dropRequestLocked(u)
			if u != user {
				expired = append(expired, u)
			}
		}
	}
	if len(a.pending) >= maxPending {
		a.mu.Unlock()
		a.log.Warn("too many pairing requests waiting; refusing a stranger without a code", "user", user, "waiting", maxPending)
		a.deleteRequests(ctx, expired)
		return PairingRequest{}, false
	}
	code := a.newCodeLocked()
	r := &PairingRequest{UserID: user, Name: in.SenderName, Code: code, Created: now, Expires: now.Add(PairingTTL)}
	if !in.IsGroup {
		r.Key = in.Key
	}
	a.pending[user] = r
	a.codes[code] = user
	req := *r
	a.mu.Unlock()
	a.log.Info("new pairing request: to let this user in, run `bot allow "+code+"` (or an admin sends /allow "+code+")",
		"user", user, "sender_name", in.SenderName, "code", code, "expires", req.Expires.Format(time.RFC3339))
	a.deleteRequests(ctx, expired)
	if a.store != nil {
		if err := a.store.PutPairingRequest(ctx, req); err != nil {
			a.log.Warn("storing a pairing request (it lasts until a restart)", "user", user, "err", err)
		}
	}
	return req, true
}

// deleteRequests deletes expired requests from the store, best effort (Load
// drops the ones left).
func (a *List) deleteRequests(ctx context.Context, users []string) {
	if a.store == nil {
		return
	}
	for _, u := range users {
		if err := a.store.DeletePairingRequest(ctx, u); err != nil {
			a.log.Warn("deleting an expired pairing request", "user", u, "err", err)
			return
		}
	}
}

// newCodeLocked draws a code no pending request has, with at least one
// letter (so it is never mistaken for a numeric user id). a.mu is held.
func (a *List) newCodeLocked() string {
	var b [pairingLen]byte
	for {
		letter := false
		for i := range b {
			b[i] = pairingAlphabet[randIndex(len(pairingAlphabet))]
			letter = letter || b[i] >= 'A' && b[i] <= 'Z'
		}
		code := string(b[:])
		if _, taken := a.codes[code]; letter && !taken {
			return code
		}
	}
}

// randIndex returns a uniform random number in [0, n), n <= 256.
func randIndex(n int) int {
	limit := 256 - 256%n // reject the bytes that would bias the result
	var b [1]byte
	for {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		if int(b[0]) < limit {
			return int(b[0]) % n
		}
	}
}

// RefusalText is what an unknown user reads, once per pairing code. Without
// a code (the user was denied, or too many requests are waiting) it says how
// the operator lets them in by id.
func RefusalText(userID, code string) string {
	if code == "" {
		return "Sorry, this bot is private. Your id is " + userID + ". " +
			"To let you in, the operator adds it to access.allowed_users in config.yaml " +
			"(or RECALL_ACCESS_ALLOWED_USERS), or an admin sends /allow " + userID + "."
	}
	return "Sorry, this bot is private. Your id is " + userID + ". " +
		"Ask the operator to let you in with the code " + code + " (an admin sends /allow " + code + "), " +
		"or add your id to access.allowed_users."
}

// Middleware is the access stage. An allowed sender's turn goes on. An
// unknown sender's turn goes no further: nothing of their conversation is
// stored and nothing reaches an LLM. They get a pairing code — a pending
// request an admin approves with /allow CODE (see Pending), valid for
// PairingTTL and stable while it waits, kept with only their id, display
// name and conversation — and are told it once per code and process, in
// plain text (RefusalText); after that their messages are dropped silently.
// A user an admin denied is told once, without a code. In a group, only a
// message addressed to the bot (pipeline.Inbound.Addressed) earns that message, so
// chatter in a group the bot sits in draws neither refusals nor requests.
func (a *List) Middleware() pipeline.Middleware {
	return func(next pipeline.Handler) pipeline.Handler {
		return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
			user := normalizeUser(t.In.UserID())
			a.refresh(ctx, false)
			if a.Allowed(user) {
				return next.Handle(ctx, t)
			}
			log := t.Logger()
			if !t.In.Addressed() {
				log.Debug("dropped message from unknown user", "user", user)
				return nil
			}
			if a.refresh(ctx, true); a.Allowed(user) {
				return next.Handle(ctx, t) // just let in beside the bot
			}
			code := ""
			a.mu.RLock()
			denied := a.denied[user]
			a.mu.RUnlock()
			if !denied {
				if r, ok := a.request(ctx, t.In, user); ok {
					code = r.Code
				}
			}
			if !a.markTold(user, code) {
				log.Debug("dropped message from unknown user (already told)", "user", user)
				return nil
			}
			log.Info("refused unknown user", "user", user, "sender_name", t.In.SenderName, "code", code, "denied", denied)
			out := pipeline.Outbound{Key: t.In.Key, Text: RefusalText(user, code), Plain: true}
			if t.In.IsGroup {
				out.ReplyTo = t.In.MessageID
			}
			if _, err := t.Out.Send(ctx, out); err != nil {
				a.unmarkTold(user) // try again on their next message
				return fmt.Errorf("telling %s they are not allowed: %w", user, err)
			}
			return nil
		})
	}
}

// markTold records that user is being told code; false when they already were.
func (a *List) markTold(user, code string) bool {
	a.toldMu.Lock()
	defer a.toldMu.Unlock()
	if c, ok := a.told[user]; ok && c == code {
		return false
	}
	if len(a.told) >= maxTold {
		clear(a.told)
	}
	a.told[user] = code
	return true
}

func (a *List) unmarkTold(user string) {
	a.toldMu.Lock()
	defer a.toldMu.Unlock()
	delete(a.told, user)
}
