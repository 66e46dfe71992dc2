package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/memory"
)

// otherConversation is a second owner, imported next to the terminal chat.
func otherConversation() memory.Export {
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	return memory.NewExport(memory.OwnerData{
		Owner: "telegram:4242",
		Conversations: []memory.ConversationData{{
			Key: "telegram:4242:",
			Messages: []memory.Message{
				{Role: memory.RoleUser, SenderID: "4242", SenderName: "Zoe", PlatformID: "t1", Text: "tell me about zanzibar spices", Time: t0, Tokens: 6},
				{Role: memory.RoleAssistant, ReplyTo: "t1", Text: "zanzibar is famous for cloves", Time: t0.Add(time.Second), Tokens: 6},
				{Role: memory.RoleUser, SenderID: "4242", SenderName: "Zoe", PlatformID: "t2", Text: "and nutmeg?", Time: t0.Add(time.Minute), Tokens: 3},
			},
		}},
	})
}

func writeJSONFile(t *testing.T, name string, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// importReport parses `bot import` output.
func importReport(t *testing.T, r result) (memory.ImportReport, int) {
	t.Helper()
	var out struct {
		Imported memory.ImportReport `json:"imported"`
		Owners   int                 `json:"owners"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("bot import output is not JSON: %v\n%s", err, r)
	}
	return out.Imported, out.Owners
}

// msgSig is a message without its store-assigned id.
type msgSig struct {
	Role, Text, PlatformID, ReplyTo string
	Active                          bool
}

func sigs(msgs []memory.Message) []msgSig {
	out := make([]msgSig, len(msgs))
	for i, m := range msgs {
		out[i] = msgSig{string(m.Role), m.Text, m.PlatformID, m.ReplyTo, m.Active}
	}
	return out
}

type searchOut struct {
	Key      string   `json:"key"`
	Query    string   `json:"query"`
	Terms    []string `json:"terms"`
	Snippets []struct {
		Messages []struct {
			ID         int64  `json:"id"`
			PlatformID string `json:"platform_id"`
			Sender     string `json:"sender"`
			Time       string `json:"time"`
			Text       string `json:"text"`
		} `json:"messages"`
		Tokens int `json:"tokens"`
	} `json:"snippets"`
	Tokens int `json:"tokens"`
}

func (e botEnv) search(t *testing.T, key string, words ...string) searchOut {
	t.Helper()
	r := e.mustRun(t, "", append([]string{"search", "--key", key}, words...)...)
	var out searchOut
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("bot search output is not JSON: %v\n%s", err, r)
	}
	if out.Snippets == nil {
		t.Fatalf("bot search: snippets must be a list, even an empty one:\n%s", r.Stdout)
	}
	return out
}

func TestDataSubcommands(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs every data subcommand of the binary (7 s on a busy 2-core machine); go test without -short runs it")
	}
	srv := newFakeLLM(t)
	env := newEnv(t, srv.URL)
	said := []string{"my parrot is called Pistachio", "I water the ferns on Sundays", "what is my parrot called"}
	env.mustRun(t, lines(append([]string{"/remember pet a parrot"}, said...)...))
	otherFile := writeJSONFile(t, "other.json", otherConversation())
	rep, owners := importReport(t, env.mustRun(t, "", "import", otherFile))
	if rep.Messages != 3 || owners != 1 {
		t.Fatalf("importing the other conversation: %+v, %d owners; want 3 messages, 1 owner", rep, owners)
	}

	// export: everything, one owner, one conversation.
	all := env.export(t)
	if len(all.Owners) != 2 {
		t.Fatalf("bot export: %d owners, want 2 (console:local and telegram:4242)", len(all.Owners))
	}
	console := messagesOf(all, consoleKey)
	if len(console) != 2*len(said) {
		t.Fatalf("bot export: %d console messages, want %d", len(console), 2*len(said))
	}
	for i, l := range said {
		if console[2*i].Text != l || console[2*i+1].Text != "echo: "+l {
			t.Errorf("message pair %d = %q / %q, want %q / %q", i, console[2*i].Text, console[2*i+1].Text, l, "echo: "+l)
		}
	}
	for _, args := range [][]string{{"--user", consoleOwner}, {"--key", consoleKey}} {
		doc := env.export(t, args...)
		if len(doc.Owners) != 1 || doc.Owners[0].Owner != consoleOwner {
			t.Fatalf("bot export %v: owners %+v, want only %s", args, doc.Owners, consoleOwner)
		}
		if got := messagesOf(doc, consoleKey); !slices.Equal(sigs(got), sigs(console)) {
			t.Errorf("bot export %v: messages differ from the full export:\n%+v\nwant\n%+v", args, sigs(got), sigs(console))
		}
		if len(messagesOf(doc, "telegram:4242:")) != 0 {
			t.Errorf("bot export %v leaks another owner's messages", args)
		}
	}
	if doc := env.export(t, "--user", consoleOwner); len(doc.Owners[0].Memories) != 1 {
		t.Errorf("bot export --user: memories %+v, want the /remember note", doc.Owners[0].Memories)
	}

	// import into a fresh data dir, export again: same messages; a second
	// import adds nothing.
	fullFile := filepath.Join(t.TempDir(), "full.json")
	if err := os.WriteFile(fullFile, []byte(env.mustRun(t, "", "export").Stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := newEnv(t, "")
	rep, _ = importReport(t, fresh.mustRun(t, "", "import", fullFile))
	if rep.Messages != len(console)+3 || rep.Memories != 1 {
		t.Errorf("first import: %+v, want %d messages and 1 memory", rep, len(console)+3)
	}
	again := fresh.export(t)
	for _, key := range []string{consoleKey, "telegram:4242:"} {
		if got, want := sigs(messagesOf(again, key)), sigs(messagesOf(all, key)); !slices.Equal(got, want) {
			t.Errorf("%s after import into a fresh store:\n%+v\nwant\n%+v", key, got, want)
		}
	}
	rep, _ = importReport(t, fresh.mustRun(t, "", "import", fullFile))
	if rep != (memory.ImportReport{}) {
		t.Errorf("second import of the same file added %+v, want nothing", rep)
	}
	if n := len(messagesOf(fresh.export(t), consoleKey)); n != len(console) {
		t.Errorf("after importing twice: %d console messages, want %d", n, len(console))
	}

	// search: the snippets the next prompt would carry, per conversation.
	// The imported conversation is archived: the hit comes with the message
	// after it, with names and times.
	s := env.search(t, "telegram:4242:", "zanzibar spices")
	if len(s.Snippets) != 1 || len(s.Snippets[0].Messages) != 3 || s.Snippets[0].Tokens <= 0 || s.Tokens != s.Snippets[0].Tokens {
		t.Fatalf("bot search in the archived conversation: %+v, want one block of the three messages", s)
	}
	for i, want := range []struct{ pid, sender, text string }{
		{"t1", "Zoe", "tell me about zanzibar spices"}, {"", "assistant", "zanzibar is famous for cloves"}, {"t2", "Zoe", "and nutmeg?"},
	} {
		m := s.Snippets[0].Messages[i]
		if m.ID <= 0 || m.PlatformID != want.pid || m.Sender != want.sender || m.Text != want.text || !strings.HasPrefix(m.Time, "2025-03-01T10:0") {
			t.Errorf("snippet message %d = %+v, want %+v", i, m, want)
		}
	}
	if s.Key != "telegram:4242:" || s.Query != "zanzibar spices" {
		t.Errorf("search echo: key %q query %q", s.Key, s.Query)
	}
	// The terminal chat's words are all in its recent turns: the prompt
	// shows them there, not again as snippets.
	if s := env.search(t, consoleKey, "Pistachio"); len(s.Snippets) != 0 {
		t.Errorf("a recent turn came back as a snippet: %+v", s.Snippets)
	}
	if s := env.search(t, consoleKey, "zanzibar"); len(s.Snippets) != 0 {
		t.Errorf("a word of another conversation was found in the terminal chat: %+v", s.Snippets)
	}
	if s := env.search(t, "telegram:4242:", "xylophone"); len(s.Snippets) != 0 {
		t.Errorf("a word never said was found: %+v", s.Snippets)
	}

	// context: the breakdown and the assembled messages.
	nreq := len(srv.Requests())
	r := env.mustRun(t, "", "context", "--key", consoleKey, "what", "is", "my", "parrot", "called?")
	var ctxOut struct {
		Key       string `json:"key"`
		Breakdown struct {
			Parts []struct {
				Name   string `json:"name"`
				Tokens int    `json:"tokens"`
			} `json:"parts"`
			Total int `json:"total_tokens"`
		} `json:"breakdown"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &ctxOut); err != nil {
		t.Fatalf("bot context output is not JSON: %v\n%s", err, r)
	}
	if len(ctxOut.Breakdown.Parts) == 0 || len(ctxOut.Messages) == 0 {
		t.Fatalf("bot context: no breakdown parts or no messages:\n%s", r.Stdout)
	}
	tokens := 0
	for _, p := range ctxOut.Breakdown.Parts {
		tokens += p.Tokens
	}
	if tokens == 0 || ctxOut.Breakdown.Total == 0 {
		t.Errorf("bot context: every part has 0 tokens:\n%s", r.Stdout)
	}
	last := ctxOut.Messages[len(ctxOut.Messages)-1]
	if last.Role != "user" || last.Content != "what is my parrot called?" {
		t.Errorf("bot context: last message %+v, want the text asked about", last)
	}
	joined := r.Stdout
	for _, want := range []string{"Pistachio", "a parrot"} {
		if !strings.Contains(joined, want) {
			t.Errorf("bot context lacks %q (history or memory):\n%s", want, r.Stdout)
		}
	}
	if len(srv.Requests()) != nreq {
		t.Errorf("bot context called the LLM")
	}

	// version, usage errors, broken import.
	if r := env.mustRun(t, "", "version"); !strings.HasPrefix(r.Stdout, "recall ") || len(strings.TrimSpace(r.Stdout)) <= len("recall") {
		t.Errorf("bot version printed %q", r.Stdout)
	}
	for _, args := range [][]string{
		{"frobnicate"},
		{"search", "Pistachio"},
		{"search", "--key", consoleKey},
		{"context", "Pistachio"},
		{"export", "extra"},
		{"import"},
		{"search", "--key", "nocolon", "x"},
	} {
		r := env.run(t, "", args...)
		if r.Code != 2 || !strings.Contains(strings.ToLower(r.Stderr), "usage") {
			t.Errorf("bot %v: want exit 2 with usage on stderr:\n%s", args, r)
		}
	}

	broken := map[string]string{
		"truncated.json":    `{"format":"recall-export","version":1,"owners":[{"owner":"console:local","conversations":[{"key":"console:local:","messages":[{"role":"user","text":"half`,
		"wrong-format.json": `{"format":"something-else","version":1,"owners":[]}`,
		// The first owner is fine, the second is not: nothing at all may be imported.
		"bad-second-owner.json": `{"format":"recall-export","version":1,"exported_at":"2025-01-01T00:00:00Z","owners":[
			{"owner":"telegram:1","conversations":[{"key":"telegram:1:","messages":[{"role":"user","text":"first owner line","time":"2025-01-01T00:00:00Z","tokens":3,"is_active":true}]}]},
			{"owner":"telegram:2","conversations":[{"key":"telegram:3:","messages":[{"role":"wizard","text":"x","time":"2025-01-01T00:00:00Z","tokens":1,"is_active":true}]}]}]}`,
	}
	target := newEnv(t, "")
	for name, body := range broken {
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		r := target.run(t, "", "import", path)
		if r.Code != 1 || !strings.Contains(r.Stderr, "error:") || !strings.Contains(r.Stderr, name) {
			t.Errorf("bot import %s: want exit 1 and an error naming the file:\n%s", name, r)
		}
	}
	if r := target.run(t, "", "import", filepath.Join(t.TempDir(), "missing.json")); r.Code != 1 {
		t.Errorf("bot import of a missing file: want exit 1:\n%s", r)
	}
	// Nothing behind: no store at all, or an empty one.
	if r := target.run(t, "", "export"); r.Code != 1 || !strings.Contains(r.Stderr, "no Recall data") {
		if doc := target.export(t); len(doc.Owners) != 0 {
			t.Errorf("broken imports left data behind: %+v", doc.Owners)
		}
	}
}
