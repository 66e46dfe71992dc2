package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// readFile reads the YAML file at path into v's configuration layer and
// checks its keys: one Recall does not know is refused with the nearest
// one that it does, a section written as one value too (but for the
// shorthands). It returns a warning for each secret the file holds. v must
// hold nothing else yet: every key it has is the file's.
func readFile(v *viper.Viper, path string) (warnings []string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("file %s not found: %w", path, os.ErrNotExist)
		}
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(prepareYAML(data))); err != nil {
		return nil, fmt.Errorf("%s: parsing: %w", path, err)
	}
	if err := checkFileKeys(v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return fileSecrets(path, v), nil
}

// prepareYAML writes out the shorthands of a YAML document in full
// (expandShorthands) and drops the sections written without a value
// ("memory:"): viper would take such a section for a key holding nothing
// and, on Unmarshal, put its defaults over the values of the keys under
// it. A document that does not parse is returned unchanged (viper says
// why).
func prepareYAML(data []byte) []byte {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return data
	}
	leaves() // fills parentKeys
	changed := expandShorthands(&doc)
	if dropEmptySections(doc.Content[0], "") {
		changed = true
	}
	if !changed {
		return data
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return data
	}
	return out
}

// dropEmptySections removes the sections of mapping m (at key prefix)
// written without a value, and reports whether there was one.
func dropEmptySections(m *yaml.Node, prefix string) bool {
	if m.Kind != yaml.MappingNode {
		return false
	}
	changed := false
	for i := 0; i+1 < len(m.Content); {
		key := strings.ToLower(m.Content[i].Value)
		if prefix != "" {
			key = prefix + "." + key
		}
		value := m.Content[i+1]
		if parentKeys[key] && value.Kind == yaml.ScalarNode && value.Tag == "!!null" {
			m.Content = slices.Delete(m.Content, i, i+2)
			changed = true
			continue
		}
		if parentKeys[key] && dropEmptySections(value, key) {
			changed = true
		}
		i += 2
	}
	return changed
}

// checkFileKeys rejects keys of the file that do not correspond to a
// Config field, so that typos are not silently ignored.
func checkFileKeys(v *viper.Viper) error {
	known := map[string]bool{}
	var keys []string
	for _, l := range leaves() {
		known[l.key] = true
		keys = append(keys, l.key)
	}
	var errs []error
	fileKeys := v.AllKeys()
	slices.Sort(fileKeys)
	for _, k := range fileKeys {
		switch {
		case known[k]:
		case parentKeys[k]:
			// A section written as a scalar ("memory: 5") is wrong. The
			// value is not quoted: it may be a secret written one level
			// too high ("telegram: 123456:AAH…").
			errs = append(errs, fmt.Errorf("%s: must be a mapping of keys (e.g. %s.%s: …), got a single %T value", k, k, firstChild(k), v.Get(k)))
		default:
			errs = append(errs, unknownKey(k, keys))
		}
	}
	return errors.Join(errs...)
}

// unknownKey reports a key the configuration does not have, with the
// nearest of keys. Keys are letters, digits, underscores and dots; one
// with anything else is most likely a value glued to its key
// ("api_key:sk-…:" or "token=123:AAH…" parse as one key), so it is named
// only up to there: the rest may be a secret.
func unknownKey(k string, keys []string) error {
	i := strings.IndexFunc(k, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.')
	})
	if i < 0 {
		return fmt.Errorf("%s: unknown key; did you mean %s?", k, keys[nearest(k, keys)])
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

// fileSecrets warns about each secret (llm.api_key, telegram.token, …) the
// file itself holds: a file that is copied, committed or shared carries it.
// The value is never quoted.
func fileSecrets(path string, v *viper.Viper) []string {
	var out []string
	for _, l := range leaves() {
		if val := v.Get(l.key); l.secret && val != nil && fmt.Sprint(val) != "" {
			out = append(out, fmt.Sprintf("%s holds a secret (%s): move it to the environment (%s) or to a .env file that is never committed, and leave it empty in %s",
				path, l.key, envName(l.key), path))
		}
	}
	return out
}
