//go:build race

package sandbox

// addressSpaceScale multiplies a worker's address-space limit: under the
// race detector ThreadSanitizer's shadow memory takes several times what
// the program maps.
const addressSpaceScale = 8
