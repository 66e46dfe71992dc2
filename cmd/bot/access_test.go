package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/recallbot/recall/adapters/telegram/telegramtest"
)

// The operator lets themselves in on Telegram from a shell, beside the
// running bot: the bot warns that nobody is allowed, logs the stranger's
// pairing code, `bot allow CODE` lets them in at their next message, and
// `bot deny ID` shuts them out again, all without a restart.
func TestAllowAndDenyBesideTheRunningBot(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the bot binary beside allow and deny (5 s on a busy 2-core machine); go test without -short runs it")
	}
	tg := newFakeTelegram(t)
	model := newFakeLLM(t)
	env := telegramEnv(t, tg, model.URL, "RECALL_ACCESS_ALLOWED_USERS=")
	d := env.startDaemon(t)
	d.waitLog("nobody may talk to the bot yet", 30*time.Second)
	d.waitLog("running", 30*time.Second)

	tg.sendText(77, "hi")
	if _, ok := tg.waitSent("Sorry, this bot is private", 30*time.Second); !ok {
		t.Fatalf("the stranger was not refused:\n%s", d.output())
	}
	rec := d.waitLog("new pairing request", 30*time.Second)
	code, _ := rec["code"].(string)
	if code == "" || !strings.Contains(rec["msg"].(string), "bot allow "+code) {
		t.Fatalf("the log does not say how to let them in with the code: %v", rec)
	}

	r := env.mustRun(t, "", "allow", code)
	if !strings.Contains(r.Stdout, "telegram:77") || !strings.Contains(r.Stdout, "can talk to the bot now") {
		t.Errorf("bot allow said:\n%s", r)
	}
	tg.sendText(77, "hello again")
	if _, ok := tg.waitSent("echo: hello again", 30*time.Second); !ok {
		t.Fatalf("allowed beside the bot, but not answered:\n%s", d.output())
	}

	r = env.mustRun(t, "", "deny", "telegram:77")
	if !strings.Contains(r.Stdout, "can no longer talk to the bot") {
		t.Errorf("bot deny said:\n%s", r)
	}
	// Applied within the refresh interval: the stranger is refused again
	// at one of their next messages.
	refused := false
	for i, deadline := 0, time.Now().Add(30*time.Second); !refused && time.Now().Before(deadline); i++ {
		echo := fmt.Sprintf("echo: still here %d", i)
		tg.sendText(77, fmt.Sprintf("still here %d", i))
		_, ok := tg.UntilWithin(30*time.Second, func(calls []telegramtest.Call) bool {
			refusals := 0
			for _, c := range telegramtest.FilterCalls(calls, "sendMessage") {
				switch text := c.Fields["text"]; {
				case strings.Contains(text, "Sorry, this bot is private"):
					refusals++
				case strings.Contains(text, echo):
					return true
				}
			}
			refused = refusals >= 2
			return refused
		})
		if !ok {
			t.Fatalf("message %d was neither answered nor refused:\n%s", i, d.output())
		}
	}
	if !refused {
		t.Fatalf("denied beside the bot, still answered:\n%s", d.output())
	}

	if r := env.run(t, "", "allow", "ZZZZZZ"); r.Code != 2 || !strings.Contains(r.Stderr, "no one is waiting with the code") {
		t.Errorf("an unknown code:\n%s", r)
	}
	d.signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, d.output())
	}
}
