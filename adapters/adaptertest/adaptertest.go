// Package adaptertest is a conformance suite for chat adapters: the
// behaviour every chat platform adapter (Telegram, WhatsApp) shows on the
// full pipeline, whatever the platform. An adapter's tests implement
// Harness — a bot on the adapter's fake platform — and call Run:
//
//	func TestConformance(t *testing.T) { adaptertest.Run(t, myHarness{}) }
//
// The suite only delivers messages and looks at what was sent; it never
// sleeps. To show that something was not answered, it sends a later message
// in the same conversation and waits for that answer: turns of one
// conversation run in order, so an answer to the earlier message would have
// been sent first.
package adaptertest

import (
	"fmt"
	"strings"
	"testing"
)

// Message is one message the platform delivers to the adapter.
type Message struct {
	// ID names the platform message. It is opaque to the harness, which
	// maps it to a platform id of its own; delivering the same ID again is
	// the platform delivering the same message again.
	ID string
	// User sends it: 0 or 1, two users the bot allows.
	User int
	// Group: in the harness's group chat (with the bot and both users)
	// instead of the user's private chat with the bot.
	Group bool
	// Mention: in a group, the message mentions the bot, the way the
	// platform does it (the harness adds the mention to Text).
	Mention bool
	// Text is what the user wrote, without any mention.
	Text string
}

// Sent is one message the adapter sent to the platform.
type Sent struct {
	Chat string // the conversation's pipeline.Key.Chat
	Text string // the text as the platform received it (formatted)
}

// Bot is a bot running on the adapter under test. Its methods are called
// from the test's goroutine; they fail the test (t.Fatal) rather than
// return errors.
type Bot interface {
	// Deliver hands msg to the adapter as the platform would, and returns
	// once the adapter has taken it (not once it is answered).
	Deliver(msg Message)
	// Chat is the pipeline.Key.Chat of user's private chat with the bot or,
	// with group, of the group chat.
	Chat(user int, group bool) string
	// WaitSent waits until a message satisfying match has been sent and
	// returns it; after a generous timeout it fails the test, naming what.
	WaitSent(what string, match func(Sent) bool) Sent
	// Sent lists every message sent so far, oldest first.
	Sent() []Sent
}

// Harness starts bots for the suite.
type Harness interface {
	// Start runs a fresh bot for t: an empty store, the pipeline wired as
	// cmd/bot wires it (access allowing users 0 and 1 only, dedupe,
	// commands, the chat responder, the dispatcher), an LLM that answers
	// "echo: " followed by the user's last message, and the adapter on a
	// fake platform, with the default group policy (answer when
	// mentioned). Everything is stopped by t.Cleanup.
	Start(t *testing.T) Bot
}

// echo is the reply of the harness's LLM to text.
func echo(text string) string { return "echo: " + text }

// Run runs the suite against h.
func Run(t *testing.T, h Harness) {
	t.Run("PrivateText", func(t *testing.T) { privateText(t, h) })
	t.Run("TwoUsersTwoConversations", func(t *testing.T) { twoUsers(t, h) })
	t.Run("OrderKept", func(t *testing.T) { orderKept(t, h) })
	t.Run("GroupNeedsMention", func(t *testing.T) { groupMention(t, h) })
	t.Run("DuplicateAnsweredOnce", func(t *testing.T) { duplicate(t, h) })
	t.Run("Command", func(t *testing.T) { command(t, h) })
}

// answer waits for the echo of text in chat.
func answer(b Bot, chat, text string) Sent {
	return b.WaitSent(fmt.Sprintf("the answer to %q in %s", text, chat), func(s Sent) bool {
		return s.Chat == chat && strings.Contains(s.Text, echo(text))
	})
}

// count is how many messages to chat contain sub.
func count(b Bot, chat, sub string) int {
	n := 0
	for _, s := range b.Sent() {
		if s.Chat == chat && strings.Contains(s.Text, sub) {
			n++
		}
	}
	return n
}

// A private message is answered in the private chat.
func privateText(t *testing.T, h Harness) {
	b := h.Start(t)
	b.Deliver(Message{ID: "p1", User: 0, Text: "hello there"})
	answer(b, b.Chat(0, false), "hello there")
}

// Two users have two conversations; neither sees the other's answers.
func twoUsers(t *testing.T, h Harness) {
	b := h.Start(t)
	c0, c1 := b.Chat(0, false), b.Chat(1, false)
	if c0 == c1 {
		t.Fatalf("users 0 and 1 share the chat %q", c0)
	}
	b.Deliver(Message{ID: "u1", User: 0, Text: "first user here"})
	b.Deliver(Message{ID: "u2", User: 1, Text: "second user here"})
	answer(b, c0, "first user here")
	answer(b, c1, "second user here")
	if n := count(b, c0, "second user"); n != 0 {
		t.Errorf("user 0 got user 1's answer")
	}
	if n := count(b, c1, "first user"); n != 0 {
		t.Errorf("user 1 got user 0's answer")
	}
}

// Messages of one conversation are answered in the order they arrived.
func orderKept(t *testing.T, h Harness) {
	b := h.Start(t)
	chat := b.Chat(0, false)
	texts := []string{"one apple", "two pears", "three plums"}
	for i, text := range texts {
		b.Deliver(Message{ID: fmt.Sprintf("o%d", i), User: 0, Text: text})
	}
	answer(b, chat, texts[len(texts)-1])
	next := 0
	for _, s := range b.Sent() {
		if s.Chat == chat && next < len(texts) && strings.Contains(s.Text, echo(texts[next])) {
			next++
		}
	}
	if next != len(texts) {
		t.Errorf("answers out of order: %q", b.Sent())
	}
}

// In a group, chatter without a mention is not answered; a mention is.
func groupMention(t *testing.T, h Harness) {
	b := h.Start(t)
	group := b.Chat(0, true)
	b.Deliver(Message{ID: "g1", User: 0, Group: true, Text: "just chatting among us"})
	b.Deliver(Message{ID: "g2", User: 1, Group: true, Mention: true, Text: "what is two plus two"})
	answer(b, group, "what is two plus two")
	if n := count(b, group, "just chatting"); n != 0 {
		t.Errorf("answered a group message without a mention")
	}
}

// A message the platform delivers twice is answered once.
func duplicate(t *testing.T, h Harness) {
	b := h.Start(t)
	chat := b.Chat(0, false)
	b.Deliver(Message{ID: "d1", User: 0, Text: "only once please"})
	answer(b, chat, "only once please")
	b.Deliver(Message{ID: "d1", User: 0, Text: "only once please"})
	b.Deliver(Message{ID: "d2", User: 0, Text: "and now the next"})
	answer(b, chat, "and now the next")
	if n := count(b, chat, echo("only once please")); n != 1 {
		t.Errorf("answered %d times, want once", n)
	}
}

// Commands are answered by the bot, not the LLM.
func command(t *testing.T, h Harness) {
	b := h.Start(t)
	chat := b.Chat(0, false)
	b.Deliver(Message{ID: "c1", User: 0, Text: "/help"})
	got := b.WaitSent("the answer to /help", func(s Sent) bool { return s.Chat == chat && strings.Contains(s.Text, "summary") })
	if strings.Contains(got.Text, "echo:") {
		t.Errorf("/help went to the LLM: %q", got.Text)
	}
}
