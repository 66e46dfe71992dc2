package telegram

import (
	"strconv"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/adapters/adaptertest"
)

// TestConformance runs the suite every chat adapter passes.
func TestConformance(t *testing.T) { adaptertest.Run(t, tgHarness{}) }

// TestConformanceStreaming runs it with telegram.stream on: a message counts
// with the text it shows in the end (after its edits).
func TestConformanceStreaming(t *testing.T) { adaptertest.Run(t, tgHarness{stream: true}) }

// tgHarness runs the full stack on the fake Bot API, polling: user 0 is
// telegram:111, user 1 telegram:222, the group is a plain supergroup.
type tgHarness struct{ stream bool }

var tgUsers = []int64{111, 222}

const tgGroup = -100800

func (h tgHarness) Start(t *testing.T) adaptertest.Bot {
	api := newFakeAPI(t)
	newStack(t, api, stackOptions{stream: h.stream, streamEvery: 10 * time.Millisecond})
	return &tgBot{t: t, api: api, ids: map[string]int{}, stream: h.stream}
}

type tgBot struct {
	t      *testing.T
	api    *fakeAPI
	ids    map[string]int // adaptertest message id → Telegram message id
	stream bool           // messages count with their final text
}

func (b *tgBot) chat(user int, group bool) models.Chat {
	if group {
		return groupChat(tgGroup, false)
	}
	return privateChat(tgUsers[user])
}

// Deliver queues the message as an update and waits until the adapter has
// confirmed it (asked for an offset past it). Delivering an ID again queues
// a new update carrying the same message, as Telegram does when it
// redelivers.
func (b *tgBot) Deliver(m adaptertest.Message) {
	b.t.Helper()
	chat := b.chat(m.User, m.Group)
	text := m.Text
	if m.Group && m.Mention {
		text = "@" + fakeBotName + " " + text
	}
	msg := b.api.TextMessage(chat, tgUsers[m.User], text)
	if id, ok := b.ids[m.ID]; ok {
		msg.ID = id
	} else {
		b.ids[m.ID] = msg.ID
	}
	if m.Group && m.Mention {
		msg.Entities = []models.MessageEntity{mention()}
	}
	upd := b.api.Push(models.Update{Message: msg})
	b.api.Wait("the adapter to take message "+m.ID, func([]fakeCall) bool { return b.api.ConfirmedID() >= upd })
}

func (b *tgBot) Chat(user int, group bool) string {
	return strconv.FormatInt(b.chat(user, group).ID, 10)
}

func (b *tgBot) WaitSent(what string, match func(adaptertest.Sent) bool) adaptertest.Sent {
	b.t.Helper()
	var got adaptertest.Sent
	b.api.Wait(what, func(calls []fakeCall) bool {
		for _, s := range b.sentOf(calls) {
			if match(s) {
				got = s
				return true
			}
		}
		return false
	})
	return got
}

func (b *tgBot) Sent() []adaptertest.Sent { return b.sentOf(b.api.Calls()) }

// sentOf is the messages delivered by calls: successful sendMessage
// calls (with the text they show now when streaming), and sendDocument
// calls by their caption.
func (b *tgBot) sentOf(calls []fakeCall) []adaptertest.Sent {
	var out []adaptertest.Sent
	for _, c := range calls {
		if c.Err != nil {
			continue
		}
		chat := strconv.FormatInt(c.ChatID(), 10)
		switch c.Method {
		case "sendMessage":
			text := c.Fields["text"]
			if b.stream {
				text = b.api.ShownText(c.ChatID(), c.MsgID)
			}
			out = append(out, adaptertest.Sent{Chat: chat, Text: text})
		case "sendDocument":
			out = append(out, adaptertest.Sent{Chat: chat, Text: c.Fields["caption"]})
		}
	}
	return out
}
