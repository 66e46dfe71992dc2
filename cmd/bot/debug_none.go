//go:build !pprof

package main

import "io"

// startDebug does nothing in a release build: the pprof server exists only
// in a binary built with -tags pprof (debug_pprof.go).
func startDebug(io.Writer) (stop func()) { return func() {} }
