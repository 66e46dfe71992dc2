package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
)

// LoadDotEnv sets the RECALL_* variables of the .env file at path
// ("NAME=value" lines; "#" comments, blank lines, an "export " prefix and
// quotes around the value are allowed) that the environment does not set
// already: the environment wins. A missing file is not an error. Other
// variables in the file are ignored (Docker reads the same file).
func LoadDotEnv(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		name, value, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return fmt.Errorf("%s:%d: not NAME=value", path, n) // the line may hold a secret: not quoted
		}
		if !strings.HasPrefix(strings.ToUpper(name), EnvPrefix+"_") {
			continue
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			value = value[1 : len(value)-1]
		} else if i := strings.Index(value, " #"); i >= 0 {
			value = strings.TrimSpace(value[:i]) // a comment after an unquoted value
		}
		if os.Getenv(name) != "" {
			continue // the environment wins (set but empty counts as unset)
		}
		if err := os.Setenv(name, value); err != nil {
			return fmt.Errorf("%s:%d: setting %s: %w", path, n, name, err)
		}
	}
	return sc.Err()
}
