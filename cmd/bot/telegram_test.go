package main

// The fake Telegram Bot API of the end-to-end tests of the real binary in
// Telegram mode is telegramtest.Server, with helpers for private chats.

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/recallbot/recall/adapters/telegram/telegramtest"
)

const fakeTGToken = telegramtest.Token

type fakeTelegram struct {
	*telegramtest.Server
}

func newFakeTelegram(t *testing.T) fakeTelegram {
	return fakeTelegram{telegramtest.NewServer(t)}
}

// sendText queues a private text message from user.
func (f fakeTelegram) sendText(user int64, text string) {
	f.SendText(telegramtest.PrivateChat(user), user, text)
}

// waitSent waits until a message containing text was delivered.
func (f fakeTelegram) waitSent(text string, timeout time.Duration) (telegramtest.Call, bool) {
	var found telegramtest.Call
	_, ok := f.UntilWithin(timeout, func(calls []telegramtest.Call) bool {
		for _, c := range telegramtest.FilterCalls(calls, "sendMessage") {
			if c.Err == nil && strings.Contains(c.Fields["text"], text) {
				found = c
				return true
			}
		}
		return false
	})
	return found, ok
}

// telegram.stream reaches the adapter and the responder: the model is asked
// to stream, and the reply arrives whole in the end.
func TestTelegramStreamSetting(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(strconv.FormatBool(stream), func(t *testing.T) {
			tg := newFakeTelegram(t)
			model := newFakeLLM(t)
			env := telegramEnv(t, tg, model.URL, "RECALL_TELEGRAM_STREAM="+strconv.FormatBool(stream))
			bot := env.startDaemon(t)
			bot.waitLog("running", 30*time.Second)
			tg.sendText(42, "hello stream")
			if _, ok := tg.waitSent("echo: hello stream", 30*time.Second); !ok {
				t.Fatalf("no reply:\n%s", bot.output())
			}
			reqs := model.chatRequests()
			if len(reqs) != 1 || reqs[0].Stream != stream {
				t.Errorf("chat requests %+v, want one with stream=%v", reqs, stream)
			}
			if strings.Contains(bot.output(), "not supported") {
				t.Errorf("a warning about streaming was logged:\n%s", bot.output())
			}
			bot.signal(syscall.SIGTERM)
			if code := bot.wait(30 * time.Second); code != 0 {
				t.Fatalf("exit code %d:\n%s", code, bot.output())
			}
		})
	}
}
