package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/go-viper/mapstructure/v2"
)

var durationType = reflect.TypeFor[time.Duration]()

// decodeHook is what viper's Unmarshal decodes values with, beside
// mapstructure's weak typing (variables are strings): durations and lists.
var decodeHook = mapstructure.ComposeDecodeHookFunc(durationHook, listHook)

// durationHook parses strings like "30s" into time.Duration and rejects bare
// non-zero numbers, which would otherwise silently mean nanoseconds.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != durationType || from == durationType {
		return data, nil
	}
	switch from.Kind() {
	case reflect.String:
		return time.ParseDuration(strings.TrimSpace(data.(string)))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		if reflect.ValueOf(data).IsZero() {
			return time.Duration(0), nil
		}
		return nil, errNoUnit
	}
	return data, nil
}

var errNoUnit = errors.New("a duration without a unit")

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

// checkValue decodes val (what viper found for key) as a value of type t
// the way Unmarshal will, and says what is wrong with it for the user:
// "\"abc\" is not a duration (like 30s or 2m)". It returns "" when val
// decodes. A secret's value is never shown.
func checkValue(val any, t reflect.Type, secret bool) string {
	if s, ok := val.(string); ok && strings.TrimSpace(s) == "" && t.Kind() != reflect.String && t.Kind() != reflect.Slice {
		// Weak typing would read "" as 0 or false.
		return "is empty, and it needs " + expects(t) + " (remove the key to keep the default)"
	}
	if f, ok := val.(float64); ok && isInt(t.Kind()) {
		// mapstructure would truncate 2.5 to 2, and 1e20 overflows.
		switch {
		case f != math.Trunc(f):
			return fmt.Sprintf("%v is not a whole number", f)
		case math.Abs(f) >= math.MaxInt64:
			return fmt.Sprintf("%v is out of range", f)
		}
	}
	out := reflect.New(t)
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result: out.Interface(), WeaklyTypedInput: true, DecodeHook: decodeHook,
	})
	if err == nil {
		err = dec.Decode(val)
	}
	if err == nil {
		return ""
	}
	shown := "the value (not shown: it is a secret)"
	switch val := val.(type) {
	case string:
		if !secret {
			shown = strconv.Quote(val)
		}
	case map[string]any, []any:
		shown = "a list or mapping"
		if t.Kind() != reflect.Slice {
			return "must be a single value, got " + shown
		}
	default:
		if !secret {
			shown = fmt.Sprint(val)
		}
	}
	switch k := t.Kind(); {
	case t == durationType && errors.Is(err, errNoUnit):
		return shown + " has no unit (write it like 30s or 2m)"
	case t == durationType:
		return shown + " is not a duration (like 30s or 2m)"
	case isInt(k):
		if s, ok := val.(string); ok {
			if _, perr := strconv.ParseInt(strings.TrimSpace(s), 0, 64); errors.Is(perr, strconv.ErrRange) {
				return shown + " is out of range"
			}
		}
		return shown + " is not a whole number"
	case k == reflect.Float64:
		if s, ok := val.(string); ok {
			if _, perr := strconv.ParseFloat(strings.TrimSpace(s), 64); errors.Is(perr, strconv.ErrRange) {
				return shown + " is out of range"
			}
		}
		return shown + " is not a number"
	case k == reflect.Bool:
		return shown + " is not true or false"
	case k == reflect.Slice:
		return "must be a list (a YAML list, or \"a, b\" in a variable), got " + shown
	}
	return fmt.Sprintf("%s cannot be read: %v", shown, err)
}

func isInt(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Int64 || k >= reflect.Uint && k <= reflect.Uint64
}

// expects says what a value of type t is written like, for messages.
func expects(t reflect.Type) string {
	switch k := t.Kind(); {
	case t == durationType:
		return "a duration (like 30s or 2m)"
	case isInt(k):
		return "a whole number"
	case k == reflect.Float64:
		return "a number"
	case k == reflect.Bool:
		return "true or false"
	}
	return "a value"
}

// normalizeLists turns empty lists into nil so that "allowed_users: []", an
// empty RECALL_ACCESS_ALLOWED_USERS and an absent key load identically.
func normalizeLists(c *Config) {
	rv := reflect.ValueOf(c).Elem()
	for _, l := range leaves() {
		f := rv.FieldByIndex(l.index)
		if f.Kind() == reflect.Slice && f.Len() == 0 && !f.IsNil() {
			f.Set(reflect.Zero(f.Type()))
		}
	}
}
