package config

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/subosito/gotenv"
)

// dotEnvVar is one RECALL_* variable of a .env file.
type dotEnvVar struct {
	name, value string
	line        int // where it is set, from 1
}

// dotEnvName finds the name a .env line sets, as gotenv reads it
// ("NAME=value", "export NAME=value", "NAME: value").
var dotEnvName = regexp.MustCompile(`^\s*(?:export\s+)?([\w.]+)(?:\s*=|:\s)`)

// readDotEnv reads the RECALL_* variables of the .env file at path, with
// gotenv (the parser viper reads dotenv files with): "NAME=value" lines,
// "#" comments (an unquoted value ends at "#"), an "export " prefix, quotes;
// $NAME in an unquoted or double-quoted value is replaced by that variable,
// and single quotes keep a value as written. A missing file is no error.
// Other variables, and the test suite's RECALL_TEST_*, are left alone
// (Docker reads the same file). A RECALL_* name that sets no key is
// refused, naming the file, its line and the nearest name that does.
// Values are never quoted: they may be secrets.
func readDotEnv(path string) (map[string]dotEnvVar, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	env, err := gotenv.StrictParse(bytes.NewReader(data))
	if err != nil {
		// gotenv's message quotes the line, which may hold a secret.
		if n := badDotEnvLine(data); n > 0 {
			return nil, fmt.Errorf("%s line %d: not NAME=value (the line is not shown: it may hold a secret)", path, n)
		}
		return nil, fmt.Errorf("%s: not NAME=value lines (a quote left open?)", path)
	}
	lines := map[string]int{} // name → the last line setting it: the one gotenv keeps
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		if m := dotEnvName.FindStringSubmatch(sc.Text()); m != nil {
			lines[m[1]] = n
		}
	}
	out := map[string]dotEnvVar{}
	var unknown []dotEnvVar
	for name, value := range env {
		if !isRecallName(name) || strings.HasPrefix(name, TestEnvPrefix) {
			continue
		}
		v := dotEnvVar{name: name, value: value, line: lines[name]}
		if name == FileEnv || !knownEnv(name) {
			unknown = append(unknown, v)
			continue
		}
		out[name] = v
	}
	slices.SortFunc(unknown, func(a, b dotEnvVar) int { return cmp.Compare(a.line, b.line) })
	var errs []error
	for _, v := range unknown {
		if v.name == FileEnv {
			errs = append(errs, fmt.Errorf("%s line %d: %s has no effect in %s (the configuration file is chosen before %s is read): set it in the environment, or use --config",
				path, v.line, v.name, path, path))
			continue
		}
		errs = append(errs, fmt.Errorf("%s line %d: %s sets no configuration key; did you mean %s?",
			path, v.line, v.name, suggestEnv(v.name)))
	}
	return out, errors.Join(errs...)
}

// badDotEnvLine returns the first line of a .env file that sets nothing
// and is no comment, or 0.
func badDotEnvLine(data []byte) int {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) > 0 && line[0] != '#' && !dotEnvName.Match(line) {
			return n
		}
	}
	return 0
}
