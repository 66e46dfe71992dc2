package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// TestEnvPrefix starts the variables of the test suite (CI sets
// RECALL_TEST_POSTGRES_URL for every test, the bot's processes included):
// no configuration key starts with "test", and CheckEnv leaves them alone.
const TestEnvPrefix = EnvPrefix + "_TEST_"

// CheckEnv rejects RECALL_* variables in environ ("NAME=value" entries, as
// os.Environ returns them) that set no key, naming the nearest variable that
// does: a misspelled RECALL_LLM_BASEURL must stop the start, not leave the
// bot talking to the default endpoint with the user's key. Variables set to
// "" are ignored (they set nothing). Values are never quoted: they may be
// secrets.
func CheckEnv(environ []string) error {
	known := map[string]bool{}
	var names []string
	for _, l := range leaves() {
		for _, n := range append([]string{envName(l.key)}, shorthandEnv(l.key)...) {
			known[n] = true
			names = append(names, n)
		}
	}
	var errs []error
	var unknown []string
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(strings.ToUpper(name), EnvPrefix+"_") || value == "" || known[name] {
			continue
		}
		if strings.HasPrefix(name, TestEnvPrefix) {
			continue // the test suite's own (RECALL_TEST_POSTGRES_URL), never a key
		}
		unknown = append(unknown, name)
	}
	slices.Sort(unknown)
	for _, name := range slices.Compact(unknown) {
		errs = append(errs, fmt.Errorf("environment variable %s sets no configuration key; did you mean %s? (unset it, or fix its name)",
			name, nearest(strings.ToUpper(name), names)))
	}
	return errors.Join(errs...)
}

// nearest returns the candidate with the smallest edit distance to s (the
// first of equals).
func nearest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if d := editDistance(s, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (variable names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
