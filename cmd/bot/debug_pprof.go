//go:build pprof

package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

// DebugPprofEnv names the address a binary built with -tags pprof serves
// net/http/pprof on (the bench's heap profiles of the real bot). Release
// builds have no such server and ignore the variable.
const DebugPprofEnv = "PPROF_LISTEN" // not RECALL_*: config refuses unknown RECALL_ variables

// memProfileRate is the runtime's default: the heap profiles sample
// allocations.
const memProfileRate = 512 * 1024

// startDebug serves /debug/pprof/ on $PPROF_LISTEN until stop is
// called; nothing when the variable is empty.
func startDebug(stderr io.Writer) (stop func()) {
	addr := os.Getenv(DebugPprofEnv)
	if addr == "" {
		return func() {}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(stderr, "debug pprof server:", err)
		return func() {}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	srv := &http.Server{Handler: mux}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	return func() { _ = srv.Close(); <-done }
}
