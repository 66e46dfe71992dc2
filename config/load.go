package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/go-viper/mapstructure/v2"
	"go.yaml.in/yaml/v3"
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
	var file map[string]any // leaf key → value, from the file
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return Config{}, fmt.Errorf("config: file %s not found: %w", path, os.ErrNotExist)
			}
			return Config{}, fmt.Errorf("config: reading %s: %w", path, err)
		}
		data = expandShorthands(data)
		if file, err = readYAML(data); err != nil {
			return Config{}, fmt.Errorf("config: %s: parsing: %w", path, err)
		}
		if err := checkFileKeys(file); err != nil {
			return Config{}, fmt.Errorf("config: %s: %w", path, err)
		}
		warnings = fileSecrets(path, file)
	}

	// Each key from the environment, else the file, else its default.
	settings := map[string]any{}
	defaults := reflect.ValueOf(Default())
	for _, l := range leaves() {
		val := defaults.FieldByIndex(l.index).Interface()
		if fv, ok := file[l.key]; ok && fv != nil {
			val = fv
		}
		for _, name := range append([]string{envName(l.key)}, shorthandEnv(l.key)...) {
			if ev := os.Getenv(name); ev != "" { // set but empty counts as unset
				val = ev
				break
			}
		}
		setPath(settings, strings.Split(l.key, "."), val)
	}

	var c Config
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:           &c,
		WeaklyTypedInput: true, // environment values are strings
		DecodeHook:       mapstructure.ComposeDecodeHookFunc(durationHook, listHook),
		ErrorUnused:      true,
	})
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	if err := dec.Decode(settings); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	normalizeLists(&c)
	c.warnings = warnings
	return c, nil
}

// readYAML reads a YAML document into its keys: dotted paths, lower case
// (keys are matched ignoring case), one per scalar or list; a section
// written without a value ("memory:") is a key holding nil, an empty
// mapping none.
func readYAML(data []byte) (map[string]any, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	out := map[string]any{}
	var flatten func(prefix string, m map[string]any)
	flatten = func(prefix string, m map[string]any) {
		for k, v := range m {
			key := strings.ToLower(k)
			if prefix != "" {
				key = prefix + "." + key
			}
			switch sub := v.(type) {
			case map[string]any:
				flatten(key, sub)
				continue
			case map[any]any: // a key that is not a string ("1: x")
				named := make(map[string]any, len(sub))
				for k, v := range sub {
					named[fmt.Sprint(k)] = v
				}
				flatten(key, named)
				continue
			}
			out[key] = v
		}
	}
	flatten("", doc)
	return out, nil
}

// setPath sets m[path[0]][path[1]]… = v, making the mappings on the way.
func setPath(m map[string]any, path []string, v any) {
	for _, p := range path[:len(path)-1] {
		sub, ok := m[p].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[p] = sub
		}
		m = sub
	}
	m[path[len(path)-1]] = v
}

// fileSecrets warns about each secret (llm.api_key, telegram.token, …) the
// file itself holds: a file that is copied, committed or shared carries it.
// The value is never quoted.
func fileSecrets(path string, file map[string]any) []string {
	var out []string
	for _, l := range leaves() {
		if v, ok := file[l.key]; l.secret && ok && v != nil && fmt.Sprint(v) != "" {
			out = append(out, fmt.Sprintf("%s holds a secret (%s): move it to the environment (%s) or to a .env file that is never committed, and leave it empty in %s",
				path, l.key, envName(l.key), path))
		}
	}
	return out
}

// checkFileKeys rejects keys of the file that do not correspond to a
// Config field, so that typos are not silently ignored.
func checkFileKeys(file map[string]any) error {
	known := map[string]bool{}
	for _, l := range leaves() {
		known[l.key] = true
	}
	var errs []error
	keys := make([]string, 0, len(file))
	for k := range file {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch {
		case known[k]:
		case parentKeys[k]:
			// A section written as a scalar ("memory: 5") is wrong; an
			// empty section ("memory:") is harmless.
			// The value is not quoted: it may be a secret written one
			// level too high ("telegram: 123456:AAH…").
			if v := file[k]; v != nil {
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
