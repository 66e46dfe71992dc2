package config

import (
	"os"
	"testing"
)

// The file is --config's, else RECALL_CONFIG's (empty: none), else
// config.yaml when the working directory has one.
func TestDefaultSources(t *testing.T) {
	for _, tc := range []struct {
		name, flag string
		env        *string // RECALL_CONFIG; nil = unset
		configYAML bool    // the working directory has config.yaml
		want       string
	}{
		{name: "nothing", want: ""},
		{name: "config.yaml", configYAML: true, want: "config.yaml"},
		{name: "RECALL_CONFIG", env: ptr("/etc/recall.yaml"), configYAML: true, want: "/etc/recall.yaml"},
		{name: "RECALL_CONFIG empty: no file", env: ptr(""), configYAML: true, want: ""},
		{name: "the flag wins", flag: "mine.yaml", env: ptr("/etc/recall.yaml"), configYAML: true, want: "mine.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolateEnv(t)
			t.Setenv(FileEnv, "")
			if err := os.Unsetenv(FileEnv); err != nil {
				t.Fatal(err)
			}
			if tc.env != nil {
				t.Setenv(FileEnv, *tc.env)
			}
			t.Chdir(t.TempDir())
			if tc.configYAML {
				if err := os.WriteFile("config.yaml", nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if got := DefaultSources(tc.flag); got != (Sources{File: tc.want, DotEnv: ".env"}) {
				t.Errorf("DefaultSources(%q) = %+v, want file %q", tc.flag, got, tc.want)
			}
		})
	}
}

// RECALL_CONFIG names the file the bot loads.
func TestRecallConfigLoadsItsFile(t *testing.T) {
	isolateEnv(t)
	t.Setenv(FileEnv, writeFile(t, "llm:\n  model: from-recall-config\n"))
	t.Chdir(t.TempDir())
	c, err := LoadSources(DefaultSources(""))
	if err != nil {
		t.Fatal(err)
	}
	if c.LLM.Model != "from-recall-config" {
		t.Errorf("llm.model = %q, want the file's", c.LLM.Model)
	}
}

func ptr(s string) *string { return &s }
