package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
)

// blockingLLM is a fake LLM whose chat answers wait for the test: arrived
// receives each chat request's last user message; answer (when hang is
// false) waits until release is closed.
type blockingLLM struct {
	*llmtest.Server
	arrived chan string
	release chan struct{}
}

func newBlockingLLM(t *testing.T, hang bool) *blockingLLM {
	b := &blockingLLM{arrived: make(chan string, 16), release: make(chan struct{})}
	b.Server = llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if isSummaryRequest(r) {
			return llmtest.Response{Text: summaryText}
		}
		last := ""
		for _, m := range r.Messages {
			if m.Role == llm.RoleUser {
				last = m.Content
			}
		}
		b.arrived <- last
		if hang {
			return llmtest.Response{Hang: true}
		}
		select {
		case <-b.release:
		case <-time.After(time.Minute):
		}
		return llmtest.Response{Text: "echo: " + last, PromptTokens: 50, CompletionTokens: 5}
	})
	return b
}

func (b *blockingLLM) waitRequest(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-b.arrived:
		if got != want {
			t.Fatalf("the LLM was asked about %q, want %q", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the LLM was not asked about %q", want)
	}
}

// SIGTERM while the LLM is working: no new updates are taken, the turn in
// flight finishes — its reply is delivered and stored — and the bot exits 0.
func TestSIGTERMFinishesTurnInFlight(t *testing.T) {
	tg := newFakeTelegram(t)
	model := newBlockingLLM(t, false)
	env := telegramEnv(t, tg, model.URL, "RECALL_SHUTDOWN_TIMEOUT=30s")
	bot := env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)

	tg.sendText(42, "hello before the stop")
	model.waitRequest(t, "hello before the stop")
	bot.signal(syscall.SIGTERM)
	rec := bot.waitLog("stopping: no new updates", 30*time.Second)
	if n, _ := rec["in_flight"].(float64); n != 1 {
		t.Errorf("stopping with %v turns in flight, want 1: %v", rec["in_flight"], rec)
	}
	if c, _ := rec["cause"].(string); !strings.Contains(c, "terminated") {
		t.Errorf("the stop's cause is %q, want the signal", c)
	}
	tg.sendText(42, "after the stop") // must not be taken
	close(model.release)

	if _, ok := tg.waitSent("echo: hello before the stop", 30*time.Second); !ok {
		t.Fatalf("the reply was not delivered after SIGTERM:\n%s", bot.output())
	}
	if code := bot.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d after a graceful stop, want 0:\n%s", code, bot.output())
	}
	bot.waitLog("stopped; everything is written", time.Second)

	msgs := messagesOf(env.export(t), "telegram:42:")
	var user, reply bool
	for _, m := range msgs {
		switch {
		case m.Role == memory.RoleUser && m.Text == "hello before the stop":
			user = true
		case m.Role == memory.RoleAssistant && m.Text == "echo: hello before the stop":
			reply = true
		case m.Text == "after the stop":
			t.Errorf("a message sent after SIGTERM was taken: %+v", m)
		}
	}
	if !user || !reply {
		t.Errorf("stored after the stop: user message %v, reply %v; messages: %+v", user, reply, msgs)
	}
}

// A second SIGTERM during a long drain exits at once with code 130.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	tg := newFakeTelegram(t)
	model := newBlockingLLM(t, true) // never answers
	env := telegramEnv(t, tg, model.URL, "RECALL_SHUTDOWN_TIMEOUT=5m", "RECALL_LLM_TIMEOUT=5m")
	bot := env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)

	tg.sendText(42, "a question that takes forever")
	model.waitRequest(t, "a question that takes forever")
	bot.signal(syscall.SIGTERM)
	bot.waitLog("stopping: no new updates", 30*time.Second)
	bot.signal(syscall.SIGTERM)
	if code := bot.wait(10 * time.Second); code != exitAtOnce {
		t.Fatalf("exit code %d after a second SIGTERM, want %d:\n%s", code, exitAtOnce, bot.output())
	}
	if out := bot.output(); !strings.Contains(out, "second terminated signal: exiting at once") {
		t.Errorf("stderr does not explain the exit:\n%s", out)
	}
	// The message was accepted before the stop: it is stored, unanswered,
	// and will be answered at the next start.
	msgs := messagesOf(env.export(t), "telegram:42:")
	if len(msgs) != 1 || msgs[0].Text != "a question that takes forever" {
		t.Errorf("stored after the hard exit: %+v", msgs)
	}
}
