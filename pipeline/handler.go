package pipeline

import (
	"context"
	"log/slog"
)

// Turn is one inbound message on its way through the stages, with the means to
// answer it. The dispatcher creates one per message; stages share it. A stage
// that needs to hand request-scoped data to later stages (the restored
// session, say) puts it in the context it passes to next, under an unexported
// key of its own package, or sets one of these fields (e.g. wraps Out, or
// narrows Log with more attributes). Keep it small: it is not a bag of
// everything a turn might touch.
type Turn struct {
	In  Inbound
	Out Sender       // the adapter that delivered In; see the optional capabilities in types.go
	Log *slog.Logger // already carries the conversation key; nil discards
}

// Logger returns t.Log, or a logger that discards when it is nil.
func (t *Turn) Logger() *slog.Logger {
	if t.Log == nil {
		return discard
	}
	return t.Log
}

var discard = slog.New(slog.DiscardHandler)

// Handler processes a turn. It returns when the turn is done with; the error
// is logged by the dispatcher (the user has already been told whatever they
// need to know). When ctx is cancelled the handler gives up promptly.
type Handler interface {
	Handle(ctx context.Context, t *Turn) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, t *Turn) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, t *Turn) error { return f(ctx, t) }

// Middleware is a stage: it wraps the rest of the chain. A stage that consumes
// the turn (a duplicate, a command, an unknown sender) returns without calling
// next.
type Middleware func(next Handler) Handler

// Chain builds h wrapped in mws. The first middleware is the outermost: it
// runs first and sees the turn before any other. Nil middlewares are skipped.
func Chain(h Handler, mws ...Middleware) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			h = mws[i](h)
		}
	}
	return h
}
