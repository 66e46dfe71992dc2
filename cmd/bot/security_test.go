package main

// Security checks through the real wiring (newApp: access, dedupe, limits,
// commands, quota, responder, assembler, summarizer, store) on a real data
// directory, with an llmtest server recording every prompt:
//
//   - isolation: user B, in private and in a group shared with user A, runs
//     every registered command with arguments aimed at A's data, plus normal
//     turns; nothing of A's private archive, notes, facts or summaries
//     reaches B or any LLM request made for B;
//   - unknown users reach nothing: no LLM call, nothing of their text stored,
//     no answer but the access message.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/adapters/adaptertest"
	"github.com/recallbot/recall/app"
	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/pipeline"
)

// A's secrets, one per kind of data. B never types them: B asks with the
// bait words around them ("locker combination"), which would retrieve them
// if anything were scoped wrongly.
const (
	secretArchive = "zebracrimson"  // in A's private message, archived by /summary_now
	secretNote    = "saffronquartz" // A's /remember note
	secretFact    = "tangerinevolt" // the fact the LLM extracts from A's message
	secretSummary = "ochreplatypus" // the summary the LLM writes of A's messages
	groupWord     = "marigoldgroup" // said by A in the shared group: group memory
)

var privateSecrets = []string{secretArchive, secretNote, secretFact, secretSummary}

// secLLM answers chat requests with an echo, fact extraction with a fact
// holding secretFact when the exchange holds secretArchive, and summaries
// with a text holding secretSummary when the messages hold secretArchive.
func secLLM(t *testing.T) *llmtest.Server {
	echo := llmtest.Echo("echo: ")
	return llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		all := promptText(r)
		switch {
		case len(r.Messages) > 0 && r.Messages[0].Content == chat.FactPrompt:
			if strings.Contains(all, secretArchive) {
				return llmtest.Response{Text: "The user's locker combination is " + secretFact + "."}
			}
			return llmtest.Response{Text: "NONE"}
		case isSummaryRequest(r):
			if strings.Contains(all, secretArchive) {
				return llmtest.Response{Text: "The user shared the locker combination " + secretSummary + "."}
			}
			return llmtest.Response{Text: "They talked about lockers."}
		}
		return echo(r)
	})
}

// secSender records everything sent through it: texts, choices, files.
type secSender struct {
	mu   sync.Mutex
	sent []string
	n    int
}

func (s *secSender) Send(_ context.Context, out pipeline.Outbound) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	text := out.Text
	for _, c := range out.Choices {
		text += "\n[" + c.Label + "|" + c.Data + "]"
	}
	s.sent = append(s.sent, out.Key.String()+" ← "+text)
	s.n++
	return fmt.Sprint(s.n), nil
}

func (s *secSender) SendFile(_ context.Context, key pipeline.Key, f pipeline.File, caption string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, key.String()+" ← file "+f.Name+": "+caption+"\n"+string(f.Data))
	return nil
}

func (s *secSender) Typing(context.Context, pipeline.Key) error { return nil }

func (s *secSender) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sent...)
}

// last returns what was sent since mark (a len of all()).
func (s *secSender) since(mark int) string {
	all := s.all()
	return strings.Join(all[mark:], "\n")
}

// secWorld is one bot wired by newApp, driven turn by turn.
type secWorld struct {
	t    *testing.T
	app  *app.App
	llm  *llmtest.Server
	logs *adaptertest.SyncBuffer
	data string
	seq  int
}

const (
	userA    = "111"
	userB    = "222"
	groupG   = "-1000333"
	stranger = "999"
)

var (
	keyA = pipeline.Key{Channel: "telegram", Chat: userA}
	keyB = pipeline.Key{Channel: "telegram", Chat: userB}
	keyG = pipeline.Key{Channel: "telegram", Chat: groupG}
)

func newSecWorld(t *testing.T, storage string, change func(*config.Config)) *secWorld {
	t.Helper()
	srv := secLLM(t)
	cfg := config.Default()
	cfg.Data.Dir = filepath.Join(t.TempDir(), "data")
	cfg.Log.Level = "debug"
	cfg.LLM.BaseURL, cfg.LLM.APIKey, cfg.LLM.Model = srv.URL, "sk-test-secret-api-key", "test-model"
	cfg.LLM.MaxRetries, cfg.LLM.Timeout = 0, 20*time.Second
	cfg.HTTP.Listen = ""
	cfg.Memory.Storage = storage
	cfg.Memory.KeepRecentTurns = 1
	cfg.Memory.Threshold = 500 // summaries only by /summary_now
	cfg.Memory.Facts.Enabled = true
	cfg.Access.AllowedUsers = []string{"telegram:" + userA, "telegram:" + userB}
	if change != nil {
		change(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := &adaptertest.SyncBuffer{}
	a, err := newApp(t.Context(), cfg, logs)
	if err != nil {
		t.Fatalf("newApp: %v", err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return &secWorld{t: t, app: a, llm: srv, logs: logs, data: cfg.Data.Dir}
}

// say runs one turn from sender in key (a group when key is not the
// sender's private chat; the bot is then mentioned) and waits for its
// background work (facts, summaries).
func (w *secWorld) say(out *secSender, key pipeline.Key, sender, text string) {
	w.t.Helper()
	w.seq++
	group := key.Chat != sender
	in := pipeline.Inbound{
		Key: key, SenderID: sender, SenderName: "user" + sender, MessageID: fmt.Sprint(w.seq),
		Text: text, IsGroup: group, MentionsBot: group, Time: time.Now(),
	}
	if err := w.app.Handler.Handle(w.t.Context(), &pipeline.Turn{In: in, Out: out}); err != nil {
		w.t.Logf("turn %q in %s: %v", text, key, err)
	}
	w.settle()
}

func (w *secWorld) settle() {
	w.app.Responder.Wait()
	if w.app.Summarizer != nil {
		w.app.Summarizer.Wait()
	}
}

// requestsSince returns the flattened LLM requests from number mark on.
func (w *secWorld) requestsSince(mark int) []string {
	var out []string
	for _, r := range w.llm.Requests()[mark:] {
		out = append(out, promptText(r))
	}
	return out
}

// seedA gives A a private archive, a note, a fact and a summary, and says
// something in the group; it checks that A can reach each of them (the
// positive control: the same words would carry the secrets to B if scoping
// were broken).
func (w *secWorld) seedA() {
	t := w.t
	a := &secSender{}
	w.say(a, keyA, userA, "My locker combination is "+secretArchive+", keep it safe.")
	w.say(a, keyA, userA, "/remember locker_code the locker combination is "+secretNote)
	w.say(a, keyA, userA, "Thanks for keeping it.")
	w.say(a, keyA, userA, "Another thing: I like tea.")
	mark := len(a.all())
	w.say(a, keyA, userA, "/summary_now")
	if got := a.since(mark); !strings.Contains(got, "Done:") {
		t.Fatalf("A's /summary_now did not summarize: %s", got)
	}
	w.say(a, keyG, userA, "In this group the locker combination is "+groupWord+".")
	w.say(a, keyG, userA, "/remember group_locker the group locker is "+groupWord)
	w.say(a, keyG, userA, "Good to know.")
	w.say(a, keyG, userA, "/summary_now") // the group's archive and summary

	// Positive control: A's own next turn carries every secret to the LLM.
	n := len(w.llm.Requests())
	w.say(a, keyA, userA, "What is my locker combination?")
	prompts := strings.Join(w.requestsSince(n), "\n")
	for _, s := range privateSecrets {
		if !strings.Contains(prompts, s) {
			t.Fatalf("control: A's own prompt lacks %q, so the test could not see it leak:\n%s", s, prompts)
		}
	}
	mark = len(a.all())
	w.say(a, keyA, userA, "/search locker combination")
	if got := a.since(mark); !strings.Contains(got, secretArchive) {
		t.Fatalf("control: A's /search does not find A's archive: %s", got)
	}
}

// attackArgs are arguments aimed at A's data: A's ids and keys, A's note
// key, ids of stored rows, path tricks, and what flows expect.
var attackArgs = []string{
	"", userA, "telegram:" + userA, "telegram:" + userA + ":", keyA.String() + " locker combination",
	"locker_code", "locker combination", "1", "2", "all", "chat", "older 1", "sqlite 1", "json 1",
	"../" + userA, "../../json/telegram-" + userA, "@" + userA,
}

// followUps answer whatever question a command asked (a numbered choice,
// a yes/no); when nothing was asked they are ordinary turns.
var followUps = []string{"1", "yes", "/cancel"}

// attack runs every registered command with every attack argument as B in
// key, answering the questions they ask, then B's normal questions.
func (w *secWorld) attack(b *secSender, key pipeline.Key) {
	names := w.app.Commands.Names()
	if len(names) < 15 {
		w.t.Fatalf("only %d commands registered: %v", len(names), names)
	}
	for _, name := range names {
		for _, arg := range attackArgs {
			text := "/" + name
			if arg != "" {
				text += " " + arg
			}
			mark := len(b.all())
			w.say(b, key, userB, text)
			if strings.Contains(b.since(mark), "?") { // a question: answer it
				for _, f := range followUps {
					w.say(b, key, userB, f)
				}
			}
		}
		w.say(b, key, userB, "/"+name+"@RecallBot telegram:"+userA)
	}
	for _, q := range []string{
		"What is my locker combination?",
		"What is the locker combination of user " + userA + "?",
		"Tell me everything you know about lockers and combinations.",
	} {
		w.say(b, key, userB, q)
	}
}

func TestSecurityIsolation(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the bot binary with several users (8 s on a busy 2-core machine); go test without -short runs it")
	}
	for _, tc := range []struct {
		name    string
		storage string
		bAdmin  bool
	}{
		{"sqlite", config.StorageSQLite, false},
		{"json", config.StorageJSON, true}, // B is an admin: the widest reach a user has
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newSecWorld(t, tc.storage, func(c *config.Config) {
				if tc.bAdmin {
					c.Access.Admins = []string{"telegram:" + userB}
				}
			})
			w.seedA()

			b := &secSender{}
			n := len(w.llm.Requests())
			// B has an archive of its own: retrieval and search run for B.
			w.say(b, keyB, userB, "I keep my bike in a locker near the station.")
			w.say(b, keyB, userB, "The locker has a blue door.")
			w.say(b, keyB, userB, "/summary_now")
			w.say(b, keyB, userB, "/search locker")
			if got := strings.Join(b.all(), "\n"); !strings.Contains(got, "blue door") {
				t.Fatalf("control: B's /search does not find B's own archive:\n%s", got)
			}
			// docs/design.md: in a group, the group has its own settings and
			// memory, shared by its members: what A said in the group is in
			// the group's context for B's turn there (checked before B's
			// attacks, which include /purge of the group), A's private data
			// is not (checked below with every other request).
			w.say(b, keyG, userB, "What is the locker combination here?")
			if p := strings.Join(w.requestsSince(n), "\n"); !strings.Contains(p, groupWord) {
				t.Errorf("B's turn in the group did not get the group's own memory (%q):\n%s", groupWord, p)
			}
			w.attack(b, keyB)
			w.attack(b, keyG)
			received := strings.Join(b.all(), "\n")
			prompts := w.requestsSince(n)
			t.Logf("B received %d messages; %d LLM requests were made for B", len(b.all()), len(prompts))
			if len(prompts) == 0 {
				t.Fatal("B's turns made no LLM request: the test would see nothing")
			}
			for _, s := range privateSecrets {
				if strings.Contains(received, s) {
					t.Errorf("B received A's private %q:\n%s", s, excerpt(received, s))
				}
				for _, p := range prompts {
					if strings.Contains(p, s) {
						t.Errorf("an LLM request made for B holds A's private %q:\n%s", s, excerpt(p, s))
						break
					}
				}
			}
			// B could not change A's data either.
			if tc.bAdmin {
				w.say(b, keyB, userB, "/allow telegram:"+userA) // B's attacks included /deny 111
			}
			a := &secSender{}
			mark := len(a.all())
			w.say(a, keyA, userA, "/memories")
			w.say(a, keyA, userA, "/search locker combination")
			w.say(a, keyA, userA, "/summary_status")
			got := a.since(mark)
			for _, s := range []string{secretNote, secretArchive} {
				if !strings.Contains(got, s) {
					t.Errorf("after B's commands A's data lacks %q:\n%s", s, got)
				}
			}
		})
	}
}

// excerpt shows s in its context.
func excerpt(text, s string) string {
	i := strings.Index(text, s)
	lo, hi := max(i-300, 0), min(i+len(s)+300, len(text))
	return "…" + text[lo:hi] + "…"
}

// TestUnknownUserReachesNothing: a user not allowed gets the access message
// and nothing else, whatever they send; no LLM call is made, and their text
// is not stored anywhere in the data directory.
func TestUnknownUserReachesNothing(t *testing.T) {
	for _, storage := range []string{config.StorageSQLite, config.StorageJSON} {
		t.Run(storage, func(t *testing.T) {
			w := newSecWorld(t, storage, nil)
			w.seedA()
			n := len(w.llm.Requests())
			const unknownSecret = "quokkaparsnip"
			u := &secSender{}
			keyU := pipeline.Key{Channel: "telegram", Chat: stranger}
			tries := []string{"hello " + unknownSecret, "/start", "/help", "/remember x " + unknownSecret, "/search locker combination",
				"/export", "/memories", "/context locker", "/summary json 1", "/purge all", "yes", "/allow telegram:" + stranger, "/pending", "/stats"}
			for _, name := range w.app.Commands.Names() {
				tries = append(tries, "/"+name, "/"+name+" telegram:"+userA)
			}
			for _, text := range tries {
				w.say(u, keyU, stranger, text)
				w.say(u, keyG, stranger, "@RecallBot "+text+" "+unknownSecret) // in the shared group
			}
			if got := w.requestsSince(n); len(got) != 0 {
				t.Errorf("unknown users' messages made %d LLM requests; first:\n%s", len(got), got[0])
			}
			sent := u.all()
			if len(sent) == 0 {
				t.Fatal("the unknown user was not told how to get in")
			}
			for _, s := range sent {
				if !strings.Contains(s, "telegram:"+stranger) {
					t.Errorf("the unknown user got something other than the access message: %s", s)
				}
				for _, secret := range append(privateSecrets, groupWord) {
					if strings.Contains(s, secret) {
						t.Errorf("the unknown user received %q: %s", secret, s)
					}
				}
			}
			// Nothing of what they wrote is kept, in any file.
			if err := w.app.Store.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			err := filepath.Walk(w.data, func(path string, info os.FileInfo, err error) error {
				if err != nil || info.IsDir() {
					return err
				}
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				if bytes.Contains(b, []byte(unknownSecret)) {
					t.Errorf("%s holds the unknown user's text", path)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
