package config

import (
	"reflect"
	"slices"
	"testing"
)

func TestRedactedAndSecrets(t *testing.T) {
	tests := []struct {
		name        string
		apiKey      string
		token       string
		hookSecret  string
		wantSecrets []string
	}{
		{"none", "", "", "", nil},
		{"api key only", "sk-1", "", "", []string{"sk-1"}},
		{"all", "sk-1", "123:abc", "hook_s", []string{"sk-1", "123:abc", "hook_s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.LLM.APIKey = tt.apiKey
			c.Telegram.Token = tt.token
			c.Telegram.Webhook.Secret = tt.hookSecret
			c.Access.AllowedUsers = []string{"telegram:1"}
			orig := c

			if got := c.Secrets(); !slices.Equal(got, tt.wantSecrets) {
				t.Errorf("Secrets() = %v, want %v", got, tt.wantSecrets)
			}

			r := c.Redacted()
			mask := func(s string) string {
				if s == "" {
					return ""
				}
				return "***"
			}
			want := orig
			want.LLM.APIKey = mask(tt.apiKey)
			want.Telegram.Token = mask(tt.token)
			want.Telegram.Webhook.Secret = mask(tt.hookSecret)
			if !reflect.DeepEqual(r, want) {
				t.Errorf("Redacted() = %+v, want %+v", r, want)
			}
			if len(r.Secrets()) != len(tt.wantSecrets) {
				t.Errorf("Redacted().Secrets() = %v", r.Secrets())
			}

			// The original is untouched and shares no list memory.
			if !reflect.DeepEqual(c, orig) {
				t.Errorf("Redacted modified the receiver")
			}
			r.Access.AllowedUsers[0] = "changed:x"
			if c.Access.AllowedUsers[0] != "telegram:1" {
				t.Errorf("Redacted shares list memory with the receiver")
			}
		})
	}
}

func TestHelpers(t *testing.T) {
	tests := []struct {
		name           string
		mutate         func(*Config)
		wantConfigured bool
		wantSummary    string
		wantTelegram   bool
	}{
		{"defaults", func(*Config) {}, false, "gpt-4o-mini", false},
		{"api key", func(c *Config) { c.LLM.APIKey = "sk" }, true, "gpt-4o-mini", false},
		{"ollama without key", func(c *Config) { c.LLM.BaseURL = "http://localhost:11434/v1" }, true, "gpt-4o-mini", false},
		{"openai with trailing slash", func(c *Config) { c.LLM.BaseURL = DefaultLLMBaseURL + "/" }, false, "gpt-4o-mini", false},
		{"summary model", func(c *Config) { c.LLM.SummaryModel = "gpt-4o" }, false, "gpt-4o", false},
		{"telegram", func(c *Config) { c.Telegram.Token = "1:a" }, false, "gpt-4o-mini", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.mutate(&c)
			if got := c.LLM.Configured(); got != tt.wantConfigured {
				t.Errorf("Configured() = %v, want %v", got, tt.wantConfigured)
			}
			if got := c.LLM.SummaryModelOrDefault(); got != tt.wantSummary {
				t.Errorf("SummaryModelOrDefault() = %q, want %q", got, tt.wantSummary)
			}
			if got := c.TelegramEnabled(); got != tt.wantTelegram {
				t.Errorf("TelegramEnabled() = %v, want %v", got, tt.wantTelegram)
			}
		})
	}
}
