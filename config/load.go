package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
)

// Sources says where Load reads the configuration, beside the defaults and
// the process environment.
type Sources struct {
	File   string // YAML file; "" = none; a missing one is an error
	DotEnv string // .env file; "" = none; a missing one is no error
}

// DefaultSources returns where the bot reads its configuration: the file
// flag names (--config), else the one RECALL_CONFIG names (set but empty:
// no file), else config.yaml in the working directory when there is one;
// and .env in the working directory.
func DefaultSources(flag string) Sources {
	s := Sources{File: flag, DotEnv: ".env"}
	if flag != "" {
		return s
	}
	if p, ok := os.LookupEnv(FileEnv); ok {
		s.File = p
		return s
	}
	if _, err := os.Stat("config.yaml"); !errors.Is(err, fs.ErrNotExist) {
		s.File = "config.yaml" // a file that cannot be read is said so by Load
	}
	return s
}

// Load is LoadSources with the YAML file at path (none when "") and no
// .env file.
func Load(path string) (Config, error) {
	return LoadSources(Sources{File: path})
}

// LoadSources builds the configuration with viper, each key from the first
// of: its RECALL_* variable, the .env file, the YAML file, Default; then
// validates it. A variable (or .env line) set to "" counts: it sets its
// key to empty (RECALL_HTTP_LISTEN= turns the health server off), and is
// refused, naming it, for a key where empty means nothing (numbers,
// durations, switches, and what Validate refuses empty). A missing file
// at an explicit path, a key in the file that Recall does not know, a
// RECALL_* variable that sets no key (CheckEnv, and the same in .env), a
// value that cannot be read as its key's type, or a failed Validate is an
// error naming the key and where its value came from; on error the zero
// Config is returned.
//
// Durations are written like "30s" or "10m". Lists are YAML lists in the
// file and comma- or space-separated strings in variables.
func LoadSources(s Sources) (Config, error) {
	c, from, err := load(s)
	if err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("config: invalid:\n%w", from.annotate(err))
	}
	return c, nil
}

// load is LoadSources without validation; it also returns where each key
// came from.
func load(s Sources) (Config, origins, error) {
	var errs []error
	if err := CheckEnv(os.Environ()); err != nil {
		errs = append(errs, err)
	}
	var dotenv map[string]dotEnvVar
	if s.DotEnv != "" {
		var err error
		if dotenv, err = readDotEnv(s.DotEnv); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return Config{}, nil, fmt.Errorf("config: %w", errors.Join(errs...))
	}

	v := viper.New()
	var warnings []string
	if s.File != "" {
		var err error
		if warnings, err = readFile(v, s.File); err != nil {
			return Config{}, nil, fmt.Errorf("config: %w", err)
		}
	}
	from, more, err := bindKeys(v, s, dotenv)
	if err != nil {
		return Config{}, nil, fmt.Errorf("config: %w", err)
	}
	warnings = append(warnings, more...)
	if err := checkValues(v, from); err != nil {
		return Config{}, nil, fmt.Errorf("config: %w", err)
	}

	var c Config
	if err := v.Unmarshal(&c, viper.DecodeHook(decodeHook), func(dc *mapstructure.DecoderConfig) {
		dc.ErrorUnused = true
	}); err != nil {
		return Config{}, nil, fmt.Errorf("config: decoding: %w", err)
	}
	normalizeLists(&c)
	c.warnings = warnings
	return c, from, nil
}

// bindKeys gives v every key's default and variables (v holds the file
// already), and the .env file's variables for the keys the environment
// does not set. It returns where each key's value comes from, and a
// warning for each variable set to "" that empties what the file sets.
func bindKeys(v *viper.Viper, s Sources, dotenv map[string]dotEnvVar) (origins, []string, error) {
	inFile := map[string]bool{} // keys the file sets to something not empty
	for _, l := range leaves() {
		if val := v.Get(l.key); val != nil && !isEmpty(val) {
			inFile[l.key] = true
		}
	}
	v.AllowEmptyEnv(true)
	from := origins{}
	var warnings []string
	defaults := reflect.ValueOf(Default())
	for _, l := range leaves() {
		v.SetDefault(l.key, defaults.FieldByIndex(l.index).Interface())
		// Every key explicitly: AutomaticEnv alone does not reach Unmarshal.
		names := envNames(l.key)
		if err := v.BindEnv(append([]string{l.key}, names...)...); err != nil {
			return nil, nil, fmt.Errorf("binding %s: %w", l.key, err)
		}
		o, ok := fromEnv(names, dotenv, s.DotEnv)
		if !ok {
			if s.File != "" && v.InConfig(l.key) {
				from[l.key] = origin{file: s.File}
			}
			continue
		}
		from[l.key] = o
		if o.dotenv != "" { // what viper reads after the environment, before the file
			v.Set(l.key, o.value)
		}
		if o.value == "" && inFile[l.key] {
			// .env.example's blank lines, kept in a .env, would
			// otherwise empty what config.yaml sets without a word.
			warnings = append(warnings, fmt.Sprintf("%s: %s is empty, not what %s sets (%s to use the file's)",
				o.emptyText(), l.key, s.File, o.unsetText()))
		}
	}
	return from, warnings, nil
}

// checkValues checks that each key's value (as v has it) can be read as
// its type, and refuses a variable set to "" for a key that cannot be
// empty (a number, a duration, a switch), naming it. It returns every
// problem, each a *KeyError.
func checkValues(v *viper.Viper, from origins) error {
	var errs []error
	defaults := reflect.ValueOf(Default())
	for _, l := range leaves() {
		def := defaults.FieldByIndex(l.index)
		o := from[l.key]
		if k := def.Kind(); o.env != "" && o.value == "" && k != reflect.String && k != reflect.Slice {
			errs = append(errs, &KeyError{Key: l.key, Msg: fmt.Sprintf("%s, and %s needs %s: %s to keep the default (%v)",
				o.emptyText(), l.key, expects(def.Type()), o.unsetText(), def.Interface())})
			continue
		}
		if msg := checkValue(v.Get(l.key), def.Type(), l.secret); msg != "" {
			errs = append(errs, &KeyError{Key: l.key, Msg: msg, Where: o.where()})
		}
	}
	return errors.Join(errs...)
}

// isEmpty reports whether a value of the file is empty: "", false, 0, or
// an empty list or mapping.
func isEmpty(val any) bool {
	rv := reflect.ValueOf(val)
	switch rv.Kind() {
	case reflect.Slice, reflect.Map:
		return rv.Len() == 0
	}
	return rv.IsZero()
}

// fromEnv returns where the first of names that is set comes from: the
// environment, else the .env file (read from dotenvPath).
func fromEnv(names []string, dotenv map[string]dotEnvVar, dotenvPath string) (origin, bool) {
	for _, n := range names {
		if val, ok := os.LookupEnv(n); ok {
			return origin{env: n, value: val}, true
		}
	}
	for _, n := range names {
		if d, ok := dotenv[n]; ok {
			return origin{env: n, value: d.value, dotenv: dotenvPath, line: d.line}, true
		}
	}
	return origin{}, false
}

// origin is where a key's value came from: a variable (of the environment
// or of a .env file), or the YAML file. The zero origin is the default.
type origin struct {
	env    string // variable name
	value  string // the variable's value, never shown (it may be a secret)
	dotenv string // .env file holding the variable; "" = the environment
	line   int    // its line in the .env file
	file   string // YAML file
}

// origins maps keys to where their values came from; keys at their
// default are absent.
type origins map[string]origin

// where names the origin for messages: "set by RECALL_LLM_TIMEOUT",
// "set in .env line 3 (RECALL_LLM_TIMEOUT)", "set in config.yaml"; "" for a
// default.
func (o origin) where() string {
	switch {
	case o.dotenv != "":
		return fmt.Sprintf("set in %s line %d (%s)", o.dotenv, o.line, o.env)
	case o.env != "":
		return "set by " + o.env
	case o.file != "":
		return "set in " + o.file
	}
	return ""
}

// emptyText says that the variable is set but empty.
func (o origin) emptyText() string {
	if o.dotenv != "" {
		return fmt.Sprintf("%s line %d sets %s empty", o.dotenv, o.line, o.env)
	}
	return o.env + " is set but empty"
}

// unsetText says how to take the variable away.
func (o origin) unsetText() string {
	if o.dotenv != "" {
		return "remove the line"
	}
	return "unset it"
}

// annotate adds to each KeyError of err (Validate's) where the key's
// value came from, and for one set empty by a variable how to go back to
// the default.
func (from origins) annotate(err error) error {
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	var out []error
	for _, e := range joined.Unwrap() {
		var ke *KeyError
		if !errors.As(e, &ke) {
			out = append(out, e)
			continue
		}
		key, _, _ := strings.Cut(ke.Key, "[") // access.allowed_users[1]
		o, ok := from[key]
		if !ok {
			out = append(out, e)
			continue
		}
		a := *ke
		a.Where = o.where()
		if o.env != "" && o.value == "" {
			a.Where = fmt.Sprintf("%s: %s to keep the default", o.emptyText(), o.unsetText())
		}
		out = append(out, &a)
	}
	return errors.Join(out...)
}
