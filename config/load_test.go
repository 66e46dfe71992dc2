package config

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

const exampleFile = "../config.yaml"

// isolateEnv unsets every RECALL_* variable for the test (restored after
// it), so the caller's environment cannot leak in. Unset, not empty: a
// variable set to "" sets its key to empty.
func isolateEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if isRecallName(name) && !strings.HasPrefix(name, TestEnvPrefix) {
			t.Setenv(name, "") // restores the value after the test
			if err := os.Unsetenv(name); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "recall.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLeavesHaveUniqueKeysAndEnvNames(t *testing.T) {
	seenKey, seenEnv := map[string]bool{}, map[string]bool{}
	for _, l := range leaves() {
		if seenKey[l.key] || seenEnv[envName(l.key)] {
			t.Errorf("duplicate key or env name for %s", l.key)
		}
		seenKey[l.key], seenEnv[envName(l.key)] = true, true
	}
	if got, want := envName("memory.budget.total"), "RECALL_MEMORY_BUDGET_TOTAL"; got != want {
		t.Errorf("envName = %q, want %q", got, want)
	}
	var secrets []string
	for _, l := range leaves() {
		if l.secret {
			secrets = append(secrets, l.key)
		}
	}
	if want := []string{"database.url", "llm.api_key", "memory.embeddings.api_key", "telegram.token", "telegram.webhook.secret", "media.transcription.api_key"}; !slices.Equal(secrets, want) {
		t.Errorf("secret keys = %v, want %v", secrets, want)
	}
}

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
}

func TestLoadWithoutFileEqualsDefault(t *testing.T) {
	isolateEnv(t)
	got, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffKeys(got, Default()) {
		t.Error(d)
	}
}

func TestExampleFileEqualsDefault(t *testing.T) {
	isolateEnv(t)
	got, err := Load(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffKeys(got, Default()) {
		t.Errorf("%s differs from Default(): %s", exampleFile, d)
	}
}

// diffKeys lists, per key, where two configs differ.
func diffKeys(got, want Config) []string {
	var out []string
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	for _, l := range leaves() {
		gv, wv := g.FieldByIndex(l.index).Interface(), w.FieldByIndex(l.index).Interface()
		if !reflect.DeepEqual(gv, wv) {
			out = append(out, fmt.Sprintf("%s: got %#v, want %#v", l.key, gv, wv))
		}
	}
	return out
}

// TestExampleFileDocumentsEveryKey parses config.yaml line by line: every key
// of the struct must appear, nothing else may, and each must carry a comment
// (on the line above or inline).
func TestExampleFileDocumentsEveryKey(t *testing.T) {
	f, err := os.Open(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	keyLine := regexp.MustCompile(`^( *)([a-z0-9_]+):(.*)$`)
	var stack []string
	found := map[string]bool{}
	commented := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			continue
		case strings.HasPrefix(trimmed, "#"):
			commented = true
			continue
		}
		m := keyLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%s:%d: unexpected line %q", exampleFile, n, line)
		}
		depth := len(m[1]) / 2
		if len(m[1])%2 != 0 || depth > len(stack) {
			t.Fatalf("%s:%d: bad indentation", exampleFile, n)
		}
		stack = append(stack[:depth], m[2])
		value := strings.TrimSpace(m[3])
		if value != "" { // a leaf; sections have no value
			key := strings.Join(stack, ".")
			found[key] = true
			if !commented && !strings.Contains(value, " #") {
				t.Errorf("%s:%d: key %s has no comment", exampleFile, n, key)
			}
		}
		commented = false
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}

	for _, l := range leaves() {
		if !found[l.key] {
			t.Errorf("%s: key %s is missing", exampleFile, l.key)
		}
		delete(found, l.key)
	}
	for k := range found {
		t.Errorf("%s: key %s is not a config key", exampleFile, k)
	}
}

// TestEveryKeyHasEnvOverride sets each key's environment variable in turn
// and checks the value reaches the struct, for all keys derived from it.
func TestEveryKeyHasEnvOverride(t *testing.T) {
	for _, l := range leaves() {
		t.Run(l.key, func(t *testing.T) {
			isolateEnv(t)
			def := reflect.ValueOf(Default()).FieldByIndex(l.index)
			var env string
			var want any
			switch def.Interface().(type) {
			case string:
				env, want = "v-"+l.key, "v-"+l.key
			case int:
				env, want = "7", 7
			case float64:
				env, want = "1.5", 1.5
			case bool:
				env, want = fmt.Sprint(!def.Bool()), !def.Bool()
			case time.Duration:
				env, want = "7s", 7*time.Second
			case []string:
				env, want = "a:1,b:2", []string{"a:1", "b:2"}
			default:
				t.Fatalf("no test value for type %s", def.Type())
			}
			t.Setenv(envName(l.key), env)
			c, _, err := load(Sources{})
			if err != nil {
				t.Fatal(err)
			}
			if got := reflect.ValueOf(c).FieldByIndex(l.index).Interface(); !reflect.DeepEqual(got, want) {
				t.Errorf("%s=%q: got %#v, want %#v", envName(l.key), env, got, want)
			}
		})
	}
}

func TestEnvOverrides(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		check func(Config) any
		want  any
	}{
		{"string", map[string]string{"RECALL_DATA_DIR": "/var/lib/recall"},
			func(c Config) any { return c.Data.Dir }, "/var/lib/recall"},
		{"secret string", map[string]string{"RECALL_LLM_API_KEY": "sk-test"},
			func(c Config) any { return c.LLM.APIKey }, "sk-test"},
		{"telegram token", map[string]string{"RECALL_TELEGRAM_TOKEN": "123:abc"},
			func(c Config) any { return c.TelegramEnabled() }, true},
		{"int", map[string]string{"RECALL_MEMORY_THRESHOLD": "25"},
			func(c Config) any { return c.Memory.Threshold }, 25},
		{"float", map[string]string{"RECALL_LLM_TEMPERATURE": "0.2"},
			func(c Config) any { return c.LLM.Temperature }, 0.2},
		{"bool", map[string]string{"RECALL_MEMORY_FACTS_ENABLED": "true"},
			func(c Config) any { return c.Memory.Facts.Enabled }, true},
		{"telegram stream", map[string]string{"RECALL_TELEGRAM_STREAM": "true"},
			func(c Config) any { return c.Telegram.Stream }, true},
		{"telegram stream default", map[string]string{},
			func(c Config) any { return c.Telegram.Stream }, false},
		{"telegram link previews", map[string]string{"RECALL_TELEGRAM_LINK_PREVIEWS": "true"},
			func(c Config) any { return c.Telegram.LinkPreviews }, true},
		{"bool false", map[string]string{"RECALL_MEMORY_ENABLED_BY_DEFAULT": "false"},
			func(c Config) any { return c.Memory.EnabledByDefault }, false},
		{"duration", map[string]string{"RECALL_LLM_TIMEOUT": "90s"},
			func(c Config) any { return c.LLM.Timeout }, 90 * time.Second},
		{"duration minutes", map[string]string{"RECALL_WHATSAPP_BACKLOG_WINDOW": "30m"},
			func(c Config) any { return c.WhatsApp.BacklogWindow }, 30 * time.Minute},
		{"nested budget int", map[string]string{"RECALL_MEMORY_BUDGET_TOTAL": "16000"},
			func(c Config) any { return c.Memory.Budget.Total }, 16000},
		{"nested webhook", map[string]string{"RECALL_TELEGRAM_WEBHOOK_URL": "https://bot.example.com/hook", "RECALL_TELEGRAM_WEBHOOK_SECRET": "s3cret_-X"},
			func(c Config) any { return c.Telegram.Webhook.URL }, "https://bot.example.com/hook"},
		{"list comma", map[string]string{"RECALL_ACCESS_ALLOWED_USERS": "telegram:1,whatsapp:4915112345678"},
			func(c Config) any { return c.Access.AllowedUsers }, []string{"telegram:1", "whatsapp:4915112345678"}},
		{"list space", map[string]string{"RECALL_ACCESS_ALLOWED_USERS": "telegram:1 console:local"},
			func(c Config) any { return c.Access.AllowedUsers }, []string{"telegram:1", "console:local"}},
		{"list mixed", map[string]string{"RECALL_ACCESS_ADMINS": " telegram:1,  whatsapp:4915112345678 ,console:local "},
			func(c Config) any { return c.Access.Admins }, []string{"telegram:1", "whatsapp:4915112345678", "console:local"}},
		// Set but empty counts (it was ignored before viper's AllowEmptyEnv):
		// the health server is turned off from the environment.
		{"empty env turns the health server off", map[string]string{"RECALL_HTTP_LISTEN": ""},
			func(c Config) any { return c.HTTP.Listen }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolateEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			c, err := Load("")
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.check(c); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestFileAndEnvPrecedence(t *testing.T) {
	isolateEnv(t)
	path := writeFile(t, `
data:
  dir: /srv/recall
llm:
  model: llama3.1
  timeout: 2m
memory:
  threshold: 20
  budget:
    total: 4000
    recent: 1000
access:
  allowed_users: [telegram:1, whatsapp:2]
`)
	t.Setenv("RECALL_MEMORY_THRESHOLD", "30")
	t.Setenv("RECALL_MEMORY_BUDGET_TOTAL", "5000")
	t.Setenv("RECALL_ACCESS_ALLOWED_USERS", "console:local")

	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Data.Dir = "/srv/recall"                        // file
	want.LLM.Model = "llama3.1"                          // file
	want.LLM.Timeout = 2 * time.Minute                   // file
	want.Memory.Threshold = 30                           // env beats file
	want.Memory.Budget.Total = 5000                      // env beats file (nested)
	want.Memory.Budget.Recent = 1000                     // file, sibling of an env key
	want.Access.AllowedUsers = []string{"console:local"} // env beats file (list)
	for _, d := range diffKeys(c, want) {
		t.Error(d)
	}
}

func TestFileLists(t *testing.T) {
	isolateEnv(t)
	path := writeFile(t, `
access:
  allowed_users:
    - telegram:123456
    - whatsapp:4915112345678
  admins: [console:local]
`)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"telegram:123456", "whatsapp:4915112345678"}; !slices.Equal(c.Access.AllowedUsers, want) {
		t.Errorf("allowed_users = %v, want %v", c.Access.AllowedUsers, want)
	}
	if want := []string{"console:local"}; !slices.Equal(c.Access.Admins, want) {
		t.Errorf("admins = %v, want %v", c.Access.Admins, want)
	}
}

func TestLoadErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	tests := []struct {
		name     string
		file     string // YAML content; "" = no file
		path     string // used when file is ""
		env      map[string]string
		wantErrs []string
		hidden   string // must not be in the error
	}{
		{name: "missing file", path: missing, wantErrs: []string{missing}},
		{name: "unknown top-level key", file: "datta:\n  dir: x\n", wantErrs: []string{"datta.dir: unknown key"}},
		{name: "unknown nested key", file: "memory:\n  threshhold: 5\n", wantErrs: []string{"memory.threshhold: unknown key"}},
		{name: "unknown deep key", file: "memory:\n  budget:\n    totl: 5\n", wantErrs: []string{"memory.budget.totl: unknown key"}},
		{name: "all unknown keys reported", file: "llm:\n  modle: x\nhttp:\n  listn: y\n",
			wantErrs: []string{"llm.modle", "http.listn"}},
		{name: "section as scalar", file: "memory: 5\n", wantErrs: []string{"memory: must be a mapping"}},
		{name: "value glued to its key", file: "llm:\n  api_key:sk-gluedsecret:\n", wantErrs: []string{"llm.api_key:…: unknown key", "without a space"}, hidden: "gluedsecret"},
		{name: "value glued with =", file: "telegram:\n  token=123456:aahsecret:\n", wantErrs: []string{"telegram.token=…: unknown key"}, hidden: "aahsecret"},
		{name: "bad yaml", file: "memory: [\n", wantErrs: []string{"parsing"}},
		{name: "duration without unit in file", file: "llm:\n  timeout: 30\n", wantErrs: []string{"llm.timeout", "no unit"}},
		{name: "bad duration in env", env: map[string]string{"RECALL_SHUTDOWN_TIMEOUT": "soon"},
			wantErrs: []string{`shutdown.timeout: "soon" is not a duration (like 30s or 2m); set by RECALL_SHUTDOWN_TIMEOUT`}},
		{name: "bad int in env", env: map[string]string{"RECALL_MEMORY_BUDGET_TOTAL": "lots"},
			wantErrs: []string{`memory.budget.total: "lots" is not a whole number; set by RECALL_MEMORY_BUDGET_TOTAL`}},
		{name: "validation from file", file: "memory:\n  threshold: 0\n",
			wantErrs: []string{"memory.threshold: must be between 1 and 500, got 0"}},
		{name: "validation from env", env: map[string]string{"RECALL_LOG_LEVEL": "verbose"},
			wantErrs: []string{"log.level: must be one of debug|info|warn|error, got \"verbose\""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolateEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			path := tt.path
			if tt.file != "" {
				path = writeFile(t, tt.file)
			}
			c, err := Load(path)
			if err == nil {
				t.Fatalf("Load succeeded: %+v", c)
			}
			for _, want := range tt.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if tt.hidden != "" && strings.Contains(err.Error(), tt.hidden) {
				t.Errorf("error %q quotes %q", err, tt.hidden)
			}
			if !reflect.DeepEqual(c, Config{}) {
				t.Errorf("Load returned non-zero Config with error")
			}
		})
	}
}

func TestMissingFileIsNotExist(t *testing.T) {
	isolateEnv(t)
	_, err := Load(filepath.Join(t.TempDir(), "absent.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load(missing) = %v, want an error matching fs.ErrNotExist", err)
	}
}

func TestEmptySectionIsAccepted(t *testing.T) {
	isolateEnv(t)
	c, err := Load(writeFile(t, "telegram:\nmemory:\n  budget:\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("got %+v, want defaults", c)
	}
}

// "llm.tools: off" (the section written as one value) sets llm.tools.mode,
// in the file and as RECALL_LLM_TOOLS; the full form and its variable win.
func TestToolsShorthand(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		env        map[string]string
		want       Tools
		wantErr    string
	}{
		{name: "file scalar", file: "llm:\n  tools: off\n", want: Tools{Mode: ToolsOff, MaxRounds: 3}},
		{name: "file mapping", file: "llm:\n  tools:\n    mode: on\n    max_rounds: 5\n", want: Tools{Mode: ToolsOn, MaxRounds: 5}},
		{name: "env scalar", env: map[string]string{"RECALL_LLM_TOOLS": "off"}, want: Tools{Mode: ToolsOff, MaxRounds: 3}},
		{name: "env beats file", file: "llm:\n  tools: off\n", env: map[string]string{"RECALL_LLM_TOOLS": "on"}, want: Tools{Mode: ToolsOn, MaxRounds: 3}},
		{name: "the full variable beats the shorthand", env: map[string]string{"RECALL_LLM_TOOLS": "off", "RECALL_LLM_TOOLS_MODE": "on"}, want: Tools{Mode: ToolsOn, MaxRounds: 3}},
		{name: "bad value", file: "llm:\n  tools: sometimes\n", wantErr: `llm.tools.mode: must be one of auto|on|off, got "sometimes"`},
		{name: "a sibling section as a value is still wrong", file: "llm:\n  tools: off\nmemory: 5\n", wantErr: "memory: must be a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolateEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			path := ""
			if tc.file != "" {
				path = writeFile(t, tc.file)
			}
			c, err := Load(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load = %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.LLM.Tools != tc.want {
				t.Errorf("llm.tools = %+v, want %+v", c.LLM.Tools, tc.want)
			}
		})
	}
	if err := CheckEnv([]string{"RECALL_LLM_TOOLS=off"}); err != nil {
		t.Errorf("CheckEnv refuses RECALL_LLM_TOOLS: %v", err)
	}
}
