package pipeline

import (
	"context"
	"fmt"
	"runtime/debug"
)

// PanicError is a panic in a stage, turned into an error.
type PanicError struct {
	Value any    // what was passed to panic
	Stack []byte // the panicking goroutine's stack
}

func (e *PanicError) Error() string { return fmt.Sprintf("pipeline: panic in turn: %v", e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Recover turns a panic in the rest of the chain into a *PanicError. The
// dispatcher recovers on its own; this stage is for chains run elsewhere (tests,
// a single-turn CLI) or to keep a later stage's panic from skipping an earlier
// stage's cleanup.
func Recover() Middleware {
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, t *Turn) error {
			return safeHandle(ctx, next, t)
		})
	}
}

// safeHandle calls h and returns a *PanicError if it panics.
func safeHandle(ctx context.Context, h Handler, t *Turn) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return h.Handle(ctx, t)
}
