//go:build !race

package sandbox

// addressSpaceScale multiplies a worker's address-space limit (the race
// detector's build needs more: race_on.go).
const addressSpaceScale = 1
