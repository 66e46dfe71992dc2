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
// bot talking to the default endpoint with the user's key. viper itself
// ignores variables it was not told about. A variable set to "" counts (it
// sets its key to empty), so a misspelled empty one is refused too.
// RECALL_CONFIG (FileEnv) and the test suite's RECALL_TEST_* are left
// alone. Values are never quoted: they may be secrets.
func CheckEnv(environ []string) error {
	var unknown []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !isRecallName(name) || knownEnv(name) || name == FileEnv || strings.HasPrefix(name, TestEnvPrefix) {
			continue
		}
		unknown = append(unknown, name)
	}
	slices.Sort(unknown)
	var errs []error
	for _, name := range slices.Compact(unknown) {
		errs = append(errs, fmt.Errorf("environment variable %s sets no configuration key; did you mean %s? (unset it, or fix its name)",
			name, suggestEnv(name)))
	}
	return errors.Join(errs...)
}

// isRecallName reports whether a variable's name is in Recall's namespace
// (RECALL_…, in any case: recall_llm_model is a typo of RECALL_LLM_MODEL).
func isRecallName(name string) bool {
	return strings.HasPrefix(strings.ToUpper(name), EnvPrefix+"_")
}

// envVars returns every variable that sets a key, in key order.
func envVars() []string {
	var out []string
	for _, l := range leaves() {
		out = append(out, envNames(l.key)...)
	}
	return out
}

// knownEnv reports whether name is a variable that sets a key.
func knownEnv(name string) bool { return slices.Contains(envVars(), name) }

// suggestEnv returns the variable that sets a key nearest to name (one that
// does not): RECALL_TOKEN → RECALL_TELEGRAM_TOKEN.
func suggestEnv(name string) string {
	vars := envVars()
	bare := make([]string, len(vars)) // without RECALL_: the prefix is no word to match on
	for i, v := range vars {
		bare[i] = strings.TrimPrefix(v, EnvPrefix+"_")
	}
	return vars[nearest(strings.TrimPrefix(strings.ToUpper(name), EnvPrefix+"_"), bare)]
}
