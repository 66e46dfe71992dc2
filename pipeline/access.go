package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// ConsoleUser is the local terminal user; it is always allowed.
const ConsoleUser = "console:local"

// maxTold bounds the set of refused users remembered as told. Past it the set
// starts over: someone may then be told twice, which is harmless.
const maxTold = 10000

// Access decides who may talk to the bot. Users are named by
// Inbound.UserID ("telegram:123456", "whatsapp:4915112345678"). It is safe for
// concurrent use; Allow and Deny take effect for the next message.
//
// In a group the sender is checked, not the group: an allowed user's message
// in a group is answered, an unknown user's in the same group is not.
type Access struct {
	mu      sync.RWMutex
	open    bool            // anyone may talk
	allowed map[string]bool // users let in by the operator
	always  map[string]bool // users that cannot be denied (the console)

	toldMu sync.Mutex
	told   map[string]bool // refused users already told how to get in
}

// NewAccess returns an access list. open lets everyone in; otherwise only the
// allowed users ("channel:id") and ConsoleUser may talk. Entries are trimmed
// and their channel lowercased.
func NewAccess(open bool, allowed []string) *Access {
	a := &Access{
		open:    open,
		allowed: make(map[string]bool, len(allowed)),
		always:  map[string]bool{ConsoleUser: true},
		told:    make(map[string]bool),
	}
	for _, u := range allowed {
		if u = normalizeUser(u); u != "" {
			a.allowed[u] = true
		}
	}
	return a
}

// normalizeUser trims spaces and lowercases the channel ("Telegram:1" → "telegram:1").
func normalizeUser(u string) string {
	u = strings.TrimSpace(u)
	if channel, id, ok := strings.Cut(u, ":"); ok {
		return strings.ToLower(channel) + ":" + strings.TrimSpace(id)
	}
	return u
}

// Allowed reports whether the user may talk to the bot.
func (a *Access) Allowed(userID string) bool {
	userID = normalizeUser(userID)
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.open || a.always[userID] || a.allowed[userID]
}

// IsOpen reports whether everyone is let in.
func (a *Access) IsOpen() bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.open
}

// Allow lets the user in until Deny or a restart (the config file is not
// changed).
func (a *Access) Allow(userID string) {
	userID = normalizeUser(userID)
	a.mu.Lock()
	a.allowed[userID] = true
	a.mu.Unlock()
	a.toldMu.Lock()
	delete(a.told, userID) // told again if later denied
	a.toldMu.Unlock()
}

// Deny removes the user from the allowed users. It cannot shut out
// ConsoleUser, nor anyone while the bot is open.
func (a *Access) Deny(userID string) {
	userID = normalizeUser(userID)
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.allowed, userID)
}

// Users lists the allowed users, sorted (ConsoleUser not included).
func (a *Access) Users() []string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	users := make([]string, 0, len(a.allowed))
	for u := range a.allowed {
		users = append(users, u)
	}
	slices.Sort(users)
	return users
}

// RefusalText is what an unknown user reads, once.
func RefusalText(userID string) string {
	return "Sorry, this bot is private. Your id is " + userID + ". " +
		"To let you in, the operator adds it to access.allowed_users in config.yaml " +
		"(or RECALL_ACCESS_ALLOWED_USERS) and restarts the bot."
}

// Middleware is the access stage. An allowed sender's turn goes on. An
// unknown sender's turn goes no further: nothing is stored and nothing reaches
// an LLM. The first time in this process, they get one plain-text message
// with their id and how the operator lets them in (RefusalText); after that
// their messages are dropped silently. In a group, only a message addressed to
// the bot (Inbound.Addressed) earns that message, so chatter in a group the
// bot sits in does not draw refusals.
func (a *Access) Middleware() Middleware {
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, t *Turn) error {
			user := normalizeUser(t.In.UserID())
			if a.Allowed(user) {
				return next.Handle(ctx, t)
			}
			log := t.Logger()
			if !t.In.Addressed() || !a.markTold(user) {
				log.Debug("dropped message from unknown user", "user", user)
				return nil
			}
			log.Info("refused unknown user", "user", user, "sender_name", t.In.SenderName)
			out := Outbound{Key: t.In.Key, Text: RefusalText(user), Plain: true}
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

// markTold records that user is being told; false when they already were.
func (a *Access) markTold(user string) bool {
	a.toldMu.Lock()
	defer a.toldMu.Unlock()
	if a.told[user] {
		return false
	}
	if len(a.told) >= maxTold {
		clear(a.told)
	}
	a.told[user] = true
	return true
}

func (a *Access) unmarkTold(user string) {
	a.toldMu.Lock()
	defer a.toldMu.Unlock()
	delete(a.told, user)
}
