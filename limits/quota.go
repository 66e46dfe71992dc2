package limits

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// UsageStore keeps the tokens each user used per UTC day, so that a restart
// does not reset the quota (memory.Store). at picks the UTC day.
type UsageStore interface {
	Usage(ctx context.Context, userID string, at time.Time) (int, error)
	AddUsage(ctx context.Context, userID string, at time.Time, tokens int) error
}

// quotaTellEvery is how often a user over the quota is told so again.
const quotaTellEvery = time.Hour

// maxTold bounds the users remembered as told; past it the set starts over
// (someone may be told twice, which is harmless).
const maxTold = 10000

// DefaultTurnEstimate is what a turn is assumed to cost until its answer
// is counted, when Options.TurnEstimate is not set: the default prompt
// budget (8,000) plus the default answer (1,024).
const DefaultTurnEstimate = 9024

// Quota is the daily token quota: prompt and completion tokens per user per
// UTC day. The responder records each answer's tokens with Add (set it as
// chat.Options.Usage); the stage reads the day's count at the start of a
// turn. A turn that starts under the quota is answered in full, so a user
// can end a day somewhat over it — by one turn, never by one turn per
// conversation: a turn let through reserves an estimate of what it will
// cost (Options.TurnEstimate) until it ends, when its answer's real tokens
// are in the store, and the next turn is let through only while the day's
// tokens plus what is reserved stay under the quota. Usage is recorded for
// everyone, exempt users and an unlimited quota included (it feeds /stats).
type Quota struct {
	perDay   int
	estimate int
	store    UsageStore
	opts     Options

	mu       sync.Mutex
	told     map[string]time.Time // when a user was last told they are over
	reserved map[string]*reservation
}

// reservation is what one user's turns in flight hold of the quota. mu is
// held while the stage reads the day's usage and reserves, and while a turn
// gives its reservation back (after its answer's tokens were added), so a
// check never sees an answer neither in the store nor reserved.
type reservation struct {
	mu     sync.Mutex
	tokens int // reserved by turns in flight
	refs   int // goroutines holding or waiting for mu; the entry goes at 0
}

// NewQuota returns a quota of perDay tokens per user and UTC day, counted in
// store; perDay 0 (or less) means unlimited. store is required for a quota
// (without one every turn is answered, with a warning) and for /stats to
// show today's tokens.
func NewQuota(perDay int, store UsageStore, opts Options) *Quota {
	est := opts.TurnEstimate
	if est <= 0 {
		est = DefaultTurnEstimate
	}
	return &Quota{perDay: max(perDay, 0), estimate: est, store: store, opts: opts.withDefaults(),
		told: map[string]time.Time{}, reserved: map[string]*reservation{}}
}

// lock takes the user's reservation entry (creating it) and locks it.
func (q *Quota) lock(user string) *reservation {
	q.mu.Lock()
	r := q.reserved[user]
	if r == nil {
		r = &reservation{}
		q.reserved[user] = r
	}
	r.refs++
	q.mu.Unlock()
	r.mu.Lock()
	return r
}

// unlock undoes lock; the entry goes when nobody holds or reserves it.
func (q *Quota) unlock(user string, r *reservation) {
	r.mu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	r.refs--
	if r.refs == 0 && r.tokens == 0 {
		delete(q.reserved, user)
	}
}

// reserve checks the quota and, when the user is under it counting what
// their turns in flight reserved, reserves the estimate. release gives it
// back; call it once the turn's answer has been added (Add).
func (q *Quota) reserve(ctx context.Context, user string) (ok bool, resetIn time.Duration, release func(), err error) {
	r := q.lock(user)
	defer q.unlock(user, r)
	ok, used, resetIn, err := q.Check(ctx, user)
	if err != nil || !ok {
		return ok, resetIn, func() {}, err
	}
	if used+r.tokens >= q.perDay {
		return false, resetIn, func() {}, nil
	}
	r.tokens += q.estimate
	q.mu.Lock()
	r.refs++ // the reservation holds the entry
	q.mu.Unlock()
	return true, resetIn, func() {
		r.mu.Lock()
		r.tokens -= q.estimate
		q.mu.Lock()
		r.refs--
		if r.refs == 0 && r.tokens == 0 {
			delete(q.reserved, user)
		}
		q.mu.Unlock()
		r.mu.Unlock()
	}, nil
}

// Limit is the number of tokens allowed per user and day; 0 means unlimited.
func (q *Quota) Limit() int { return q.perDay }

// Add records tokens the user used now (the current UTC day). It implements
// chat.Usage.
func (q *Quota) Add(ctx context.Context, userID string, tokens int) error {
	if q.store == nil || tokens <= 0 {
		return nil
	}
	return q.store.AddUsage(ctx, userID, q.opts.Now(), tokens)
}

// Check reports whether the user may use the LLM now, what they used today,
// and how long until the quota resets (00:00 UTC). An unlimited quota always
// allows (without reading the store).
func (q *Quota) Check(ctx context.Context, userID string) (ok bool, used int, resetIn time.Duration, err error) {
	now := q.opts.Now()
	resetIn = NextReset(now).Sub(now)
	if q.perDay == 0 {
		return true, 0, resetIn, nil
	}
	if q.store == nil {
		return true, 0, resetIn, errors.New("no usage store")
	}
	used, err = q.store.Usage(ctx, userID, now)
	if err != nil {
		return true, 0, resetIn, fmt.Errorf("reading today's token usage of %s: %w", userID, err)
	}
	return used < q.perDay, used, resetIn, nil
}

// NextReset is the next 00:00 UTC after t.
func NextReset(t time.Time) time.Time {
	return t.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
}

// QuotaText is what a user over the quota reads: "You've used today's 50,000
// tokens. The quota resets at 00:00 UTC, in 3 h 12 min." The time left is
// rounded up to the minute.
func QuotaText(perDay int, resetIn time.Duration) string {
	return "You've used today's " + thousands(perDay) + " tokens. The quota resets at 00:00 UTC, in " + durationText(resetIn) + ". " +
		"Commands such as /search and /export still work."
}

// durationText writes a wait for people: "3 h 12 min", "3 h", "45 min",
// "less than a minute"; rounded up to the minute.
func durationText(d time.Duration) string {
	if d < time.Minute {
		return "less than a minute"
	}
	mins := int((d + time.Minute - 1) / time.Minute)
	h, m := mins/60, mins%60
	switch {
	case h == 0:
		return fmt.Sprintf("%d min", m)
	case m == 0:
		return fmt.Sprintf("%d h", h)
	default:
		return fmt.Sprintf("%d h %d min", h, m)
	}
}

// shouldTell reports whether a refused user is to be told now (at most once
// per quotaTellEvery), and records it.
func (q *Quota) shouldTell(user string, now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if last, ok := q.told[user]; ok && now.Sub(last) < quotaTellEvery && !now.Before(last) && NextReset(last).After(now) {
		return false
	}
	if len(q.told) >= maxTold {
		clear(q.told)
	}
	q.told[user] = now
	return true
}

// Middleware is the quota stage (after the commands, before the responder).
// A message for the bot from a user who used today's tokens goes no further
// (see the package doc); they are told with QuotaText at most once an hour.
// When the usage cannot be read the message goes on: better to answer than
// to lock everyone out over a storage hiccup. Exempt users are not checked.
// Unlimited: every turn goes on.
func (q *Quota) Middleware() pipeline.Middleware {
	return func(next pipeline.Handler) pipeline.Handler {
		if q.perDay == 0 {
			return next
		}
		return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
			user := t.In.UserID()
			if !counts(t.In) || q.opts.exempt(user) {
				return next.Handle(ctx, t)
			}
			ok, resetIn, release, err := q.reserve(ctx, user)
			if err != nil {
				log := q.opts.Log
				if log == nil {
					log = t.Logger()
				}
				log.Warn("token quota unknown; answering anyway", "user", user, "err", err)
			}
			if ok {
				defer release() // after the responder added the answer's tokens
				return next.Handle(ctx, t)
			}
			tell := q.shouldTell(user, q.opts.Now())
			return q.opts.refuse(ctx, t, "quota", QuotaText(q.perDay, resetIn), tell)
		})
	}
}
