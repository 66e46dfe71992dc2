// Package logs owns the process logger: log/slog in text or JSON, a minimum
// level, and redaction — configured secrets (bot tokens, API keys) are
// replaced by "***" in every message and attribute before a line is written.
package logs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"sort"
	"strings"
)

// Level and format names (log.level, log.format).
const (
	LevelDebug = "debug"
	LevelInfo  = "info"
	LevelWarn  = "warn"
	LevelError = "error"

	FormatText = "text"
	FormatJSON = "json"
)

// New returns a logger writing to w. level is debug|info|warn|error, format
// text|json; secrets are never written.
func New(w io.Writer, level, format string, secrets []string) *slog.Logger {
	var lv slog.Level
	switch strings.ToLower(level) {
	case LevelDebug:
		lv = slog.LevelDebug
	case LevelWarn:
		lv = slog.LevelWarn
	case LevelError:
		lv = slog.LevelError
	default:
		lv = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler
	if strings.ToLower(format) == FormatJSON {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(NewRedactor(h, secrets))
}

// Redactor is a slog.Handler that removes secrets from records.
type Redactor struct {
	next    slog.Handler
	replace *strings.Replacer
}

// NewRedactor wraps next. Each secret is removed as is and escaped for a
// URL path or query (errors and error pages quote request URLs, and a bot
// token is part of the Bot API's URLs). Secrets shorter than 4 characters
// are ignored (they would mangle ordinary words).
func NewRedactor(next slog.Handler, secrets []string) *Redactor {
	var forms []string
	for _, s := range secrets {
		if len(s) >= 4 {
			forms = append(forms, s, url.PathEscape(s), url.QueryEscape(s))
		}
	}
	// Longest first: a secret that contains another is removed whole.
	sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	var pairs []string
	seen := map[string]bool{}
	for _, f := range forms {
		if !seen[f] {
			seen[f] = true
			pairs = append(pairs, f, "***")
		}
	}
	return &Redactor{next: next, replace: strings.NewReplacer(pairs...)}
}

// Redact removes secrets from s.
func (r *Redactor) Redact(s string) string { return r.replace.Replace(s) }

// Enabled implements slog.Handler.
func (r *Redactor) Enabled(ctx context.Context, l slog.Level) bool { return r.next.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (r *Redactor) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, r.Redact(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(r.attr(a))
		return true
	})
	return r.next.Handle(ctx, out)
}

func (r *Redactor) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, r.Redact(v.String()))
	case slog.KindGroup:
		var as []any
		for _, g := range v.Group() {
			as = append(as, r.attr(g))
		}
		return slog.Group(a.Key, as...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, r.Redact(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, r.Redact(x.String()))
		default:
			return slog.String(a.Key, r.Redact(fmt.Sprint(x)))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// WithAttrs implements slog.Handler.
func (r *Redactor) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = r.attr(a)
	}
	return &Redactor{next: r.next.WithAttrs(clean), replace: r.replace}
}

// WithGroup implements slog.Handler.
func (r *Redactor) WithGroup(name string) slog.Handler {
	return &Redactor{next: r.next.WithGroup(name), replace: r.replace}
}
