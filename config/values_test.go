package config

import (
	"strings"
	"testing"
)

// A value that is not of its key's type is refused naming the key, the
// type it must be, and where the value came from: never a raw parse error,
// never a secret's value.
func TestValueErrorsNameKeyAndType(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		env        map[string]string
		want       string // "FILE" stands for the file's path
		hidden     string
	}{
		{name: "duration in env", env: map[string]string{"RECALL_LLM_TIMEOUT": "abc"},
			want: `llm.timeout: "abc" is not a duration (like 30s or 2m); set by RECALL_LLM_TIMEOUT`},
		{name: "duration in file", file: "llm:\n  timeout: abc\n",
			want: `llm.timeout: "abc" is not a duration (like 30s or 2m); set in FILE`},
		{name: "duration without unit", file: "llm:\n  timeout: 30\n",
			want: `llm.timeout: 30 has no unit (write it like 30s or 2m); set in FILE`},
		{name: "int", env: map[string]string{"RECALL_MEMORY_THRESHOLD": "ten"},
			want: `memory.threshold: "ten" is not a whole number; set by RECALL_MEMORY_THRESHOLD`},
		{name: "int with a fraction", file: "memory:\n  threshold: 2.5\n",
			want: `memory.threshold: 2.5 is not a whole number; set in FILE`},
		{name: "int too large", env: map[string]string{"RECALL_MEMORY_THRESHOLD": "99999999999999999999"},
			want: `memory.threshold: "99999999999999999999" is out of range`},
		{name: "empty number in the file", file: "memory:\n  retention_days: \"\"\n",
			want: `memory.retention_days: is empty, and it needs a whole number (remove the key to keep the default); set in FILE`},
		{name: "empty switch in the file", file: "memory:\n  feedback: ''\n",
			want: `memory.feedback: is empty, and it needs true or false`},
		{name: "float", env: map[string]string{"RECALL_LLM_TEMPERATURE": "hot"},
			want: `llm.temperature: "hot" is not a number; set by RECALL_LLM_TEMPERATURE`},
		{name: "bool", env: map[string]string{"RECALL_MEMORY_FEEDBACK": "maybe"},
			want: `memory.feedback: "maybe" is not true or false; set by RECALL_MEMORY_FEEDBACK`},
		{name: "a number given a list", file: "memory:\n  threshold: [1, 2]\n",
			want: `memory.threshold: must be a single value, got a list or mapping; set in FILE`},
		{name: "a list given a mapping", file: "access:\n  admins:\n    telegram: 1\n",
			want: `access.admins.telegram: unknown key; did you mean access.admins?`},
		{name: "a secret given a list", file: "llm:\n  api_key: [sk-secret-in-a-list]\n",
			want: `llm.api_key: must be a single value, got a list or mapping; set in FILE`, hidden: "sk-secret-in-a-list"},
		{name: "all of them at once", env: map[string]string{"RECALL_LLM_TIMEOUT": "abc", "RECALL_MEMORY_THRESHOLD": "ten"},
			want: `llm.timeout: "abc" is not a duration (like 30s or 2m); set by RECALL_LLM_TIMEOUT` + "\n" +
				`memory.threshold: "ten" is not a whole number`},
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
			_, err := Load(path)
			want := strings.ReplaceAll(tc.want, "FILE", path)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Load = %v\nwant an error with %q", err, want)
			}
			if tc.hidden != "" && strings.Contains(err.Error(), tc.hidden) {
				t.Errorf("error %q quotes %q", err, tc.hidden)
			}
		})
	}
}

// A misspelled key in the file gets a "did you mean", matching on its
// words as well as on the whole.
func TestFileKeyTypos(t *testing.T) {
	for doc, want := range map[string]string{
		"memory:\n  threshhold: 5\n":  "memory.threshhold: unknown key; did you mean memory.threshold?",
		"datta:\n  dir: x\n":          "datta.dir: unknown key; did you mean data.dir?",
		"llm:\n  baseurl: http://x\n": "llm.baseurl: unknown key; did you mean llm.base_url?",
		"token: x\n":                  "token: unknown key; did you mean telegram.token?",
		"http:\n  port: 9090\n":       "http.port: unknown key; did you mean http.listen?",
	} {
		isolateEnv(t)
		_, err := Load(writeFile(t, doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: Load = %v, want %q", doc, err, want)
		}
	}
}
