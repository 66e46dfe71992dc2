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
	// NaN fails every comparison: !(in range) catches it.
	if t := c.LLM.Temperature; !(t >= 0 && t <= 2) {
		v.addf("llm.temperature", "must be between 0 and 2, got %v", t)
	}
	v.bounded("llm.max_tokens", c.LLM.MaxTokens, 1, maxTokens)
	v.positiveDuration("llm.timeout", c.LLM.Timeout)
	v.positiveDuration("llm.turn_timeout", c.LLM.TurnTimeout)
	if c.LLM.StillThinkingAfter < 0 {
		v.addf("llm.still_thinking_after", "must be 0 (no note) or a positive duration, got %s", c.LLM.StillThinkingAfter)
	}
	v.between("llm.max_retries", c.LLM.MaxRetries, 0, 10)
	v.bounded("llm.unhealthy_after", c.LLM.UnhealthyAfter, 1, 1000)
	v.bounded("llm.concurrency", c.LLM.Concurrency, 1, maxWorkers)
	if c.Media.Transcription.BaseURL != "" {
		v.httpURL("media.transcription.base_url", c.Media.Transcription.BaseURL, false)
	}
	v.between("media.transcription.max_seconds", c.Media.Transcription.MaxSeconds, 1, 24*3600)
	v.between("media.transcription.max_bytes", c.Media.Transcription.MaxBytes, 1024, 2<<30)
	v.oneOf("media.vision", c.Media.Vision, VisionAuto, VisionOn, VisionOff)
	v.between("media.max_image_bytes", c.Media.MaxImageBytes, 1024, 2<<30)
	v.between("media.max_document_bytes", c.Media.MaxDocumentBytes, 1024, 2<<30)
	v.between("media.max_pdf_bytes", c.Media.MaxPDFBytes, 1024, 2<<30)
	v.between("media.max_image_pixels", c.Media.MaxImagePixels, 1, 1<<30)
	v.between("media.workers.count", c.Media.Workers.Count, 1, 64)
	v.between("media.workers.memory_mb", c.Media.Workers.MemoryMB, 96, 1<<20)
	v.positiveDuration("media.workers.wait", c.Media.Workers.Wait)
	v.positiveDuration("media.workers.timeout", c.Media.Workers.Timeout)
	v.between("media.workers.cpu_seconds", c.Media.Workers.CPUSeconds, 1, 3600)
	if c.LLM.ContextWindow != 0 {
		v.between("llm.context_window", c.LLM.ContextWindow, 1024, 10_000_000)
	}
	v.oneOf("llm.tools.mode", c.LLM.Tools.Mode, ToolsAuto, ToolsOn, ToolsOff)
	v.between("llm.tools.max_rounds", c.LLM.Tools.MaxRounds, 1, 10)

	m := c.Memory
	v.oneOf("memory.storage", m.Storage, StorageSQLite, StorageJSON)
	v.between("memory.threshold", m.Threshold, 1, 500)
	v.bounded("memory.keep_recent_turns", m.KeepRecentTurns, 1, maxCount)
	v.bounded("memory.max_active_per_level", m.MaxActivePerLevel, 2, maxCount)
	if m.MaxActiveTotal < m.MaxActivePerLevel {
		v.addf("memory.max_active_total", "must be at least memory.max_active_per_level (%d), got %d",
			m.MaxActivePerLevel, m.MaxActiveTotal)
	} else {
		v.bounded("memory.max_active_total", m.MaxActiveTotal, 2, maxCount)
	}
	v.bounded("memory.max_memories", m.MaxMemories, 1, maxCount)
	v.bounded("memory.retention_days", m.RetentionDays, 0, MaxRetentionDays)
	v.positiveDuration("memory.retention_interval", m.RetentionInterval)
	v.bounded("memory.write_queue", m.WriteQueue, 1, maxQueue)
	v.bounded("memory.search_index_mb", m.SearchIndexMB, 0, 4096)
	if _, err := m.Location(); err != nil {
		v.addf("memory.timezone", "must be a time zone name such as Europe/Berlin or UTC, got %q", m.Timezone)
	}
	v.bounded("memory.budget.total", m.Budget.Total, 1, maxTokens)
	v.bounded("memory.budget.system", m.Budget.System, 0, maxTokens)
	v.bounded("memory.budget.memories", m.Budget.Memories, 0, maxTokens)
	v.bounded("memory.budget.summaries", m.Budget.Summaries, 0, maxTokens)
	v.bounded("memory.budget.snippets", m.Budget.Snippets, 0, maxTokens)
	v.bounded("memory.budget.recent", m.Budget.Recent, 0, maxTokens)
	v.bounded("memory.facts.budget", m.Facts.Budget, 0, maxTokens)
	e := m.Embeddings
	if e.BaseURL != "" {
		v.httpURL("memory.embeddings.base_url", e.BaseURL, false)
	}
	v.bounded("memory.embeddings.dimensions", e.Dimensions, 0, 8192)
	v.positiveDuration("memory.embeddings.timeout", e.Timeout)
	v.between("memory.embeddings.batch", e.Batch, 1, 2048)

	v.bounded("pipeline.max_concurrent", c.Pipeline.MaxConcurrent, 1, maxWorkers)

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
	v.bounded("whatsapp.split_limit", w.SplitLimit, 100, 65536) // WhatsApp's own limit
	if w.ClientVersion != "" && !waVersionRE.MatchString(strings.TrimSpace(w.ClientVersion)) {
		v.addf("whatsapp.client_version", "must be a WhatsApp Web version, three numbers like 2.3000.1031234567, got %q", w.ClientVersion)
	}

	v.listenAddr("http.listen", c.HTTP.Listen, true)

	v.bounded("limits.messages_per_minute", c.Limits.MessagesPerMinute, 0, maxQueue)
	v.bounded("limits.tokens_per_day", c.Limits.TokensPerDay, 0, maxTokensPerDay)

	v.positiveDuration("shutdown.timeout", c.Shutdown.Timeout)
	v.positiveDuration("database.turn_lease", c.Database.TurnLease)
	v.positiveDuration("database.leader_lease", c.Database.LeaderLease)

	return errors.Join(v.errs...)
}

// Upper bounds of the number keys: far above any sensible setting, low
// enough that no sum or product of them overflows and no buffer sized by
// them exhausts memory.
const (
	// MaxRetentionDays is memory.retention_days at most: 100 years. (An
	// unchecked 12,169,727 days once wrapped to minutes and purged a whole
	// archive at start.)
	MaxRetentionDays = 36500
	maxTokens        = 10_000_000        // a prompt or reply budget, in tokens
	maxTokensPerDay  = 1_000_000_000_000 // limits.tokens_per_day
	maxWorkers       = 10_000            // goroutines and connections in flight
	maxQueue         = 10_000_000        // queued messages; messages per minute
	maxCount         = 10_000            // summaries, turns, memories kept
)

var (
	// waVersionRE matches whatsapp.client_version: "2.3000.1031234567".
	waVersionRE = regexp.MustCompile(`^[0-9]{1,10}\.[0-9]{1,10}\.[0-9]{1,10}$`)
	// webhookSecretRE is Telegram's rule for secret_token.
	webhookSecretRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)
)

// KeyError is a problem with one key's value, for the user: "memory.threshold:
// must be between 1 and 500, got 0; set by RECALL_MEMORY_THRESHOLD".
type KeyError struct {
	Key   string // full key, with the index of a list's entry: "access.admins[1]"
	Msg   string // what is wrong
	Where string // where the value came from ("set by RECALL_…"); "" = not known, or the default
}

func (e *KeyError) Error() string {
	if e.Where == "" {
		return e.Key + ": " + e.Msg
	}
	return e.Key + ": " + e.Msg + "; " + e.Where
}

// validator collects problems, each a *KeyError.
type validator struct {
	errs []error
}

func (v *validator) addf(key, format string, args ...any) {
	v.errs = append(v.errs, &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)})
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

// bounded is atLeast with an upper bound, named separately: "must be at
// most 36500, got 12169727".
func (v *validator) bounded(key string, n, min, max int) {
	switch {
	case n < min:
		v.atLeast(key, n, min)
	case n > max:
		v.addf(key, "must be at most %d, got %d", max, n)
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

// userList checks each entry names a user as its channel writes them
// (userProblem).
func (v *validator) userList(key string, entries []string) {
	for i, e := range entries {
		if msg := userProblem(e); msg != "" {
			v.addf(fmt.Sprintf("%s[%d]", key, i), "%s", msg)
		}
	}
}
