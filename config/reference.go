package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Key is one configuration key as the reference documents it
// (docs/operations.md is generated from Keys by docs/docs_test.go).
type Key struct {
	Name    string // dotted, as in config.yaml: "memory.budget.total"
	Env     string // the variable that sets it: "RECALL_MEMORY_BUDGET_TOTAL"
	Default string // Default()'s value, written as config.yaml would: 30s, [], ""
	Secret  bool   // redacted from logs; belongs in the environment or .env
}

// Keys returns every key of Config, in struct order, with its environment
// variable and default.
func Keys() []Key {
	def := reflect.ValueOf(Default())
	var out []Key
	for _, l := range leaves() {
		out = append(out, Key{
			Name:    l.key,
			Env:     envName(l.key),
			Default: formatDefault(def.FieldByIndex(l.index)),
			Secret:  l.secret,
		})
	}
	return out
}

// formatDefault writes a default value as it is written in config.yaml.
func formatDefault(v reflect.Value) string {
	if d, ok := v.Interface().(time.Duration); ok {
		return formatDuration(d)
	}
	switch v.Kind() {
	case reflect.String:
		if v.String() == "" {
			return `""`
		}
		return v.String()
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return "[" + strings.Join(parts, ", ") + "]"
	default:
		return fmt.Sprint(v.Interface())
	}
}

// formatDuration writes 30s, 10m or 1h rather than time.Duration's 10m0s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
