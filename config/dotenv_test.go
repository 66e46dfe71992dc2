package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeDotEnv writes content to a .env file in a new directory.
func writeDotEnv(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// .env beside the bot holds the secrets config.yaml must not; the
// environment wins over it, and it wins over the file.
func TestLoadDotEnv(t *testing.T) {
	isolateEnv(t)
	t.Setenv("RECALL_LLM_MODEL", "from-env")
	env := writeDotEnv(t, "# secrets\nRECALL_LLM_API_KEY=sk-dot\nexport RECALL_TELEGRAM_TOKEN=\"123:AAH x\"\nRECALL_LLM_MODEL=from-dotenv\nRECALL_LOG_LEVEL=debug # comment\nRECALL_DATA_DIR=/from/dotenv\nPATH=/nowhere\n\n")
	file := writeFile(t, "data:\n  dir: /from/file\nmemory:\n  threshold: 20\n")
	c, err := LoadSources(Sources{File: file, DotEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	if c.LLM.APIKey != "sk-dot" || c.Telegram.Token != "123:AAH x" || c.LLM.Model != "from-env" || c.Log.Level != "debug" {
		t.Errorf("loaded %q %q %q %q", c.LLM.APIKey, c.Telegram.Token, c.LLM.Model, c.Log.Level)
	}
	if c.Data.Dir != "/from/dotenv" || c.Memory.Threshold != 20 {
		t.Errorf("data.dir = %q (want .env's over the file's), memory.threshold = %d (want the file's)", c.Data.Dir, c.Memory.Threshold)
	}
	if os.Getenv("RECALL_LLM_API_KEY") != "" {
		t.Errorf(".env was copied into the process environment")
	}
	if _, err := LoadSources(Sources{DotEnv: filepath.Join(t.TempDir(), "none")}); err != nil {
		t.Errorf("a missing .env: %v", err)
	}
}

// A mistake in .env is reported as .env's, with its line, never as an
// environment variable, and never quoting a value.
func TestDotEnvErrors(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          []string // the error holds each (with "ENV" for the file's path)
		hidden        string   // and not this
	}{
		{name: "typo", content: "# c\nRECALL_LLM_MODEL=x\nRECALL_LLM_APIKEY=sk-typo-value\n",
			want:   []string{"ENV line 3: RECALL_LLM_APIKEY sets no configuration key; did you mean RECALL_LLM_API_KEY?"},
			hidden: "sk-typo-value"},
		{name: "two typos, in line order", content: "RECALL_TOKN=1\nRECALL_LLM_MODLE=m\n",
			want: []string{"ENV line 1: RECALL_TOKN sets no configuration key; did you mean RECALL_TELEGRAM_TOKEN?\nENV line 2: RECALL_LLM_MODLE"}},
		{name: "not NAME=value", content: "RECALL_LLM_MODEL=x\nthis is sk-secret-garbage\n",
			want: []string{"ENV line 2: not NAME=value"}, hidden: "sk-secret-garbage"},
		{name: "RECALL_CONFIG", content: "RECALL_CONFIG=/etc/recall.yaml\n",
			want: []string{"ENV line 1: RECALL_CONFIG has no effect in ENV"}},
		{name: "bad value", content: "RECALL_LLM_MODEL=x\nRECALL_LLM_TIMEOUT=abc\n",
			want: []string{`llm.timeout: "abc" is not a duration (like 30s or 2m); set in ENV line 2 (RECALL_LLM_TIMEOUT)`}},
		{name: "empty number", content: "RECALL_MEMORY_THRESHOLD=\n",
			want: []string{"memory.threshold: ENV line 1 sets RECALL_MEMORY_THRESHOLD empty, and memory.threshold needs a whole number: remove the line to keep the default (10)"}},
		{name: "invalid value", content: "RECALL_LOG_LEVEL=loud\n",
			want: []string{`log.level: must be one of debug|info|warn|error, got "loud"; set in ENV line 1 (RECALL_LOG_LEVEL)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolateEnv(t)
			env := writeDotEnv(t, tc.content)
			_, err := LoadSources(Sources{DotEnv: env})
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "ENV", env); !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "environment variable") {
				t.Errorf("error %q calls a line of .env an environment variable", err)
			}
			if tc.hidden != "" && strings.Contains(err.Error(), tc.hidden) {
				t.Errorf("error %q quotes %q", err, tc.hidden)
			}
		})
	}
}

// A line of .env set to "" counts as the same variable set to "" would.
func TestDotEnvEmptyValue(t *testing.T) {
	isolateEnv(t)
	c, err := LoadSources(Sources{DotEnv: writeDotEnv(t, "RECALL_HTTP_LISTEN=\n")})
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.Listen != "" {
		t.Errorf("http.listen = %q, want empty (the health server off)", c.HTTP.Listen)
	}
}
