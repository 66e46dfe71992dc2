package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/recallbot/recall/memory"
)

// assertInOrder checks that every want occurs in out, each after the one
// before it.
func assertInOrder(t *testing.T, out string, wants ...string) {
	t.Helper()
	rest := out
	for i, w := range wants {
		j := strings.Index(rest, w)
		if j < 0 {
			if strings.Contains(out, w) {
				t.Fatalf("%q (#%d) appears, but not after %q\n--- output ---\n%s", w, i, wants[max(i-1, 0)], out)
			}
			t.Fatalf("%q (#%d) missing from the output\n--- output ---\n%s", w, i, out)
		}
		rest = rest[j+len(w):]
	}
}

// lines joins lines into a script for stdin.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

func TestTerminalConversationRemembers(t *testing.T) {
	srv := newFakeLLM(t)
	env := newEnv(t, srv.URL, "RECALL_MEMORY_THRESHOLD=3", "RECALL_MEMORY_KEEP_RECENT_TURNS=1")
	var said []string // every chat line sent, in order

	// Run 1: two chat turns and commands, answered in order.
	r := env.mustRun(t, lines(
		"hello there, I am Ana",
		"/remember city Lisbon",
		"",
		"/summary_status",
		"what is the capital of Portugal",
	))
	said = append(said, "hello there, I am Ana", "what is the capital of Portugal")
	assertInOrder(t, r.Stdout,
		"echo: hello there, I am Ana\n",
		`Noted under "city"`,
		"Memory: on",
		"Messages stored:",
		"echo: what is the capital of Portugal\n",
	)
	if n := len(srv.chatRequests()); n != 2 {
		t.Fatalf("run 1: the LLM got %d chat requests, want 2 (commands never reach it)", n)
	}

	// Run 2, a new process on the same data: the history is restored by
	// the conversation key and the note reaches the prompt.
	r = env.mustRun(t, lines("do you remember me"))
	said = append(said, "do you remember me")
	assertInOrder(t, r.Stdout, "echo: do you remember me\n")
	reqs := srv.chatRequests()
	if len(reqs) != 3 {
		t.Fatalf("after run 2: %d chat requests, want 3", len(reqs))
	}
	prompt := promptText(reqs[2])
	for _, want := range []string{
		"user: hello there, I am Ana",
		"assistant: echo: hello there, I am Ana",
		"user: what is the capital of Portugal",
		"assistant: echo: what is the capital of Portugal",
		"Lisbon",
		"user: do you remember me",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the prompt after a restart lacks %q:\n%s", want, prompt)
		}
	}
	if strings.Contains(prompt, "/remember") || strings.Contains(prompt, "/summary_status") {
		t.Errorf("commands leaked into the prompt:\n%s", prompt)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Run 3: with the threshold of 3 reached, the conversation is
	// summarized (the bot waits for the summary before exiting).
	more := []string{"one sheep", "two sheep", "three sheep", "four sheep"}
	r = env.mustRun(t, lines(more...))
	said = append(said, more...)
	var wants []string
	for _, l := range more {
		wants = append(wants, "echo: "+l+"\n")
	}
	assertInOrder(t, r.Stdout, wants...)
	if srv.summaryRequests() == 0 {
		t.Fatalf("no summarization request reached the LLM after %d chat turns with memory.threshold=3", len(said))
	}

	// Run 4: the summary is in the prompt.
	r = env.mustRun(t, lines("what do you know"))
	said = append(said, "what do you know")
	assertInOrder(t, r.Stdout, "echo: what do you know\n")
	reqs = srv.chatRequests()
	prompt = promptText(reqs[len(reqs)-1])
	for _, want := range []string{"## Summaries", summaryText, "Lisbon", "user: what do you know"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the prompt after summarizing lacks %q:\n%s", want, prompt)
		}
	}

	// The export holds every message ever sent, archived ones included.
	doc := env.export(t)
	msgs := messagesOf(doc, consoleKey)
	users, replies := map[string]int{}, map[string]int{}
	archived := 0
	for _, m := range msgs {
		switch m.Role {
		case memory.RoleUser:
			users[m.Text]++
		case memory.RoleAssistant:
			replies[m.Text]++
		}
		if !m.Active {
			archived++
		}
	}
	if len(msgs) < 2*len(said) {
		t.Errorf("export has %d messages, want at least %d (every line and its reply)", len(msgs), 2*len(said))
	}
	for _, l := range said {
		if users[l] != 1 {
			t.Errorf("user line %q stored %d times, want 1", l, users[l])
		}
		if replies["echo: "+l] != 1 {
			t.Errorf("reply to %q stored %d times, want 1", l, replies["echo: "+l])
		}
	}
	if archived == 0 {
		t.Errorf("no archived (is_active false) message in the export after a summary")
	}
	sums := 0
	for _, o := range doc.Owners {
		for _, c := range o.Conversations {
			sums += len(c.Summaries)
		}
	}
	if sums == 0 {
		t.Errorf("no summary in the export")
	}
	t.Logf("%d chat turns over 4 runs, %d messages exported (%d archived), %d summaries, %d summarization requests",
		len(said), len(msgs), archived, sums, srv.summaryRequests())
}

func TestNoLLMConfigured(t *testing.T) {
	env := newEnv(t, "") // HOME and working dir are empty temp dirs: no config.yaml
	r := env.run(t, lines(
		"hello, anyone there?",
		"/help",
		"/remember city Lisbon",
		"/memories",
	))
	if r.Code != 0 {
		t.Fatalf("want exit 0 at end of input:\n%s", r)
	}
	assertInOrder(t, r.Stdout,
		"no language model is configured",
		"/help",
		"/remember",
		`Noted under "city"`,
		"Lisbon",
	)
	first := strings.SplitN(r.Stdout, "\n", 2)[0]
	for _, want := range []string{"llm.base_url", "RECALL_LLM_API_KEY"} {
		if !strings.Contains(first, want) {
			t.Errorf("the reply to a chat line does not mention %s: %q", want, first)
		}
	}
	// The note survives a restart.
	r = env.mustRun(t, lines("/memories"))
	assertInOrder(t, r.Stdout, "city", "Lisbon")
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		env  string
		args []string
		key  string
	}{
		{"RECALL_MEMORY_THRESHOLD=0", nil, "memory.threshold"},
		{"RECALL_MEMORY_THRESHOLD=0", []string{"export"}, "memory.threshold"},
		{"RECALL_LLM_TEMPERATURE=7", nil, "llm.temperature"},
		{"RECALL_MEMORY_STORAGE=floppy", nil, "memory.storage"},
		{"RECALL_LLM_TIMEOUT=30", nil, "llm.timeout"},
	} {
		t.Run(fmt.Sprintf("%s %v", tc.env, tc.args), func(t *testing.T) {
			env := newEnv(t, "", tc.env)
			r := env.run(t, "hello\n", tc.args...)
			if r.Code != 2 {
				t.Fatalf("want exit 2:\n%s", r)
			}
			if !strings.Contains(r.Stderr, tc.key) {
				t.Errorf("stderr does not name %s:\n%s", tc.key, r.Stderr)
			}
			if r.Stdout != "" {
				t.Errorf("nothing should be answered with a bad configuration, got:\n%s", r.Stdout)
			}
		})
	}
	// A mistyped command is named as such, even with a broken configuration.
	r := newEnv(t, "", "RECALL_MEMORY_THRESHOLD=0").run(t, "", "exprot")
	if r.Code != 2 || !strings.Contains(r.Stderr, `unknown command "exprot"`) || !strings.Contains(r.Stderr, "Usage:") {
		t.Errorf("bot exprot with a broken configuration: want exit 2 naming the command, with usage:\n%s", r)
	}
}
