package config

import (
	"strings"
	"testing"
)

// A misspelled variable stops the start and names the right one, instead of
// leaving the bot on api.openai.com with the user's key.
func TestLoadRejectsMisspelledEnv(t *testing.T) {
	isolateEnv(t)
	t.Setenv("RECALL_LLM_BASEURL", "http://127.0.0.1:11434/v1")
	t.Setenv("RECALL_LLM_API_KEYS", "sk-secret-value")
	_, err := Load("")
	if err == nil {
		t.Fatal("Load accepted RECALL_LLM_BASEURL")
	}
	msg := err.Error()
	for _, want := range []string{
		"RECALL_LLM_BASEURL sets no configuration key; did you mean RECALL_LLM_BASE_URL?",
		"RECALL_LLM_API_KEYS sets no configuration key; did you mean RECALL_LLM_API_KEY?",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q\nlacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "sk-secret-value") {
		t.Errorf("error quotes a value: %q", msg)
	}
}

func TestCheckEnv(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string // "" = accepted
	}{
		{[]string{"RECALL_LLM_MODEL=x", "HOME=/root", "RECALLX=1"}, ""},
		{[]string{"RECALL_TELEGRAM_TOKEN="}, ""},
		{[]string{"RECALL_TEST_POSTGRES_URL=postgres://127.0.0.1:5432/postgres"}, ""},
		{[]string{"RECALL_TESTS=1"}, "did you mean"},
		{[]string{"RECALL_TELEGRAM_TOKN=1"}, "did you mean RECALL_TELEGRAM_TOKEN?"},
		{[]string{"RECALL_DATA=/x"}, "did you mean RECALL_DATA_DIR?"},
		{[]string{"recall_llm_model=x"}, "did you mean RECALL_LLM_MODEL?"},
		// The last word finds the key where the edit distance alone
		// named RECALL_DATA_DIR.
		{[]string{"RECALL_TOKEN=1:AAH"}, "did you mean RECALL_TELEGRAM_TOKEN?"},
		{[]string{"RECALL_API_KEY=sk"}, "did you mean RECALL_LLM_API_KEY?"},
		{[]string{"RECALL_WEBHOOK_URL=https://x"}, "did you mean RECALL_TELEGRAM_WEBHOOK_URL?"},
		{[]string{"RECALL_LISTEN=:1"}, "did you mean RECALL_HTTP_LISTEN?"},
		// Set but empty counts now: an empty typo is refused too.
		{[]string{"RECALL_HTTP_LISTN="}, "RECALL_HTTP_LISTN sets no configuration key; did you mean RECALL_HTTP_LISTEN?"},
		{[]string{"RECALL_CONFIG=/etc/recall.yaml"}, ""},
		{[]string{"RECALL_LLM_TOOLS=off"}, ""},
	} {
		err := CheckEnv(tc.env)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: got %v, want %q", tc.env, err, tc.want)
		}
	}
}

// A key or token written in the configuration file itself is loaded, with a
// warning for the bot to log (never the value).
func TestSecretInFileWarns(t *testing.T) {
	isolateEnv(t)
	p := writeFile(t, "llm:\n  api_key: sk-in-the-file\ntelegram:\n  token: \"\"\n")
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	w := c.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "llm.api_key") || !strings.Contains(w[0], "RECALL_LLM_API_KEY") || strings.Contains(w[0], "sk-in-the-file") {
		t.Errorf("warnings = %q, want one naming llm.api_key and RECALL_LLM_API_KEY, without the value", w)
	}
	if c.LLM.APIKey != "sk-in-the-file" {
		t.Errorf("the key was not loaded")
	}
	// The example file holds no secret.
	c, err = Load(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings()) != 0 {
		t.Errorf("config.yaml: %q", c.Warnings())
	}
}

// The test suite's variables (RECALL_TEST_*) can never shadow a key.
func TestNoKeyIsATestVariable(t *testing.T) {
	for _, l := range leaves() {
		if strings.HasPrefix(envName(l.key), TestEnvPrefix) {
			t.Errorf("key %s: its variable %s starts with %s, which CheckEnv ignores", l.key, envName(l.key), TestEnvPrefix)
		}
	}
}
