package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// exitAtOnce is the exit code after a second SIGINT or SIGTERM: the bot
// exits without waiting for turns in flight or the write queue.
const exitAtOnce = 130

// interrupts routes a SIGINT to the terminal chat while it runs: set, it
// is asked first whether the signal stopped an answer in flight.
type interrupts struct {
	mu sync.Mutex
	f  func() bool
}

// route makes f hear each SIGINT first; f reports whether it used it (an
// answer was stopped). nil stops routing.
func (i *interrupts) route(f func() bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.f = f
}

// used reports whether the routed function used the signal.
func (i *interrupts) used() bool {
	i.mu.Lock()
	f := i.f
	i.mu.Unlock()
	return f != nil && f()
}

// shutdownContext returns a context that ends at the first SIGINT or
// SIGTERM, its cause naming the signal: the bot then stops taking updates
// and finishes its work. A second signal writes a line to stderr and calls
// exit(exitAtOnce). A SIGINT that intr routes to the terminal chat and that
// stopped an answer there (Ctrl-C while the model answers) is neither: the
// chat goes on. stop releases the signals.
func shutdownContext(stderr io.Writer, exit func(int), intr *interrupts) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case sig := <-sigs:
				if sig == os.Interrupt && intr.used() {
					continue // an answer stopped; the chat goes on
				}
				cancel(fmt.Errorf("%v signal received", sig))
			case <-done:
				return
			}
			break
		}
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "second %v signal: exiting at once, without waiting for work in progress\n", sig)
			exit(exitAtOnce)
		case <-done:
		}
	})
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		wg.Wait()
		cancel(context.Canceled)
	}
}
