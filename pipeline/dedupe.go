package pipeline

import (
	"container/list"
	"context"
	"log/slog"
	"sync"
)

// Seen is what the dedupe stage needs from the store.
type Seen interface {
	// Lookup reports whether the platform message id is stored for the
	// conversation (queued writes included) and whether it was answered: a
	// reply to it is stored, or it was handled without one (a command, an
	// answer to a question, a failed turn the user was told about).
	// platformID is never empty.
	Lookup(ctx context.Context, key Key, platformID string) (stored, answered bool, err error)
}

// dedupeRecent is how many handled (key, message id) pairs the dedupe stage
// remembers in process.
const dedupeRecent = 1024

// Dedupe is the dedupe stage: it drops a message the bot has already handled,
// so a platform's redelivery is not answered twice.
//
//   - A message without a MessageID always goes on.
//   - A message whose id is being handled right now in this process (a
//     concurrent duplicate), or was handled successfully recently (the last
//     1024), is dropped.
//   - Otherwise the store decides: stored and answered is dropped; stored but
//     unanswered (the bot stopped before replying) goes on and is answered,
//     storing it again being idempotent; unknown goes on.
//   - When the lookup fails the message goes on: better to answer twice than
//     never. The error is logged to log (nil: the turn's logger).
//
// A turn that fails (next returns an error or panics) is forgotten, so a
// redelivery is tried again.
func Dedupe(s Seen, log *slog.Logger) Middleware {
	return dedupe(s, log, dedupeRecent)
}

func dedupe(s Seen, log *slog.Logger, recent int) Middleware {
	set := newSeenSet(recent)
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, t *Turn) error {
			if t.In.MessageID == "" {
				return next.Handle(ctx, t)
			}
			l := log
			if l == nil {
				l = t.Logger()
			}
			id := seenID{key: t.In.Key, msg: t.In.MessageID}
			if !set.begin(id) {
				l.Debug("dropped duplicate message (seen in this process)", "key", t.In.Key, "msg_id", id.msg)
				return nil
			}
			ok := false
			defer func() { set.end(id, ok) }()

			stored, answered, err := s.Lookup(ctx, id.key, id.msg)
			switch {
			case err != nil:
				l.Warn("dedupe lookup failed, handling the message anyway", "key", t.In.Key, "msg_id", id.msg, "err", err)
			case stored && answered:
				l.Debug("dropped duplicate message (already answered)", "key", t.In.Key, "msg_id", id.msg)
				ok = true
				return nil
			case stored:
				l.Debug("handling stored but unanswered message", "key", t.In.Key, "msg_id", id.msg)
			}
			err = next.Handle(ctx, t)
			ok = err == nil
			return err
		})
	}
}

// seenID is one platform message in one conversation.
type seenID struct {
	key Key
	msg string
}

// seenSet holds the messages being handled and a bounded LRU of those
// handled recently.
type seenSet struct {
	mu       sync.Mutex
	inFlight map[seenID]bool
	done     map[seenID]*list.Element
	order    *list.List // of seenID, most recent at the front
	max      int
}

func newSeenSet(max int) *seenSet {
	return &seenSet{
		inFlight: make(map[seenID]bool),
		done:     make(map[seenID]*list.Element),
		order:    list.New(),
		max:      max,
	}
}

// begin marks id as being handled; false when it is already being handled or
// was handled recently.
func (s *seenSet) begin(id seenID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight[id] {
		return false
	}
	if e, ok := s.done[id]; ok {
		s.order.MoveToFront(e)
		return false
	}
	s.inFlight[id] = true
	return true
}

// end records that id is no longer being handled; handled says whether to
// remember it as done.
func (s *seenSet) end(id seenID, handled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inFlight, id)
	if !handled || s.max <= 0 {
		return
	}
	s.done[id] = s.order.PushFront(id)
	for s.order.Len() > s.max {
		oldest := s.order.Back()
		s.order.Remove(oldest)
		delete(s.done, oldest.Value.(seenID))
	}
}
