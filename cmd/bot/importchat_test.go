package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestImportChatExports(t *testing.T) {
	env := newEnv(t, newFakeLLM(t).URL)
	dir := t.TempDir()
	wa := filepath.Join(dir, "WhatsApp Chat with Anna.txt")
	if err := os.WriteFile(wa, []byte("05/03/2024, 10:00 - Messages and calls are end-to-end encrypted.\n"+
		"05/03/2024, 10:01 - Anna: We sign the lease for the flat in Porto on Friday\n"+
		"05/03/2024, 10:02 - Ben: great, I'll bring\nthe deposit\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tg := filepath.Join(dir, "result.json")
	if err := os.WriteFile(tg, []byte(`{"name":"Anna","messages":[{"id":7,"type":"message","date_unixtime":"1709629260","from":"Anna","text":"the movers come at nine"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	type out struct {
		Imported int    `json:"imported"`
		Found    string `json:"found"`
		Skipped  int    `json:"skipped"`
	}
	importOnce := func(args ...string) out {
		r := env.mustRun(t, "", append([]string{"import"}, args...)...)
		var o out
		if err := json.Unmarshal([]byte(r.Stdout), &o); err != nil {
			t.Fatalf("bot import output: %v\n%s", err, r)
		}
		return o
	}
	if o := importOnce("--whatsapp-export", wa, "--key", "telegram:-100777"); o.Imported != 2 || o.Skipped != 1 || !strings.Contains(o.Found, "2 messages between") {
		t.Fatalf("first import: %+v", o)
	}
	if o := importOnce("--whatsapp-export", wa, "--key", "telegram:-100777"); o.Imported != 0 {
		t.Fatalf("a second import of the same file added %d messages", o.Imported)
	}
	if o := importOnce("--telegram-export", tg, "--key", "telegram:-100777"); o.Imported != 1 {
		t.Fatalf("telegram import: %+v", o)
	}
	// The past is searchable: the next prompt's snippets carry it, with
	// the speaker's name.
	found := env.search(t, "telegram:-100777:", "deposit")
	var hit bool
	for _, sn := range found.Snippets {
		for _, m := range sn.Messages {
			hit = hit || (strings.Contains(m.Text, "the deposit") && m.Sender == "Ben")
		}
	}
	if !hit {
		t.Fatalf("search after import: %+v", found)
	}
	// Bad input gets a clear answer.
	r := env.run(t, "", "import", "--whatsapp-export", tg+".missing", "--key", "telegram:1")
	if r.Code == 0 || !strings.Contains(r.Stderr, "no such file") {
		t.Fatalf("missing file: %s", r)
	}
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("just some notes\n"), 0o600)
	if r := env.run(t, "", "import", "--whatsapp-export", notes, "--key", "telegram:1"); r.Code == 0 || !strings.Contains(r.Stderr, "no line looks like a WhatsApp message") {
		t.Fatalf("not an export: %s", r)
	}
	if r := env.run(t, "", "import", "--whatsapp-export", wa); r.Code == 0 || !strings.Contains(r.Stderr, "--key") {
		t.Fatalf("no key: %s", r)
	}
}
