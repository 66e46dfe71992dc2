package pipeline

import (
	"errors"
	"fmt"
)

var (
	// ErrStopped is returned by Dispatcher.Submit once shutdown has begun.
	ErrStopped = errors.New("pipeline: dispatcher stopped")
	// ErrBusy is returned by Dispatcher.Submit when a conversation already has
	// as many turns queued as the dispatcher allows.
	ErrBusy = errors.New("pipeline: conversation queue full")
	// ErrUnavailable is wrapped by a Submit that could not take the turn
	// now (the queue shared by replicas cannot be written): the channel
	// leaves the update with the platform, which delivers it again.
	ErrUnavailable = errors.New("pipeline: the turn queue cannot take turns now")
	// ErrNotDelivered is wrapped by a Sender's error when the message did
	// not reach the platform but may later (not connected, rate limited,
	// the network down), or when sending it again cannot show it twice:
	// the reply stays pending and is sent again (chat.Outbox), instead of
	// being given up.
	ErrNotDelivered = errors.New("not delivered yet; it will be sent again")
	// ErrInterrupted is the cause (context.Cause) of a turn's context
	// cancelled because its user asked to stop the answer (Ctrl-C in the
	// terminal chat), not because the bot is stopping: the turn ends
	// without an answer, the user's message stays in the history, and it
	// is not answered after a restart.
	ErrInterrupted = errors.New("the user cancelled the answer")
)

// ShutdownError reports a shutdown whose deadline ended before every turn was
// done: Cancelled turns were running and had their context cancelled,
// Discarded turns were queued and never started. Err is the deadline's error.
type ShutdownError struct {
	Cancelled int
	Discarded int
	Err       error
}

func (e *ShutdownError) Error() string {
	return fmt.Sprintf("pipeline: shutdown dropped %d turns (%d cancelled while running, %d queued never started): %v",
		e.Cancelled+e.Discarded, e.Cancelled, e.Discarded, e.Err)
}

// Unwrap returns the deadline's error, so errors.Is(err, context.DeadlineExceeded) works.
func (e *ShutdownError) Unwrap() error { return e.Err }

// Dropped is the number of turns that did not complete normally.
func (e *ShutdownError) Dropped() int { return e.Cancelled + e.Discarded }
