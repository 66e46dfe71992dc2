package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// A variable set to "" sets its key to empty where that means something
// (the health server off, SQLite, nobody allowed), and is refused naming
// the variable where it does not.
func TestEmptyVariable(t *testing.T) {
	for _, tc := range []struct {
		name, file, variable string
		check                func(Config) bool
		wantErr              string
	}{
		{name: "health server off", variable: "RECALL_HTTP_LISTEN",
			check: func(c Config) bool { return c.HTTP.Listen == "" }},
		{name: "over the file", file: "http:\n  listen: 127.0.0.1:9999\ndatabase:\n  url: postgres://db/recall\n", variable: "RECALL_DATABASE_URL",
			check: func(c Config) bool { return c.Database.URL == "" && c.HTTP.Listen == "127.0.0.1:9999" }},
		{name: "an empty list", file: "access:\n  allowed_users: [telegram:1]\n", variable: "RECALL_ACCESS_ALLOWED_USERS",
			check: func(c Config) bool { return c.Access.AllowedUsers == nil }},
		{name: "duration", variable: "RECALL_LLM_TIMEOUT",
			wantErr: "llm.timeout: RECALL_LLM_TIMEOUT is set but empty, and llm.timeout needs a duration (like 30s or 2m): unset it to keep the default (2m0s)"},
		{name: "switch", variable: "RECALL_MEMORY_FEEDBACK",
			wantErr: "memory.feedback: RECALL_MEMORY_FEEDBACK is set but empty, and memory.feedback needs true or false: unset it to keep the default (true)"},
		{name: "a string that may not be empty", variable: "RECALL_LOG_LEVEL",
			wantErr: `log.level: must be one of debug|info|warn|error, got ""; RECALL_LOG_LEVEL is set but empty: unset it to keep the default`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolateEnv(t)
			t.Setenv(tc.variable, "")
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
			if !tc.check(c) {
				t.Errorf("%s= did not empty its key: %+v", tc.variable, c)
			}
		})
	}
}

// Every key's variable set to "": the key is empty (a string or list), or
// the start is refused with an error naming the variable and the key.
func TestEveryEmptyVariableEmptiesOrIsNamed(t *testing.T) {
	emptied, refused := 0, 0
	for _, l := range leaves() {
		t.Run(l.key, func(t *testing.T) {
			isolateEnv(t)
			t.Setenv(envName(l.key), "")
			c, err := Load("")
			if err != nil {
				refused++
				if !strings.Contains(err.Error(), envName(l.key)) || !strings.Contains(err.Error(), l.key+":") {
					t.Errorf("error %q names neither %s nor %s", err, envName(l.key), l.key)
				}
				return
			}
			emptied++
			if f := reflect.ValueOf(c).FieldByIndex(l.index); !f.IsZero() {
				t.Errorf("%s= loaded %s = %#v, want it empty", envName(l.key), l.key, f.Interface())
			}
		})
	}
	if emptied == 0 || refused == 0 {
		t.Errorf("%d keys emptied, %d refused: want some of each", emptied, refused)
	}
}

// A section written without a value ("memory:") keeps the values of its
// keys from the environment and the default of the others: viper alone
// would put the section's defaults over them.
func TestEmptySectionKeepsOtherLayers(t *testing.T) {
	isolateEnv(t)
	t.Setenv("RECALL_MEMORY_THRESHOLD", "30")
	t.Setenv("RECALL_MEMORY_BUDGET_TOTAL", "5000")
	t.Setenv("RECALL_LLM_TIMEOUT", "7s")
	for range 20 { // viper walks its keys in map order: a wrong one shows within a few runs
		c, err := Load(writeFile(t, "memory:\nllm:\n  tools:\n  model: m\nhttp:\n"))
		if err != nil {
			t.Fatal(err)
		}
		if c.Memory.Threshold != 30 || c.Memory.Budget.Total != 5000 || c.LLM.Timeout != 7*time.Second || c.LLM.Model != "m" || c.Memory.Budget.Recent != 3000 {
			t.Fatalf("threshold %d, budget.total %d, timeout %s, model %q, budget.recent %d",
				c.Memory.Threshold, c.Memory.Budget.Total, c.LLM.Timeout, c.LLM.Model, c.Memory.Budget.Recent)
		}
	}
}

// An empty variable that empties what the file sets (a blank line of
// .env.example kept in .env) is obeyed, with a warning naming both.
func TestEmptyVariableOverFileWarns(t *testing.T) {
	isolateEnv(t)
	file := writeFile(t, "access:\n  allowed_users: [telegram:1]\nhttp:\n  listen: \"\"\n")
	t.Setenv("RECALL_HTTP_LISTEN", "") // the file's is empty too: nothing to say
	c, err := LoadSources(Sources{File: file, DotEnv: writeDotEnv(t, "RECALL_LLM_MODEL=m\nRECALL_ACCESS_ALLOWED_USERS=\n")})
	if err != nil {
		t.Fatal(err)
	}
	if c.Access.AllowedUsers != nil {
		t.Errorf("allowed_users = %q, want none", c.Access.AllowedUsers)
	}
	w := c.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "line 2 sets RECALL_ACCESS_ALLOWED_USERS empty: access.allowed_users is empty, not what "+file+" sets (remove the line to use the file's)") {
		t.Errorf("warnings = %q", w)
	}
}
