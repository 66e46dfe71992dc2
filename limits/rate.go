package limits

import (
	"context"
	"sync"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// Rate is the per-user rate limit: at most N messages in any sliding minute.
// It keeps, per user, the times of their last N accepted messages, in memory
// (a restart forgets them, which at worst lets a user send N more), or in
// RateWindows shared by every replica (WithWindows). It is safe for
// concurrent use.
type Rate struct {
	limit   int
	window  time.Duration
	opts    Options
	windows RateWindows // nil: in memory

	mu        sync.Mutex
	users     map[string]*userWindow
	lastSweep time.Time
}

// userWindow is one user's accepted messages within the window, oldest first.
type userWindow struct {
	times []time.Time
	told  bool // refused and told since the last accepted message
}

// NewRate returns a limit of perMinute messages per user and minute; 0 (or
// less) means unlimited.
func NewRate(perMinute int, opts Options) *Rate {
	return &Rate{limit: max(perMinute, 0), window: time.Minute, opts: opts.withDefaults(), users: map[string]*userWindow{}}
}

// RateWindows keeps the users' windows where every replica counts them
// (memory.Postgres). UpdateRateWindow calls update with the user's accepted
// times (oldest first) and whether a refusal was told since, excluding any
// other update of that user meanwhile, and keeps what update returns.
type RateWindows interface {
	UpdateRateWindow(ctx context.Context, user string, update func(times []time.Time, told bool) ([]time.Time, bool)) error
}

// WithWindows makes r count in w instead of in memory, so replicas share
// one limit per user. A failure to reach w lets the message through
// (logged): better to answer than to refuse for a database hiccup.
func (r *Rate) WithWindows(w RateWindows) *Rate {
	r.windows = w
	return r
}

// Limit is the number of messages allowed per minute; 0 means unlimited.
func (r *Rate) Limit() int { return r.limit }

// Take counts one message from user now, when it is within the limit. When
// it is not, it is not counted and retry says how long until one more fits.
func (r *Rate) Take(user string) (ok bool, retry time.Duration) {
	ok, retry, _ = r.take(context.Background(), user)
	return ok, retry
}

// decide counts a message at now in w when it fits (see take).
func (r *Rate) decide(w *userWindow, now time.Time) (ok bool, retry time.Duration, first bool) {
	w.expire(now, r.window)
	if len(w.times) < r.limit {
		w.times = append(w.times, now)
		w.told = false
		return true, 0, false
	}
	retry = w.times[0].Add(r.window).Sub(now)
	first = !w.told
	w.told = true
	return false, retry, first
}

// take is Take that also reports whether this refusal is the first since the
// user's last accepted message (the one to tell them about).
func (r *Rate) take(ctx context.Context, user string) (ok bool, retry time.Duration, first bool) {
	if r.limit == 0 {
		return true, 0, false
	}
	now := r.opts.Now()
	if r.windows != nil {
		err := r.windows.UpdateRateWindow(ctx, user, func(times []time.Time, told bool) ([]time.Time, bool) {
			w := &userWindow{times: times, told: told}
			ok, retry, first = r.decide(w, now)
			return w.times, w.told
		})
		if err != nil {
			if r.opts.Log != nil {
				r.opts.Log.Warn("the shared rate limit cannot be read; letting the message through", "user", user, "err", err)
			}
			return true, 0, false
		}
		return ok, retry, first
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweep(now)
	w := r.users[user]
	if w == nil {
		w = &userWindow{}
		r.users[user] = w
	}
	return r.decide(w, now)
}

// expire drops the times that left the window ending now.
func (w *userWindow) expire(now time.Time, window time.Duration) {
	i := 0
	for i < len(w.times) && !now.Before(w.times[i].Add(window)) {
		i++
	}
	w.times = w.times[i:]
}

// sweep forgets, once a window, the users with nothing in the window.
func (r *Rate) sweep(now time.Time) {
	if now.Sub(r.lastSweep) < r.window {
		return
	}
	r.lastSweep = now
	for u, w := range r.users {
		w.expire(now, r.window)
		if len(w.times) == 0 {
			delete(r.users, u)
		}
	}
}

// tracked is how many users the limiter remembers (tests).
func (r *Rate) tracked() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.users)
}

// RateText is what a user over the limit reads: "You're sending messages too
// fast — at most 20 per minute. Try again in 35 seconds." retry is rounded
// up to whole seconds.
func RateText(perMinute int, retry time.Duration) string {
	secs := max(int((retry+time.Second-1)/time.Second), 1)
	return "You're sending messages too fast — at most " + thousands(perMinute) + " per minute. Try again in " + plural(secs, "second", "seconds") + "."
}

// Middleware is the rate-limit stage (before the commands). A message for
// the bot from a user over the limit goes no further (see the package doc);
// the first of a stretch of refusals is answered with RateText. Exempt users
// and messages not for the bot are not counted. Unlimited: every turn goes on.
func (r *Rate) Middleware() pipeline.Middleware {
	return func(next pipeline.Handler) pipeline.Handler {
		if r.limit == 0 {
			return next
		}
		return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
			user := t.In.UserID()
			if !counts(t.In) || r.opts.exempt(user) {
				return next.Handle(ctx, t)
			}
			ok, retry, first := r.take(ctx, user)
			if ok {
				return next.Handle(ctx, t)
			}
			return r.opts.refuse(ctx, t, "rate", RateText(r.limit, retry), first)
		})
	}
}
