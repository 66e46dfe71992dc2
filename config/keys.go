package config

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// EnvPrefix is the prefix of every environment variable override.
const EnvPrefix = "RECALL"

// leaf describes one configuration key derived from the Config struct.
type leaf struct {
	key    string // dotted key, e.g. "memory.budget.total"
	index  []int  // reflect field index path from Config
	secret bool   // tagged secret:"true"
}

var (
	leavesOnce sync.Once
	leavesList []leaf
	parentKeys map[string]bool // keys of nested sections, e.g. "memory.budget"
)

// leaves returns every leaf key of Config, in struct order.
func leaves() []leaf {
	leavesOnce.Do(func() {
		parentKeys = map[string]bool{}
		leavesList = walk(reflect.TypeFor[Config](), "", nil)
	})
	return leavesList
}

func walk(t reflect.Type, prefix string, index []int) []leaf {
	var out []leaf
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if name == "" || name == "-" {
			panic(fmt.Sprintf("config: field %s.%s has no mapstructure tag", t.Name(), f.Name))
		}
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		idx := append(append([]int(nil), index...), i)
		if f.Type.Kind() == reflect.Struct {
			parentKeys[key] = true
			out = append(out, walk(f.Type, key, idx)...)
			continue
		}
		out = append(out, leaf{key: key, index: idx, secret: f.Tag.Get("secret") == "true"})
	}
	return out
}

// envName returns the environment variable that overrides key.
func envName(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// envNames returns every variable that sets key, the first one set winning:
// its own, then a shorthand's (RECALL_LLM_TOOLS for llm.tools.mode).
func envNames(key string) []string {
	return append([]string{envName(key)}, shorthandEnv(key)...)
}

// FileEnv names the configuration file when no --config is given
// (DefaultSources). It sets no key, and .env cannot set it.
const FileEnv = EnvPrefix + "_CONFIG"
