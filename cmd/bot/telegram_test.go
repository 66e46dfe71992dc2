package main

// The fake Telegram Bot API of the end-to-end tests of the real binary in
// Telegram mode is telegramtest.Server, with helpers for private chats.

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/adapters/telegram/telegramtest"
	"github.com/recallbot/recall/llm/llmtest"
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

// The real binary is killed (SIGKILL) while a reply is streaming in a
// group: at the restart the message showing its first words becomes a note
// that the answer was cut off, the question is answered again in a new
// message, and it is answered once in the store.
func TestKillMidStream(t *testing.T) {
	tg := newFakeTelegram(t)
	step := make(chan struct{})
	var chats atomic.Int32
	model := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if isSummaryRequest(r) {
			return llmtest.Response{Text: summaryText}
		}
		if chats.Add(1) == 1 {
			return llmtest.Response{Pieces: []string{"The answer", " is"}, Step: step} // the second piece never comes
		}
		return llmtest.Response{Text: "The answer is 42."}
	})
	env := telegramEnv(t, tg, model.URL, "RECALL_TELEGRAM_STREAM=true")
	bot := env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)

	group := telegramtest.GroupChat(-100777, false)
	m := tg.TextMessage(group, 42, "@"+telegramtest.BotName+" what is it?")
	m.Entities = []models.MessageEntity{telegramtest.Mention()}
	tg.Push(models.Update{Message: m})
	step <- struct{}{}
	var first telegramtest.Call
	if _, ok := tg.UntilWithin(30*time.Second, func(calls []telegramtest.Call) bool {
		for _, c := range telegramtest.FilterCalls(calls, "sendMessage") {
			if c.Err == nil && c.ChatID() == group.ID && c.Fields["text"] == "The answer" {
				first = c
				return true
			}
		}
		return false
	}); !ok {
		t.Fatalf("the stream showed nothing:\n%s", bot.output())
	}
	// Killed once the journal names the message (it is written right after
	// Telegram answers the sendMessage).
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(filepath.Join(env.Data, "outbox.jsonl"))
		if strings.Contains(string(data), `"op":"shown"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no shown record in the outbox:\n%s", data)
		}
		time.Sleep(10 * time.Millisecond)
	}
	bot.kill()
	if got := tg.ShownText(group.ID, first.MsgID); got != "The answer" {
		t.Fatalf("before the restart the message shows %q", got)
	}

	bot = env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)
	if _, ok := tg.UntilWithin(30*time.Second, func([]telegramtest.Call) bool {
		return strings.Contains(tg.ShownText(group.ID, first.MsgID), "cut off when I was restarted")
	}); !ok {
		t.Fatalf("the cut message still shows %q:\n%s", tg.ShownText(group.ID, first.MsgID), bot.output())
	}
	if _, ok := tg.UntilWithin(30*time.Second, func(calls []telegramtest.Call) bool {
		for _, c := range telegramtest.FilterCalls(calls, "sendMessage") {
			if c.Err == nil && c.ChatID() == group.ID && c.MsgID != first.MsgID && c.ReplyTo() == m.ID &&
				tg.ShownText(group.ID, c.MsgID) == "The answer is 42." {
				return true
			}
		}
		return false
	}); !ok {
		t.Fatalf("no new answer:\n%s", bot.output())
	}
	bot.signal(syscall.SIGTERM)
	if code := bot.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, bot.output())
	}
	answers := 0
	for _, s := range readDB(t, env.Data) {
		if s.Role == "assistant" && s.ReplyTo == strconv.Itoa(m.ID) {
			answers++
			if s.Text != "The answer is 42." {
				t.Errorf("stored answer %q", s.Text)
			}
		}
	}
	if answers != 1 {
		t.Errorf("%d answers stored, want 1", answers)
	}
}
