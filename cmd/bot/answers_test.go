package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/adapters/telegram/telegramtest"
)

// TestAnswersAreNotMessages runs the real binary against a fake Bot API:
// the typed answers to /summary's and /purge's questions ("1", "7", "no")
// are part of the command — not stored as messages, not in the next prompt,
// not answered after a kill and a restart — and a command the platform
// delivers again after the restart (the same message id) runs once.
func TestAnswersAreNotMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the bot binary through restarts (8 s on a busy 2-core machine); go test without -short runs it")
	}
	tg := newFakeTelegram(t)
	model := newFakeLLM(t)
	env := telegramEnv(t, tg, model.URL)
	bot := env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)

	say := func(text, want string) {
		t.Helper()
		tg.sendText(42, text)
		if _, ok := tg.waitSent(want, 30*time.Second); !ok {
			t.Fatalf("%q: no reply containing %q:\n%s", text, want, bot.output())
		}
	}
	say("/summary", "Step 1 of 2")
	say("1", "Step 2 of 2")
	say("7", "Summarize every 7 messages")
	say("/purge chat", "This cannot be undone")
	say("no", "Cancelled; nothing was deleted")
	start := tg.TextMessage(telegramtest.PrivateChat(42), 42, "/start")
	tg.Push(models.Update{Message: start})
	if _, ok := tg.waitSent("Hi! I'm Recall", 30*time.Second); !ok {
		t.Fatalf("/start: no greeting:\n%s", bot.output())
	}
	say("hello there", "echo: hello there")

	answers := []string{"1", "7", "no"}
	inPrompt := func(when string) {
		t.Helper()
		for _, r := range model.chatRequests() {
			for _, m := range r.Messages {
				for _, a := range answers {
					if strings.TrimSpace(m.Content) == a {
						t.Errorf("%s: the answer %q went to the model as a %s message", when, a, m.Role)
					}
				}
			}
		}
	}
	inPrompt("before the restart")

	bot.kill()
	bot = env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)
	tg.Push(models.Update{Message: start}) // delivered again: the offset was never confirmed
	say("after the restart", "echo: after the restart")
	inPrompt("after the restart")
	if n := len(model.chatRequests()); n != 2 {
		t.Errorf("%d chat requests, want 2 (no answer to a question was answered as a message)", n)
	}
	greetings := 0
	for _, c := range tg.Calls("sendMessage") {
		if c.Err == nil && strings.Contains(c.Fields["text"], "Hi! I'm Recall") {
			greetings++
		}
	}
	if greetings != 1 {
		t.Errorf("/start answered %d times, want once (redelivered after the restart)", greetings)
	}
	bot.signal(syscall.SIGTERM)
	if code := bot.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, bot.output())
	}
	for _, m := range readDB(t, env.Data) {
		for _, a := range answers {
			if m.Role == "user" && strings.TrimSpace(m.Text) == a {
				t.Errorf("the answer %q is stored as a message: %+v", a, m)
			}
		}
	}
}
