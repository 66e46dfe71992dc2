package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string // substring of the error; "" = valid
	}{
		{"data.dir empty", func(c *Config) { c.Data.Dir = "" }, "data.dir: must not be empty"},
		{"database.url postgres", func(c *Config) { c.Database.URL = "postgres://recall:pw@db:5432/recall" }, ""},
		{"database.url postgresql", func(c *Config) { c.Database.URL = "postgresql://db/recall?sslmode=disable" }, ""},
		{"database.url other scheme", func(c *Config) { c.Database.URL = "mysql://db/recall" }, "database.url: must be empty (SQLite in data.dir) or a postgres://"},
		{"database.url no host", func(c *Config) { c.Database.URL = "postgres:recall" }, "database.url: must be empty"},
		{"database.url with json storage", func(c *Config) {
			c.Database.URL, c.Memory.Storage = "postgres://db/recall", StorageJSON
		}, "memory.storage: must be sqlite (the database) with database.url"},
		{"log.level", func(c *Config) { c.Log.Level = "trace" }, `log.level: must be one of debug|info|warn|error, got "trace"`},
		{"log.format", func(c *Config) { c.Log.Format = "xml" }, "log.format: must be one of text|json"},
		{"llm.base_url scheme", func(c *Config) { c.LLM.BaseURL = "ftp://x/v1" }, "llm.base_url: must be an http(s) URL"},
		{"llm.base_url relative", func(c *Config) { c.LLM.BaseURL = "localhost:11434/v1" }, "llm.base_url"},
		{"llm.base_url empty", func(c *Config) { c.LLM.BaseURL = "" }, "llm.base_url"},
		{"llm.base_url ollama ok", func(c *Config) { c.LLM.BaseURL = "http://localhost:11434/v1" }, ""},
		{"llm.model", func(c *Config) { c.LLM.Model = " " }, "llm.model: must not be empty"},
		{"llm.temperature low", func(c *Config) { c.LLM.Temperature = -0.1 }, "llm.temperature: must be between 0 and 2, got -0.1"},
		{"llm.temperature high", func(c *Config) { c.LLM.Temperature = 2.5 }, "llm.temperature"},
		{"llm.temperature edge ok", func(c *Config) { c.LLM.Temperature = 2 }, ""},
		{"llm.max_tokens", func(c *Config) { c.LLM.MaxTokens = 0 }, "llm.max_tokens: must be at least 1, got 0"},
		{"llm.timeout", func(c *Config) { c.LLM.Timeout = 0 }, "llm.timeout: must be a positive duration"},
		{"llm.max_retries high", func(c *Config) { c.LLM.MaxRetries = 11 }, "llm.max_retries: must be between 0 and 10, got 11"},
		{"llm.max_retries negative", func(c *Config) { c.LLM.MaxRetries = -1 }, "llm.max_retries"},
		{"llm.max_retries zero ok", func(c *Config) { c.LLM.MaxRetries = 0 }, ""},
		{"llm.concurrency", func(c *Config) { c.LLM.Concurrency = 0 }, "llm.concurrency: must be at least 1"},
		{"memory.storage", func(c *Config) { c.Memory.Storage = "postgres" }, "memory.storage: must be one of sqlite|json"},
		{"memory.storage json ok", func(c *Config) { c.Memory.Storage = StorageJSON }, ""},
		{"memory.threshold zero", func(c *Config) { c.Memory.Threshold = 0 }, "memory.threshold: must be between 1 and 500, got 0"},
		{"memory.threshold high", func(c *Config) { c.Memory.Threshold = 501 }, "memory.threshold: must be between 1 and 500, got 501"},
		{"memory.keep_recent_turns", func(c *Config) { c.Memory.KeepRecentTurns = 0 }, "memory.keep_recent_turns: must be at least 1"},
		{"memory.max_active_per_level", func(c *Config) { c.Memory.MaxActivePerLevel = 1 }, "memory.max_active_per_level: must be at least 2, got 1"},
		{"memory.max_active_total", func(c *Config) { c.Memory.MaxActiveTotal = 4 }, "memory.max_active_total: must be at least memory.max_active_per_level (5), got 4"},
		{"memory.max_active_total equal ok", func(c *Config) { c.Memory.MaxActiveTotal = 5 }, ""},
		{"memory.max_memories", func(c *Config) { c.Memory.MaxMemories = 0 }, "memory.max_memories: must be at least 1"},
		{"memory.retention_days", func(c *Config) { c.Memory.RetentionDays = -1 }, "memory.retention_days: must be at least 0"},
		{"memory.retention_interval", func(c *Config) { c.Memory.RetentionInterval = 0 }, "memory.retention_interval: must be a positive duration"},
		{"memory.write_queue", func(c *Config) { c.Memory.WriteQueue = 0 }, "memory.write_queue: must be at least 1"},
		{"memory.search_index_mb", func(c *Config) { c.Memory.SearchIndexMB = -1 }, "memory.search_index_mb: must be at least 0"},
		{"memory.search_index_mb off ok", func(c *Config) { c.Memory.SearchIndexMB = 0 }, ""},
		{"memory.timezone", func(c *Config) { c.Memory.Timezone = "Mars/Olympus" }, `memory.timezone: must be a time zone name such as Europe/Berlin or UTC, got "Mars/Olympus"`},
		{"memory.budget.total", func(c *Config) { c.Memory.Budget.Total = 0 }, "memory.budget.total: must be at least 1, got 0"},
		{"memory.budget.system", func(c *Config) { c.Memory.Budget.System = -1 }, "memory.budget.system: must be at least 0"},
		{"memory.budget.memories", func(c *Config) { c.Memory.Budget.Memories = -1 }, "memory.budget.memories"},
		{"memory.budget.summaries", func(c *Config) { c.Memory.Budget.Summaries = -1 }, "memory.budget.summaries"},
		{"memory.budget.snippets", func(c *Config) { c.Memory.Budget.Snippets = -1 }, "memory.budget.snippets"},
		{"memory.budget.recent", func(c *Config) { c.Memory.Budget.Recent = -1 }, "memory.budget.recent"},
		{"budget parts may exceed total", func(c *Config) { c.Memory.Budget.Total = 1 }, ""},
		{"memory.facts.budget", func(c *Config) { c.Memory.Facts.Budget = -1 }, "memory.facts.budget: must be at least 0"},
		{"pipeline.max_concurrent", func(c *Config) { c.Pipeline.MaxConcurrent = 0 }, "pipeline.max_concurrent: must be at least 1"},
		{"access.allowed_users ok", func(c *Config) {
			c.Access.AllowedUsers = []string{"telegram:123456", "whatsapp:4915112345678", "console:local"}
		}, ""},
		{"access.allowed_users no colon", func(c *Config) { c.Access.AllowedUsers = []string{"telegram:1", "123456"} },
			`access.allowed_users[1]: must be "channel:id"`},
		{"access.allowed_users uppercase channel", func(c *Config) { c.Access.AllowedUsers = []string{"Telegram:1"} }, "access.allowed_users[0]"},
		{"access.allowed_users empty id", func(c *Config) { c.Access.AllowedUsers = []string{"telegram:"} }, "access.allowed_users[0]"},
		{"access.allowed_users empty channel", func(c *Config) { c.Access.AllowedUsers = []string{":1"} }, "access.allowed_users[0]"},
		{"access.admins", func(c *Config) { c.Access.Admins = []string{"console local"} }, `access.admins[0]: must be "channel:id"`},
		{"telegram.api_url", func(c *Config) { c.Telegram.APIURL = "api.telegram.org" }, "telegram.api_url: must be an http(s) URL"},
		{"telegram.webhook.url not https", func(c *Config) {
			c.Telegram.Webhook.URL = "http://bot.example.com/hook"
			c.Telegram.Webhook.Secret = "abc"
		}, "telegram.webhook.url: must be an https URL"},
		{"telegram.webhook.secret required", func(c *Config) { c.Telegram.Webhook.URL = "https://bot.example.com/hook" },
			"telegram.webhook.secret: is required when telegram.webhook.url is set"},
		{"telegram.webhook.secret charset", func(c *Config) { c.Telegram.Webhook.Secret = "no spaces!" },
			"telegram.webhook.secret: must be 1-256 characters of A-Z a-z 0-9 _ -"},
		{"telegram.webhook.secret too long", func(c *Config) { c.Telegram.Webhook.Secret = strings.Repeat("a", 257) },
			"telegram.webhook.secret"},
		{"telegram.webhook.secret 256 ok", func(c *Config) { c.Telegram.Webhook.Secret = strings.Repeat("a", 256) }, ""},
		{"telegram.webhook.listen", func(c *Config) {
			c.Telegram.Webhook.URL = "https://bot.example.com/hook"
			c.Telegram.Webhook.Secret = "abc"
			c.Telegram.Webhook.Listen = "8443"
		}, "telegram.webhook.listen: must be host:port"},
		{"telegram webhook ok", func(c *Config) {
			c.Telegram.Webhook.URL = "https://bot.example.com/hook"
			c.Telegram.Webhook.Secret = "Abc_-09"
		}, ""},
		{"telegram.groups.reply", func(c *Config) { c.Telegram.Groups.Reply = "never" }, "telegram.groups.reply: must be one of mention|always"},
		{"whatsapp.groups.reply", func(c *Config) { c.WhatsApp.Groups.Reply = "" }, "whatsapp.groups.reply: must be one of mention|always"},
		{"whatsapp.backlog_window", func(c *Config) { c.WhatsApp.BacklogWindow = -time.Second }, "whatsapp.backlog_window"},
		{"whatsapp.backlog_window zero ok", func(c *Config) { c.WhatsApp.BacklogWindow = 0 }, ""},
		{"whatsapp.split_limit", func(c *Config) { c.WhatsApp.SplitLimit = 99 }, "whatsapp.split_limit: must be at least 100, got 99"},
		{"http.listen", func(c *Config) { c.HTTP.Listen = "9090" }, "http.listen: must be host:port"},
		{"http.listen empty ok", func(c *Config) { c.HTTP.Listen = "" }, ""},
		{"limits.messages_per_minute", func(c *Config) { c.Limits.MessagesPerMinute = -1 }, "limits.messages_per_minute: must be at least 0"},
		{"limits.tokens_per_day", func(c *Config) { c.Limits.TokensPerDay = -1 }, "limits.tokens_per_day: must be at least 0"},
		{"shutdown.timeout", func(c *Config) { c.Shutdown.Timeout = -time.Second }, "shutdown.timeout: must be a positive duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.mutate(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want != "" && err == nil:
				t.Fatalf("Validate() = nil, want error containing %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("Validate() = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestValidateCollectsAllProblems(t *testing.T) {
	c := Default()
	c.Memory.Threshold = 0
	c.Log.Level = "loud"
	c.HTTP.Listen = "nope"
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate() = nil")
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 3 {
		t.Fatalf("want 3 joined errors, got %q", err)
	}
	for _, key := range []string{"memory.threshold:", "log.level:", "http.listen:"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error %q does not name %s", err, key)
		}
	}
}

func TestValidateNeverEchoesDatabaseURL(t *testing.T) {
	c := Default()
	c.Database.URL = "mysql://recall:hunter2-password@db/recall"
	err := c.Validate()
	if err == nil || strings.Contains(err.Error(), "hunter2-password") {
		t.Fatalf("Validate() = %v; want an error that does not contain the password", err)
	}
}

func TestValidateNeverEchoesWebhookSecret(t *testing.T) {
	c := Default()
	c.Telegram.Webhook.Secret = "bad secret value"
	err := c.Validate()
	if err == nil || strings.Contains(err.Error(), c.Telegram.Webhook.Secret) {
		t.Fatalf("Validate() = %v; want an error that does not contain the secret", err)
	}
}

func TestEmbeddingsValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config)
		key  string
	}{
		{"bad base url", func(c *Config) { c.Memory.Embeddings.Model = "m"; c.Memory.Embeddings.BaseURL = "ftp://x" }, "memory.embeddings.base_url"},
		{"zero timeout", func(c *Config) { c.Memory.Embeddings.Timeout = 0 }, "memory.embeddings.timeout"},
		{"batch too big", func(c *Config) { c.Memory.Embeddings.Batch = 5000 }, "memory.embeddings.batch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.set(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tc.key)
			}
		})
	}
	c := Default()
	c.LLM.BaseURL, c.LLM.APIKey = "http://127.0.0.1:1/v1", "k"
	c.Memory.Embeddings.Model = "nomic-embed-text"
	// PostgreSQL keeps the vectors too (memory's migration 0009).
	pg := c
	pg.Database.URL = "postgres://recall@db/recall"
	if err := pg.Validate(); err != nil && strings.Contains(err.Error(), "memory.embeddings") {
		t.Errorf("embeddings with database.url: %v, want them accepted", err)
	}
	if base, key := c.EmbeddingsEndpoint(); base != c.LLM.BaseURL || key != "k" {
		t.Errorf("EmbeddingsEndpoint() = %q, %q; want the LLM's", base, key)
	}
}

// TestSearchIndexBytes: memory.search_index_mb reaches the store in bytes,
// and 0 turns the indexes in memory off (memory.Options.SearchMemory < 0),
// not to the store's default.
func TestSearchIndexBytes(t *testing.T) {
	for mb, want := range map[int]int{16: 16 << 20, 1: 1 << 20, 0: -1} {
		if got := (Memory{SearchIndexMB: mb}).SearchIndexBytes(); got != want {
			t.Errorf("search_index_mb %d: %d bytes, want %d", mb, got, want)
		}
	}
}
