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

// shutdownContext returns a context that ends at the first SIGINT or
// SIGTERM, its cause naming the signal: the bot then stops taking updates
// and finishes its work. A second signal writes a line to stderr and calls
// exit(exitAtOnce). stop releases the signals.
func shutdownContext(stderr io.Writer, exit func(int)) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case sig := <-sigs:
			cancel(fmt.Errorf("%v signal received", sig))
		case <-done:
			return
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
