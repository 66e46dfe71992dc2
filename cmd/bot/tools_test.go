package main

// End-to-end test of the memory tools on the real binary: a fake Bot API and
// a fake OpenAI-compatible server that calls tools, a restart in between.

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/recallbot/recall/adapters/telegram/telegramtest"
	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
)

// toolResults are the tool messages of a request, by call id.
func toolResults(r llmtest.Request) map[string]string {
	out := map[string]string{}
	for _, m := range r.Messages {
		if m.Role == llm.RoleTool {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

// lastUserText is the text of the last user message of a request.
func lastUserText(r llmtest.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == llm.RoleUser {
			return r.Messages[i].Content
		}
	}
	return ""
}

// A user says "remember that …" and the model saves the note through the
// remember tool, without a command; the bot is stopped and started again;
// asked later, the model finds the note in its prompt and through
// list_memories. A call whose arguments name another user's conversation
// acts on the turn's own. /context names the tools offered and those the
// last answer called, and /metrics counts the calls.
func TestMemoryToolsEndToEnd(t *testing.T) {
	const (
		other  = "telegram:43"
		pin    = "4921"
		answer = "Her birthday is on 3 May."
	)
	var mu sync.Mutex
	var questionTurn []llmtest.Request // the requests answering the question after the restart
	model := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if isSummaryRequest(r) {
			return llmtest.Response{Text: summaryText}
		}
		user, results := lastUserText(r), toolResults(r)
		switch {
		case strings.Contains(user, "Remember that my sister's birthday is 3 May"):
			if len(results) == 0 {
				return llmtest.Response{ToolCalls: []llm.ToolCall{{ID: "r1", Name: "remember",
					Arguments: `{"key":"sister_birthday","text":"My sister's birthday is 3 May"}`}}}
			}
			return llmtest.Response{Text: "Noted. (" + results["r1"] + ")"}
		case strings.Contains(user, "Remember that my PIN is"):
			if len(results) == 0 {
				return llmtest.Response{ToolCalls: []llm.ToolCall{{ID: "p1", Name: "remember",
					Arguments: `{"key":"pin","text":"The PIN is ` + pin + `"}`}}}
			}
			return llmtest.Response{Text: "Noted your PIN."}
		case strings.Contains(user, "When is my sister's birthday?"):
			mu.Lock()
			questionTurn = append(questionTurn, r)
			mu.Unlock()
			if len(results) == 0 {
				// One honest call, and three that try user 43's notes
				// and archive whatever their arguments say.
				return llmtest.Response{ToolCalls: []llm.ToolCall{
					{ID: "q1", Name: "list_memories", Arguments: `{"owner":"` + other + `"}`},
					{ID: "q2", Name: "search_memory", Arguments: `{"query":"PIN","key":"` + other + `:","owner":"` + other + `"}`},
					{ID: "q3", Name: "forget", Arguments: `{"key":"pin","owner":"` + other + `"}`},
				}}
			}
			for _, m := range r.Messages {
				if m.Role == llm.RoleSystem && strings.Contains(m.Content, "3 May") && strings.Contains(results["q1"], "3 May") {
					return llmtest.Response{Text: answer}
				}
			}
			return llmtest.Response{Text: "I don't know."}
		}
		return llmtest.Response{Text: "echo: " + user}
	})
	tg := newFakeTelegram(t)
	env := telegramEnv(t, tg, model.URL, "RECALL_ACCESS_ALLOWED_USERS=telegram:42,telegram:43")

	bot := env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)
	if m := menu(t, tg); !inMenu(m, "summary") || inMenu(m, "facts") {
		t.Errorf("with fact extraction off (the default) the menu must hold /summary, not /facts: %s", m)
	}
	tg.sendText(42, "Remember that my sister's birthday is 3 May")
	if _, ok := tg.waitSent("Noted. (Saved note sister_birthday.)", 30*time.Second); !ok {
		t.Fatalf("no reply to the remember request:\n%s", bot.output())
	}
	tg.sendText(43, "Remember that my PIN is "+pin)
	if _, ok := tg.waitSent("Noted your PIN.", 30*time.Second); !ok {
		t.Fatalf("no reply to user 43:\n%s", bot.output())
	}
	if rec := bot.waitLog("tool call", 10*time.Second); rec["tool"] != "remember" || rec["outcome"] != "ok" {
		t.Errorf("the tool call was logged as %v", rec)
	}
	bot.signal(syscall.SIGTERM)
	if code := bot.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, bot.output())
	}

	bot = env.startDaemon(t)
	addr := bot.httpAddr()
	bot.waitLog("running", 30*time.Second)
	tg.sendText(42, "When is my sister's birthday?")
	if _, ok := tg.waitSent(answer, 30*time.Second); !ok {
		t.Fatalf("the question was not answered from the note:\n%s", bot.output())
	}
	mu.Lock()
	reqs := append([]llmtest.Request(nil), questionTurn...)
	mu.Unlock()
	if len(reqs) != 2 || len(reqs[0].Tools) != 5 {
		t.Fatalf("the question took %d requests (want a tool round and the answer); tools offered: %v", len(reqs), reqs[0].Tools)
	}
	inPrompt := false
	for _, m := range reqs[0].Messages {
		inPrompt = inPrompt || m.Role == llm.RoleSystem && strings.Contains(m.Content, "- sister_birthday: My sister's birthday is 3 May")
	}
	if !inPrompt {
		t.Errorf("the note is not in the prompt after the restart:\n%s", promptText(reqs[0]))
	}
	res := toolResults(reqs[1])
	if !strings.Contains(res["q1"], "sister_birthday: My sister's birthday is 3 May") {
		t.Errorf("list_memories answered %q", res["q1"])
	}
	for id, r := range res {
		if strings.Contains(r, pin) {
			t.Errorf("call %s showed user 43's PIN to user 42's turn: %q", id, r)
		}
	}
	if !strings.HasPrefix(res["q3"], "There is no note") {
		t.Errorf("forget of another user's note answered %q", res["q3"])
	}

	tg.sendText(42, "/context")
	c, ok := tg.waitSent("memory tools the model may call", 30*time.Second)
	if !ok {
		t.Fatalf("/context does not show the tools:\n%s", bot.output())
	}
	for _, want := range []string{"search_memory, remember, forget, list_memories, recall_summary",
		"my last answer here called: list_memories, search_memory, forget"} {
		if !strings.Contains(c.Fields["text"], want) {
			t.Errorf("/context lacks %q:\n%s", want, c.Fields["text"])
		}
	}
	if c.ChatID() != telegramtest.PrivateChat(42).ID {
		t.Errorf("/context answered in chat %d", c.ChatID())
	}

	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`recall_tool_calls_total{outcome="ok",tool="list_memories"} 1`, `recall_tool_calls_total{outcome="ok",tool="forget"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	bot.signal(syscall.SIGTERM)
	if code := bot.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, bot.output())
	}

	db := openDB(t, env.Data)
	defer db.Close()
	if ms, err := db.Memories(t.Context(), other); err != nil || len(ms) != 1 || ms[0].Key != "pin" {
		t.Errorf("user 43's notes after user 42's turn: %+v, %v", ms, err)
	}
	if ms, err := db.Memories(t.Context(), "telegram:42"); err != nil || len(ms) != 1 || ms[0].Key != "sister_birthday" {
		t.Errorf("user 42's notes: %+v, %v", ms, err)
	}
}

// menu waits for the bot to register its Telegram command menu
// (setMyCommands) and returns the commands it sent.
func menu(t *testing.T, tg fakeTelegram) string {
	t.Helper()
	calls, ok := tg.UntilWithin(30*time.Second, func(calls []telegramtest.Call) bool {
		return len(telegramtest.FilterCalls(calls, "setMyCommands")) > 0
	})
	if !ok {
		t.Fatal("the bot registered no command menu")
	}
	return telegramtest.FilterCalls(calls, "setMyCommands")[0].Fields["commands"]
}

// inMenu reports whether /name is in a menu returned by menu.
func inMenu(menu, name string) bool { return strings.Contains(menu, `"command":"`+name+`"`) }

// With fact extraction enabled, /facts is in the command menu and lists
// what was learned; /facts forget N removes that fact from the store, its
// search index, the next prompts and search_memory's results, across a
// restart, while the other facts stay.
func TestFactsEndToEnd(t *testing.T) {
	const (
		lisbon = "The user lives in Lisbon"
		ana    = "The user's sister is called Ana"
		answer = "Your sister is Ana."
	)
	var mu sync.Mutex
	var question []llmtest.Request
	model := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		switch {
		case len(r.Messages) > 0 && r.Messages[0].Content == chat.FactPrompt:
			if strings.Contains(promptText(r), "I live in Lisbon") {
				return llmtest.Response{Text: "[personal] " + lisbon + "\n[personal] " + ana}
			}
			return llmtest.Response{Text: "NONE"}
		case isSummaryRequest(r):
			return llmtest.Response{Text: summaryText}
		}
		user := lastUserText(r)
		if !strings.Contains(user, "where do I live and what is my sister called?") {
			return llmtest.Response{Text: "Nice to meet you."}
		}
		mu.Lock()
		question = append(question, r)
		mu.Unlock()
		if len(r.Tools) > 0 && len(toolResults(r)) == 0 {
			return llmtest.Response{ToolCalls: []llm.ToolCall{{ID: "s1", Name: "search_memory", Arguments: `{"query":"Lisbon sister"}`}}}
		}
		return llmtest.Response{Text: answer}
	})
	tg := newFakeTelegram(t)
	env := telegramEnv(t, tg, model.URL, "RECALL_MEMORY_FACTS_ENABLED=true")

	bot := env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)
	if m := menu(t, tg); !inMenu(m, "facts") {
		t.Errorf("/facts is not in the command menu with extraction enabled: %s", m)
	}
	tg.sendText(42, "Hi, I live in Lisbon and my sister is Ana")
	if _, ok := tg.waitSent("Nice to meet you.", 30*time.Second); !ok {
		t.Fatalf("no reply:\n%s", bot.output())
	}
	// Stopping waits for the extraction running after the reply.
	bot.signal(syscall.SIGTERM)
	if code := bot.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, bot.output())
	}

	bot = env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)
	tg.sendText(42, "/facts")
	c, ok := tg.waitSent("What I learned", 30*time.Second)
	if !ok {
		t.Fatalf("/facts did not list the facts:\n%s", bot.output())
	}
	n := ""
	for _, line := range strings.Split(c.Fields["text"], "\n") {
		if num, rest, ok := strings.Cut(line, ". "); ok && strings.HasPrefix(rest, lisbon) {
			n = num
		}
	}
	if n == "" || !strings.Contains(c.Fields["text"], ana) {
		t.Fatalf("/facts lists:\n%s", c.Fields["text"])
	}
	tg.sendText(42, "/facts forget "+n)
	if _, ok := tg.waitSent("Forgotten: “"+lisbon, 30*time.Second); !ok {
		t.Fatalf("/facts forget %s was not confirmed:\n%s", n, bot.output())
	}
	tg.sendText(42, "where do I live and what is my sister called?")
	if _, ok := tg.waitSent(answer, 30*time.Second); !ok {
		t.Fatalf("no answer:\n%s", bot.output())
	}
	mu.Lock()
	reqs := append([]llmtest.Request(nil), question...)
	mu.Unlock()
	if len(reqs) != 2 {
		t.Fatalf("%d requests for the question, want a search and the answer", len(reqs))
	}
	var facts string
	for _, m := range reqs[0].Messages {
		if m.Role == llm.RoleSystem {
			facts += m.Content
		}
	}
	if strings.Contains(facts, "- "+lisbon) || !strings.Contains(facts, "- "+ana) {
		t.Errorf("the prompt's facts after /facts forget:\n%s", facts)
	}
	res := toolResults(reqs[1])["s1"]
	if strings.Contains(res, lisbon) || !strings.Contains(res, ana+" (learned") {
		t.Errorf("search_memory after /facts forget answered:\n%s", res)
	}
	bot.signal(syscall.SIGTERM)
	if code := bot.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, bot.output())
	}

	db := openDB(t, env.Data)
	defer db.Close()
	for word, want := range map[string]int{"lisbon": 0, "ana": 1} {
		var got int
		if err := db.DB().QueryRowContext(t.Context(), `SELECT count(*) FROM facts_fts WHERE facts_fts MATCH ?`, word).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("the fact index finds %q in %d facts, want %d", word, got, want)
		}
	}
}

// A model whose context window (2,048 tokens, max_tokens included) is
// smaller than the bot assumed: when the conversation outgrows it, the
// provider's context_length_exceeded is answered by a smaller prompt on a
// second call, the user never sees a failure, the window is remembered for
// the next turns and the change is logged once.
func TestContextLengthEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the bot binary end to end (5 s on a busy 2-core machine); go test without -short runs it")
	}
	const window = 2048
	tokens := func(r llmtest.Request) int {
		n := 0
		for _, m := range r.Messages {
			n += len(m.Content) / 4
		}
		return n
	}
	var mu sync.Mutex
	perTurn := map[string][]int{} // prompt tokens of each request, by the message it answers
	model := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if isSummaryRequest(r) {
			return llmtest.Response{Text: summaryText}
		}
		user := lastUserText(r)
		turn, _, _ := strings.Cut(user[strings.Index(user, "message"):], ":")
		n := tokens(r)
		mu.Lock()
		perTurn[turn] = append(perTurn[turn], n)
		mu.Unlock()
		if n+r.MaxTokens > window {
			return llmtest.Response{Status: 400, ErrorCode: "context_length_exceeded",
				Text: fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens.", window, n+r.MaxTokens)}
		}
		return llmtest.Response{Text: "answered " + turn}
	})
	tg := newFakeTelegram(t)
	env := telegramEnv(t, tg, model.URL)
	bot := env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)
	filler := strings.Repeat("and the lease of the flat ", 38) // ~250 tokens
	for i := 1; i <= 6; i++ {
		turn := fmt.Sprintf("message %d", i)
		tg.sendText(42, turn+": "+filler)
		if _, ok := tg.waitSent("answered "+turn, 30*time.Second); !ok {
			t.Fatalf("%s was not answered:\n%s", turn, bot.output())
		}
	}
	if _, ok := tg.waitSent("Sorry", 0); ok {
		t.Error("the user was told about a failure")
	}
	mu.Lock()
	defer mu.Unlock()
	refused := 0
	for turn, sizes := range perTurn {
		for i, n := range sizes {
			if i > 0 && n >= sizes[i-1] {
				t.Errorf("%s: request %d (%d tokens) is not smaller than the one refused", turn, i+1, n)
			}
		}
		refused += len(sizes) - 1
	}
	if refused != 1 {
		t.Errorf("%d requests refused, want exactly one (the window is remembered): %v", refused, perTurn)
	}
	warned := 0
	for _, line := range strings.Split(bot.output(), "\n") {
		if strings.Contains(line, "context window is smaller than the prompt") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("the smaller window was logged %d times, want once:\n%s", warned, bot.output())
	}
	bot.signal(syscall.SIGTERM)
	if code := bot.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, bot.output())
	}
}
