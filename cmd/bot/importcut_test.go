package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportReportsCutMessages: a message over memory.MaxMessageBytes in a
// Telegram export, or in a recall-export file, is imported cut, and bot
// import says how many were.
func TestImportReportsCutMessages(t *testing.T) {
	env := newEnv(t, newFakeLLM(t).URL)
	dir := t.TempDir()
	huge := strings.Repeat("paste ", 6<<20/6) // 6 MiB
	tg := filepath.Join(dir, "result.json")
	doc := `{"name":"Anna","messages":[` +
		`{"id":1,"type":"message","date_unixtime":"1709629260","from":"Anna","text":"` + huge + `"},` +
		`{"id":2,"type":"message","date_unixtime":"1709629320","from":"Anna","text":"the movers come at nine"}]}`
	if err := os.WriteFile(tg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	r := env.mustRun(t, "", "import", "--telegram-export", tg, "--key", "telegram:-100777")
	var o struct {
		Imported int `json:"imported"`
		Cut      int `json:"cut"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &o); err != nil {
		t.Fatalf("bot import output: %v\n%s", err, r)
	}
	if o.Imported != 2 || o.Cut != 1 {
		t.Fatalf("chat import: %+v, want 2 imported, 1 cut", o)
	}

	exp := filepath.Join(dir, "export.json")
	rec := `{"format":"recall-export","version":1,"owners":[{"owner":"telegram:5","conversations":[{"key":"telegram:5:","messages":[` +
		`{"role":"user","text":"` + huge + `","time":"2024-03-05T10:00:00Z","platform_id":"9"}]}]}]}`
	if err := os.WriteFile(exp, []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	r = env.mustRun(t, "", "import", exp)
	var j struct {
		Imported struct {
			Messages int `json:"messages"`
			Cut      int `json:"cut"`
		} `json:"imported"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &j); err != nil {
		t.Fatalf("bot import output: %v\n%s", err, r)
	}
	if j.Imported.Messages != 1 || j.Imported.Cut != 1 {
		t.Fatalf("JSON import: %s, want 1 message, 1 cut", r.Stdout)
	}
}
