package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/memory"
)

// filesHolding lists the files under dir that hold word (any case).
func filesHolding(t *testing.T, dir, word string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(bytes.ToLower(b), []byte(strings.ToLower(word))) {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// /purge all in the terminal chat leaves none of the user's words in the
// data directory: not in the database, not in the note, not in the file
// /export saved in data/exports.
func TestTerminalPurgeRemovesExports(t *testing.T) {
	const secret = "zqxexported5521"
	srv := newFakeLLM(t)
	env := newEnv(t, srv.URL)
	r := env.mustRun(t, lines("my code is "+secret, "/remember code "+secret, "/export"))
	assertInOrder(t, r.Stdout, "echo: my code is "+secret, "Saved to ")
	exports, err := filepath.Glob(filepath.Join(env.Data, "exports", "recall-export-console-local-*.json"))
	if err != nil || len(exports) != 1 {
		t.Fatalf("exports: %v %v\n%s", exports, err, r)
	}
	if found := filesHolding(t, env.Data, secret); len(found) == 0 {
		t.Fatal("control failed: the words are nowhere in the data directory before the purge")
	}
	r = env.mustRun(t, lines("/purge all", "yes"))
	assertInOrder(t, r.Stdout, "Delete ALL your data", "Deleted ")
	if found := filesHolding(t, env.Data, secret); len(found) > 0 {
		t.Errorf("after /purge all the words are still in %v", found)
	}
	if _, err := os.Stat(exports[0]); !os.IsNotExist(err) {
		t.Errorf("the export %s survived /purge all (%v)", exports[0], err)
	}
}

// erasureData is three owners: the user telegram:123 (a private chat and a
// note holding purged), a group where they and telegram:456 wrote (theirs
// holds purged, 456's kept), and telegram:456's own chat (kept).
func erasureData(purged, kept string) memory.Export {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	user := func(sender, pid, text string, at time.Time) memory.Message {
		return memory.Message{Role: memory.RoleUser, SenderID: sender, SenderName: "U" + sender, PlatformID: pid, Text: text, Time: at}
	}
	bot := func(pid, text string, at time.Time) memory.Message {
		return memory.Message{Role: memory.RoleAssistant, ReplyTo: pid, Text: text, Time: at.Add(time.Second)}
	}
	return memory.NewExport(
		memory.OwnerData{Owner: "telegram:123",
			Memories: []memory.UserMemory{{Key: "code", Content: "my code is " + purged, Created: t0, Updated: t0}},
			Conversations: []memory.ConversationData{{Key: "telegram:123:", Messages: []memory.Message{
				user("123", "1", "my code is "+purged, t0), bot("1", "noted "+purged, t0),
				user("123", "2", "and the rest", t0.Add(time.Minute)), bot("2", "ok", t0.Add(time.Minute)),
			}}}},
		memory.OwnerData{Owner: "telegram:-100",
			Conversations: []memory.ConversationData{{Key: "telegram:-100:", Messages: []memory.Message{
				user("123", "g1", "in the group my code is "+purged, t0), bot("g1", "heard: "+purged, t0),
				user("456", "g2", "mine is "+kept, t0.Add(time.Minute)), bot("g2", "heard too", t0.Add(time.Minute)),
			}}}},
		memory.OwnerData{Owner: "telegram:456",
			Conversations: []memory.ConversationData{{Key: "telegram:456:", Messages: []memory.Message{
				user("456", "1", "remember "+kept, t0), bot("1", "sure", t0),
			}}}},
	)
}

// TestBotPurgeUser: `bot purge --user` erases a user as /purge all does —
// their chats, notes, their messages in groups with the answers to them,
// their /export files — after a y/N question; "n" (or no answer) deletes
// nothing. Everybody else's data stays.
func TestBotPurgeUser(t *testing.T) {
	const purged, kept = "zqxerased7731", "zqxothers2290"
	env := newEnv(t, "")
	env.mustRun(t, "", "import", writeJSONFile(t, "data.json", erasureData(purged, kept)))
	exports := filepath.Join(env.Data, "exports")
	if err := os.MkdirAll(exports, 0o700); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(exports, "recall-export-telegram-123-20260301-100000.json")
	theirs := filepath.Join(exports, "recall-export-telegram-456-20260301-100000.json")
	for p, w := range map[string]string{mine: purged, theirs: kept} {
		if err := os.WriteFile(p, []byte(`{"text":"`+w+`"}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, stdin := range []string{"n\n", ""} {
		r := env.mustRun(t, stdin, "purge", "--user", "telegram:123")
		assertInOrder(t, r.Stdout, "Delete everything of telegram:123: 4 messages in 1 conversations, 1 notes, 0 facts",
			"and their 1 messages in 1 groups", "[y/N]", "Nothing was deleted.")
		if found := filesHolding(t, env.Data, purged); len(found) == 0 {
			t.Fatalf("answered %q, yet the data is gone\n%s", stdin, r)
		}
	}
	r := env.mustRun(t, "y\n", "purge", "--user", "telegram:123")
	assertInOrder(t, r.Stdout, "[y/N]", "Deleted 4 messages, 0 summaries, 0 facts and 1 notes.", "In the groups: 2 messages")
	if found := filesHolding(t, env.Data, purged); len(found) > 0 {
		t.Errorf("after bot purge --user the words are still in %v\n%s", found, r)
	}
	if found := filesHolding(t, env.Data, kept); len(found) == 0 {
		t.Error("bot purge --user took other people's data too")
	}
	if _, err := os.Stat(theirs); err != nil {
		t.Errorf("another user's export: %v", err)
	}
	doc := env.export(t)
	if n := len(messagesOf(doc, "telegram:-100:")); n != 2 {
		t.Errorf("the group keeps %d messages, want 2 (the other member's and its answer)", n)
	}
	if n := len(messagesOf(doc, "telegram:456:")); n != 2 {
		t.Errorf("the other user keeps %d messages, want 2", n)
	}
}

// `bot purge --conversation KEY --yes` deletes one conversation without
// asking; --older-than alone purges every owner's old messages.
func TestBotPurgeConversationAndOlder(t *testing.T) {
	const purged, kept = "zqxerased7731", "zqxothers2290"
	env := newEnv(t, "")
	env.mustRun(t, "", "import", writeJSONFile(t, "data.json", erasureData(purged, kept)))
	r := env.mustRun(t, "", "purge", "--conversation", "telegram:-100:", "--yes")
	if strings.Contains(r.Stdout, "[y/N]") || !strings.Contains(r.Stdout, "Deleted 4 messages") {
		t.Errorf("bot purge --conversation --yes:\n%s", r)
	}
	doc := env.export(t)
	if n := len(messagesOf(doc, "telegram:-100:")); n != 0 {
		t.Errorf("the purged conversation keeps %d messages", n)
	}
	if n := len(messagesOf(doc, "telegram:123:")); n != 4 {
		t.Errorf("another conversation keeps %d messages, want 4", n)
	}
	// The data is from March 2026: older than a day.
	r = env.mustRun(t, "y\n", "purge", "--older-than", "1")
	assertInOrder(t, r.Stdout, "every message older than 1 days of all", "Deleted 6 messages")
	if found := filesHolding(t, env.Data, kept); len(found) > 0 {
		t.Errorf("after --older-than the old words are still in %v", found)
	}
}

// Mistakes get a usage message and delete nothing.
func TestBotPurgeUsage(t *testing.T) {
	env := newEnv(t, "")
	env.mustRun(t, "", "import", writeJSONFile(t, "data.json", erasureData("zqxa", "zqxb")))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "say what to delete"},
		{[]string{"--user", "telegram:123", "--conversation", "telegram:123:"}, "not both"},
		{[]string{"--user", "123"}, "is not a user id"},
		{[]string{"--conversation", "nokey"}, "is not a conversation key"},
		{[]string{"--older-than", "0"}, "from 1 to 36500"},
		{[]string{"--user", "telegram:123", "extra"}, `unexpected "extra"`},
	} {
		r := env.run(t, "y\n", append([]string{"purge"}, tc.args...)...)
		if r.Code != 2 || !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("bot purge %v: want exit 2 saying %q\n%s", tc.args, tc.want, r)
		}
	}
	if n := len(messagesOf(env.export(t), "telegram:123:")); n != 4 {
		t.Errorf("after the mistakes telegram:123 has %d messages, want 4", n)
	}
}

// While the bot runs on the data directory, bot purge refuses with a
// message that says what to do instead, and deletes nothing.
func TestBotPurgeRefusedWhileTheBotRuns(t *testing.T) {
	srv := newFakeLLM(t)
	env := newEnv(t, srv.URL)
	b := env.start(t)
	b.send("my parrot is called Pistachio")
	b.waitLine("echo: my parrot is called Pistachio")
	r := env.run(t, "y\n", "purge", "--user", "console:local", "--yes")
	if r.Code != 1 || !strings.Contains(r.Stderr, "PID "+strconv.Itoa(b.cmd.Process.Pid)) ||
		!strings.Contains(r.Stderr, "stop it, run bot purge again") || !strings.Contains(r.Stderr, "/purge in their chat") {
		t.Errorf("bot purge beside the running bot:\n%s", r)
	}
	b.send("still here?")
	b.waitLine("echo: still here?")
	b.stop()
	if n := len(messagesOf(env.export(t), consoleKey)); n != 4 {
		t.Errorf("after the refused purge the chat has %d messages, want 4", n)
	}
	env.mustRun(t, "", "purge", "--user", "console:local", "--yes")
	if n := len(messagesOf(env.export(t), consoleKey)); n != 0 {
		t.Errorf("after the purge with the bot stopped the chat has %d messages", n)
	}
}
