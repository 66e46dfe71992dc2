//go:build race

package memory

// raceEnabled: the race detector is on (its instrumentation makes the
// tests that write tens of MB take minutes).
const raceEnabled = true
