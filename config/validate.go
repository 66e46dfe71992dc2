package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Validate checks every setting and returns all problems joined together
// (errors.Join), each naming the full key and what was expected, e.g.
// "memory.threshold: must be between 1 and 500, got 0". It returns nil when
// the configuration is usable.
func (c Config) Validate() error {
	v := &validator{}

	v.nonEmpty("data.dir", c.Data.Dir)
	if c.Database.URL != "" {
		// Never quote the URL: it may hold a password.
		if u, err := url.Parse(c.Database.URL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			v.addf("database.url", "must be empty (SQLite in data.dir) or a postgres://user:password@host:port/database URL")
		}
		if c.Memory.Storage == StorageJSON {
			v.addf("memory.storage", "must be sqlite (the database) with database.url: per-user JSON files are not offered on PostgreSQL, a file on one machine cannot be shared")
		}
	}

	v.oneOf("log.level", c.Log.Level, LogLevelDebug, LogLevelInfo, LogLevelWarn, LogLevelError)
	v.oneOf("log.format", c.Log.Format, LogFormatText, LogFormatJSON)

	v.httpURL("llm.base_url", c.LLM.BaseURL, false)
	v.nonEmpty("llm.model", c.LLM.Model)
	if c.LLM.Temperature < 0 || c.LLM.Temperature > 2 {
		v.addf("llm.temperature", "must be between 0 and 2, got %v", c.LLM.Temperature)
	}
	v.atLeast("llm.max_tokens", c.LLM.MaxTokens, 1)
	v.positiveDuration("llm.timeout", c.LLM.Timeout)
	v.positiveDuration("llm.turn_timeout", c.LLM.TurnTimeout)
	if c.LLM.StillThinkingAfter < 0 {
		v.addf("llm.still_thinking_after", "must be 0 (no note) or a positive duration, got %s", c.LLM.StillThinkingAfter)
	}
	v.between("llm.max_retries", c.LLM.MaxRetries, 0, 10)
	v.atLeast("llm.unhealthy_after", c.LLM.UnhealthyAfter, 1)
	v.atLeast("llm.concurrency", c.LLM.Concurrency, 1)
	if c.Media.Transcription.BaseURL != "" {
		v.httpURL("media.transcription.base_url", c.Media.Transcription.BaseURL, false)
	}
	v.between("media.transcription.max_seconds", c.Media.Transcription.MaxSeconds, 1, 24*3600)
	v.between("media.transcription.max_bytes", c.Media.Transcription.MaxBytes, 1024, 2<<30)
	v.oneOf("media.vision", c.Media.Vision, VisionAuto, VisionOn, VisionOff)
	v.between("media.max_image_bytes", c.Media.MaxImageBytes, 1024, 2<<30)
	v.between("media.max_document_bytes", c.Media.MaxDocumentBytes, 1024, 2<<30)
	if c.LLM.ContextWindow != 0 {
		v.between("llm.context_window", c.LLM.ContextWindow, 1024, 10_000_000)
	}
	v.oneOf("llm.tools.mode", c.LLM.Tools.Mode, ToolsAuto, ToolsOn, ToolsOff)
	v.between("llm.tools.max_rounds", c.LLM.Tools.MaxRounds, 1, 10)

	m := c.Memory
	v.oneOf("memory.storage", m.Storage, StorageSQLite, StorageJSON)
	v.between("memory.threshold", m.Threshold, 1, 500)
	v.atLeast("memory.keep_recent_turns", m.KeepRecentTurns, 1)
	v.atLeast("memory.max_active_per_level", m.MaxActivePerLevel, 2)
	if m.MaxActiveTotal < m.MaxActivePerLevel {
		v.addf("memory.max_active_total", "must be at least memory.max_active_per_level (%d), got %d",
			m.MaxActivePerLevel, m.MaxActiveTotal)
	}
	v.atLeast("memory.max_memories", m.MaxMemories, 1)
	v.atLeast("memory.retention_days", m.RetentionDays, 0)
	v.positiveDuration("memory.retention_interval", m.RetentionInterval)
	v.atLeast("memory.write_queue", m.WriteQueue, 1)
	v.atLeast("memory.budget.total", m.Budget.Total, 1)
	v.atLeast("memory.budget.system", m.Budget.System, 0)
	v.atLeast("memory.budget.memories", m.Budget.Memories, 0)
	v.atLeast("memory.budget.summaries", m.Budget.Summaries, 0)
	v.atLeast("memory.budget.snippets", m.Budget.Snippets, 0)
	v.atLeast("memory.budget.recent", m.Budget.Recent, 0)
	v.atLeast("memory.facts.budget", m.Facts.Budget, 0)

	v.atLeast("pipeline.max_concurrent", c.Pipeline.MaxConcurrent, 1)

	v.userList("access.allowed_users", c.Access.AllowedUsers)
	v.userList("access.admins", c.Access.Admins)

	t := c.Telegram
	v.httpURL("telegram.api_url", t.APIURL, false)
	if t.Webhook.URL != "" {
		v.httpURL("telegram.webhook.url", t.Webhook.URL, true)
		v.listenAddr("telegram.webhook.listen", t.Webhook.Listen, false)
		if t.Webhook.Secret == "" {
			v.addf("telegram.webhook.secret", "is required when telegram.webhook.url is set (1-256 characters of A-Z a-z 0-9 _ -)")
		}
	}
	if t.Webhook.Secret != "" && !webhookSecretRE.MatchString(t.Webhook.Secret) {
		// Never echo the secret itself.
		v.addf("telegram.webhook.secret", "must be 1-256 characters of A-Z a-z 0-9 _ - (value not shown), got %d characters",
			len(t.Webhook.Secret))
	}
	v.oneOf("telegram.groups.reply", t.Groups.Reply, GroupReplyMention, GroupReplyAlways)

	w := c.WhatsApp
	v.oneOf("whatsapp.groups.reply", w.Groups.Reply, GroupReplyMention, GroupReplyAlways)
	if w.BacklogWindow < 0 {
		v.addf("whatsapp.backlog_window", "must be 0 or a positive duration, got %s", w.BacklogWindow)
	}
	v.atLeast("whatsapp.split_limit", w.SplitLimit, 100)

	v.listenAddr("http.listen", c.HTTP.Listen, true)

	v.atLeast("limits.messages_per_minute", c.Limits.MessagesPerMinute, 0)
	v.atLeast("limits.tokens_per_day", c.Limits.TokensPerDay, 0)

	v.positiveDuration("shutdown.timeout", c.Shutdown.Timeout)

	return errors.Join(v.errs...)
}

var (
	// userRE matches access entries "channel:id": a lowercase channel name,
	// a colon, and a non-empty id without whitespace.
	userRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*:\S+$`)
	// webhookSecretRE is Telegram's rule for secret_token.
	webhookSecretRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)
)

// validator collects problems; every message starts with the full key.
type validator struct {
	errs []error
}

func (v *validator) addf(key, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: "+format, append([]any{key}, args...)...))
}

func (v *validator) nonEmpty(key, s string) {
	if strings.TrimSpace(s) == "" {
		v.addf(key, "must not be empty")
	}
}

func (v *validator) oneOf(key, s string, allowed ...string) {
	if !slices.Contains(allowed, s) {
		v.addf(key, "must be one of %s, got %q", strings.Join(allowed, "|"), s)
	}
}

func (v *validator) atLeast(key string, n, min int) {
	if n < min {
		v.addf(key, "must be at least %d, got %d", min, n)
	}
}

func (v *validator) between(key string, n, min, max int) {
	if n < min || n > max {
		v.addf(key, "must be between %d and %d, got %d", min, max, n)
	}
}

func (v *validator) positiveDuration(key string, d time.Duration) {
	if d <= 0 {
		v.addf(key, "must be a positive duration such as \"30s\", got %s", d)
	}
}

// httpURL checks that s is an absolute http or https URL with a host (only
// https when httpsOnly).
func (v *validator) httpURL(key, s string, httpsOnly bool) {
	want := "an http(s) URL"
	if httpsOnly {
		want = "an https URL"
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "https" && (httpsOnly || u.Scheme != "http")) {
		v.addf(key, "must be %s, got %q", want, s)
	}
}

// listenAddr checks that s is host:port (host may be empty); an empty s is
// accepted only when emptyOK.
func (v *validator) listenAddr(key, s string, emptyOK bool) {
	if s == "" && emptyOK {
		return
	}
	if _, port, err := net.SplitHostPort(s); err != nil || port == "" {
		hint := ""
		if emptyOK {
			hint = ", or empty to disable"
		}
		v.addf(key, "must be host:port (e.g. 127.0.0.1:9090 or :8443)%s, got %q", hint, s)
	}
}

func (v *validator) userList(key string, entries []string) {
	for i, e := range entries {
		if !userRE.MatchString(e) {
			v.addf(fmt.Sprintf("%s[%d]", key, i),
				"must be \"channel:id\" with a lowercase channel (e.g. telegram:123456, console:local), got %q", e)
		}
	}
}
