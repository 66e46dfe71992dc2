package config

import "testing"

// Keys lists every key Load accepts, each with its variable and its default
// written as config.yaml writes it: what docs/operations.md's reference is
// generated from.
func TestKeys(t *testing.T) {
	keys := Keys()
	if len(keys) != len(leaves()) {
		t.Fatalf("Keys returned %d keys, Config has %d", len(keys), len(leaves()))
	}
	byName := map[string]Key{}
	for _, k := range keys {
		byName[k.Name] = k
	}
	for _, want := range []Key{
		{Name: "llm.api_key", Env: "RECALL_LLM_API_KEY", Default: `""`, Secret: true},
		{Name: "llm.turn_timeout", Env: "RECALL_LLM_TURN_TIMEOUT", Default: "5m"},
		{Name: "whatsapp.backlog_window", Env: "RECALL_WHATSAPP_BACKLOG_WINDOW", Default: "10m"},
		{Name: "memory.retention_interval", Env: "RECALL_MEMORY_RETENTION_INTERVAL", Default: "1h"},
		{Name: "memory.budget.total", Env: "RECALL_MEMORY_BUDGET_TOTAL", Default: "8000"},
		{Name: "access.allowed_users", Env: "RECALL_ACCESS_ALLOWED_USERS", Default: "[]"},
		{Name: "http.listen", Env: "RECALL_HTTP_LISTEN", Default: "127.0.0.1:9090"},
		{Name: "memory.feedback", Env: "RECALL_MEMORY_FEEDBACK", Default: "true"},
	} {
		if got := byName[want.Name]; got != want {
			t.Errorf("Keys()[%s] = %+v, want %+v", want.Name, got, want)
		}
	}
}
