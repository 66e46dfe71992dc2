package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
)

// Load builds the configuration from Default, then the YAML file at path (if
// path is not empty), then RECALL_* environment variables, and validates the
// result. A missing file at an explicit path, a key in the file that Recall
// does not know, a RECALL_* variable that sets no key (CheckEnv), a value
// that cannot be parsed, or a failed Validate is an error; on error the zero
// Config is returned.
//
// Durations are written like "30s" or "10m". Lists are YAML lists in the
// file and comma- or space-separated strings in the environment.
func Load(path string) (Config, error) {
	c, err := load(path)
	if err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("config: invalid:\n%w", err)
	}
	return c, nil
}

// load is Load without validation.
func load(path string) (Config, error) {
	if err := CheckEnv(os.Environ()); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	var warnings []string
	v := viper.New()
	v.SetConfigType("yaml")
	defaults := reflect.ValueOf(Default())
	for _, l := range leaves() {
		v.SetDefault(l.key, defaults.FieldByIndex(l.index).Interface())
		if err := v.BindEnv(append([]string{l.key, envName(l.key)}, shorthandEnv(l.key)...)...); err != nil {
			return Config{}, fmt.Errorf("config: binding %s: %w", l.key, err)
		}
	}

	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return Config{}, fmt.Errorf("config: file %s not found: %w", path, os.ErrNotExist)
			}
			return Config{}, fmt.Errorf("config: reading %s: %w", path, err)
		}
		data = expandShorthands(data)
		if err := checkFileKeys(data); err != nil {
			return Config{}, fmt.Errorf("config: %s: %w", path, err)
		}
		warnings = fileSecrets(path, data)
		if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
			return Config{}, fmt.Errorf("config: parsing %s: %w", path, err)
		}
	}

	var c Config
	err := v.Unmarshal(&c, func(dc *mapstructure.DecoderConfig) {
		dc.DecodeHook = mapstructure.ComposeDecodeHookFunc(durationHook, listHook)
		dc.ErrorUnused = true
	})
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	normalizeLists(&c)
	c.warnings = warnings
	return c, nil
}

// fileSecrets warns about each secret (llm.api_key, telegram.token, …) the
// file itself holds: a file that is copied, committed or shared carries it.
// The value is never quoted.
func fileSecrets(path string, data []byte) []string {
	fv := viper.New()
	fv.SetConfigType("yaml")
	if err := fv.ReadConfig(bytes.NewReader(data)); err != nil {
		return nil
	}
	var out []string
	for _, l := range leaves() {
		if l.secret && fv.IsSet(l.key) && fmt.Sprint(fv.Get(l.key)) != "" {
			out = append(out, fmt.Sprintf("%s holds a secret (%s): move it to the environment (%s) or to a .env file that is never committed, and leave it empty in %s",
				path, l.key, envName(l.key), path))
		}
	}
	return out
}

// checkFileKeys rejects keys in a YAML document that do not correspond to a
// Config field, so that typos are not silently ignored.
func checkFileKeys(data []byte) error {
	fv := viper.New()
	fv.SetConfigType("yaml")
	if err := fv.ReadConfig(bytes.NewReader(data)); err != nil {
		return fmt.Errorf("parsing: %w", err)
	}
	known := map[string]bool{}
	for _, l := range leaves() {
		known[l.key] = true
	}
	var errs []error
	keys := fv.AllKeys()
	slices.Sort(keys)
	for _, k := range keys {
		switch {
		case known[k]:
		case parentKeys[k]:
			// A section written as a scalar ("memory: 5") is wrong; an
			// empty section ("memory:") is harmless.
			// The value is not quoted: it may be a secret written one
			// level too high ("telegram: 123456:AAH…").
			if v := fv.Get(k); v != nil {
				errs = append(errs, fmt.Errorf("%s: must be a mapping of keys (e.g. %s.%s: …), got a single %T value", k, k, firstChild(k), v))
			}
		default:
			errs = append(errs, unknownKey(k))
		}
	}
	return errors.Join(errs...)
}

// unknownKey reports a key the configuration does not have. Keys are
// letters, digits, underscores and dots; one with anything else is most
// likely a value glued to its key ("api_key:sk-…:" or "token=123:AAH…"
// parse as one key), so it is named only up to there: the rest may be a
// secret.
func unknownKey(k string) error {
	i := strings.IndexFunc(k, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.')
	})
	if i < 0 {
		return fmt.Errorf("%s: unknown key", k)
	}
	return fmt.Errorf("%s…: unknown key (the rest of it is not shown: a value written without a space after its colon? write \"key: value\")", k[:i+1])
}

// firstChild names the first key of section key, for messages.
func firstChild(section string) string {
	for _, l := range leaves() {
		if rest, ok := strings.CutPrefix(l.key, section+"."); ok {
			name, _, _ := strings.Cut(rest, ".")
			return name
		}
	}
	return "key"
}

var durationType = reflect.TypeFor[time.Duration]()

// durationHook parses strings like "30s" into time.Duration and rejects bare
// non-zero numbers, which would otherwise silently mean nanoseconds.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != durationType || from == durationType {
		return data, nil
	}
	switch from.Kind() {
	case reflect.String:
		s := strings.TrimSpace(data.(string))
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("invalid duration %q (write e.g. \"30s\", \"10m\", \"1h\")", s)
		}
		return d, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		if reflect.ValueOf(data).IsZero() {
			return time.Duration(0), nil
		}
		return nil, fmt.Errorf("duration %v has no unit (write e.g. \"30s\", \"10m\", \"1h\")", data)
	}
	return data, nil
}

// listHook splits a string into a []string on commas and whitespace, so
// RECALL_ACCESS_ALLOWED_USERS="telegram:1, whatsapp:2" works.
func listHook(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.String || to.Kind() != reflect.Slice || to.Elem().Kind() != reflect.String {
		return data, nil
	}
	return strings.FieldsFunc(data.(string), func(r rune) bool {
		return r == ',' || unicode.IsSpace(r)
	}), nil
}

// normalizeLists turns empty lists into nil so that "allowed_users: []" and
// an absent key load identically.
func normalizeLists(c *Config) {
	rv := reflect.ValueOf(c).Elem()
	for _, l := range leaves() {
		f := rv.FieldByIndex(l.index)
		if f.Kind() == reflect.Slice && f.Len() == 0 && !f.IsNil() {
			f.Set(reflect.Zero(f.Type()))
		}
	}
}
