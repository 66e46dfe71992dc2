package config

import "reflect"

// Secrets returns the non-empty secret values (llm.api_key, telegram.token,
// telegram.webhook.secret) so loggers can scrub them from output.
func (c Config) Secrets() []string {
	var out []string
	rv := reflect.ValueOf(c)
	for _, l := range leaves() {
		if !l.secret {
			continue
		}
		if s := rv.FieldByIndex(l.index).String(); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Redacted returns a copy of c with every non-empty secret replaced by
// "***", safe to log or print. Lists are copied, so the result shares no
// memory with c.
func (c Config) Redacted() Config {
	rv := reflect.ValueOf(&c).Elem()
	for _, l := range leaves() {
		f := rv.FieldByIndex(l.index)
		switch {
		case f.Kind() == reflect.Slice && !f.IsNil():
			f.Set(reflect.AppendSlice(reflect.MakeSlice(f.Type(), 0, f.Len()), f))
		case l.secret && f.String() != "":
			f.SetString(redactedValue)
		}
	}
	return c
}
