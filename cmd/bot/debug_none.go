//go:build !pprof

package main

import "io"

// memProfileRate is off: a release build serves no heap profile.
const memProfileRate = 0

// startDebug does nothing in a release build: the pprof server exists only
// in a binary built with -tags pprof (debug_pprof.go).
func startDebug(io.Writer) (stop func()) { return func() {} }
