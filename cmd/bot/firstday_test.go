package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallbot/recall/llm/llmtest"
)

// A misspelled RECALL_ variable stops the start and names the right one
// (it used to be ignored: the bot then talked to api.openai.com).
func TestMisspelledEnvStopsTheStart(t *testing.T) {
	env := newEnv(t, "", "RECALL_LLM_BASEURL=http://127.0.0.1:11434/v1")
	r := env.run(t, "hello\n")
	if r.Code != 2 || !strings.Contains(r.Stderr, "did you mean RECALL_LLM_BASE_URL?") || r.Stdout != "" {
		t.Errorf("want exit 2 naming RECALL_LLM_BASE_URL, nothing answered:\n%s", r)
	}
}

// A wrong key is found at start and logged at error level with the fix;
// the terminal user reads that the server refused the key; the log has the
// failed turn once.
func TestWrongKeyIsNamedAtStart(t *testing.T) {
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		return llmtest.Response{Status: http.StatusUnauthorized, Text: "Incorrect API key provided"}
	})
	srv.OnModels(func(string) llmtest.Models { return llmtest.Models{Status: http.StatusUnauthorized} })
	env := newEnv(t, srv.URL)
	r := env.run(t, "hello\n")
	if r.Code != 0 || !strings.Contains(r.Stdout, "refused the bot's API key (operator: check llm.api_key") {
		t.Fatalf("the user was not told the key was refused:\n%s", r)
	}
	if !strings.Contains(r.Stderr, "warning: the model server at "+srv.URL+" refused the API key: set llm.api_key") {
		t.Errorf("the terminal user was not warned at start:\n%s", r)
	}
	log, err := os.ReadFile(filepath.Join(env.Data, "recall.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "level=ERROR") || !strings.Contains(string(log), "set llm.api_key (or RECALL_LLM_API_KEY)") {
		t.Errorf("the start-up check's error with the fix is not in the log:\n%s", log)
	}
	if n := strings.Count(string(log), `msg="turn failed"`); n != 1 {
		t.Errorf("%d \"turn failed\" records, want 1:\n%s", n, log)
	}
}

// config.yaml holding a key still works, with a warning at start; .env in
// the working directory supplies it instead.
func TestSecretsInConfigFileAndDotEnv(t *testing.T) {
	srv := newFakeLLM(t)
	env := newEnv(t, "")
	env.Extra = []string{"RECALL_LLM_BASE_URL=" + srv.URL, "RECALL_LLM_MODEL=test-model"}
	if err := os.WriteFile(filepath.Join(env.Dir, "config.yaml"), []byte("llm:\n  api_key: sk-in-the-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := env.mustRun(t, "hello\n")
	log, _ := os.ReadFile(filepath.Join(env.Data, "recall.log"))
	if !strings.Contains(string(log), "holds a secret (llm.api_key)") || strings.Contains(string(log), "sk-in-the-file") {
		t.Errorf("no warning (or the key shown):\n%s", log)
	}
	if !strings.Contains(r.Stdout, "echo: hello") {
		t.Errorf("no answer:\n%s", r)
	}
	// The same key from .env: no warning.
	os.Remove(filepath.Join(env.Dir, "config.yaml"))
	os.WriteFile(filepath.Join(env.Dir, ".env"), []byte("RECALL_LLM_API_KEY=sk-from-dotenv\n"), 0o600)
	os.Remove(filepath.Join(env.Data, "recall.log"))
	r = env.mustRun(t, "again\n")
	log, _ = os.ReadFile(filepath.Join(env.Data, "recall.log"))
	if strings.Contains(string(log), "holds a secret") || !strings.Contains(r.Stdout, "echo: again") {
		t.Errorf("with .env:\n%s\n%s", r, log)
	}
	if reqs := srv.chatRequests(); len(reqs) != 2 || reqs[1].APIKey != "sk-from-dotenv" {
		t.Errorf("the key from .env was not used: %+v", reqs)
	}
}
