//go:build !unix

package main

// restrictUmask is a no-op where there is no umask.
func restrictUmask() int { return 0 }
