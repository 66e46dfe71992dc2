package telegram

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/llm/llmtest"
)

// replyToBot is a message of member from in chat replying to the bot's
// message sent.
func replyToBot(api *fakeAPI, chat models.Chat, from int64, sent fakeCall, text string) *models.Message {
	m := api.TextMessage(chat, from, text)
	me := api.Me()
	m.ReplyToMessage = &models.Message{ID: sent.MsgID, Chat: chat, Date: 1, From: &me, Text: sent.Fields["text"]}
	return m
}

// A pending /purge in a group (privacy mode off: the bot sees every
// message) takes answers only from the member who asked, and only when they
// are addressed to the bot: another member's chatter, another member's
// "yes" (typed as a reply, or pressed) and the asker's own unaddressed "yes"
// pass by as if no question were pending. The asker is one of the bot's
// admins: in a group only they may /purge (the memory is everyone's there).
func TestGroupQuestionAnsweredOnlyByItsAsker(t *testing.T) {
	api := newFakeAPI(t)
	st := newStack(t, api, stackOptions{admins: []string{"telegram:111"}})
	group := groupChat(-100700, false)

	remember := api.TextMessage(group, 111, "@"+fakeBotName+" the plan is secret")
	remember.Entities = []models.MessageEntity{mention()}
	api.Push(models.Update{Message: remember})
	api.WaitSent(group.ID, 1)

	api.SendText(group, 111, "/purge@"+fakeBotName+" chat")
	q := api.WaitSent(group.ID, 2)[1]
	if !strings.Contains(q.Fields["text"], "Delete") {
		t.Fatalf("question = %q", q.Fields["text"])
	}

	lol := api.SendText(group, 222, "lol")
	yes222 := replyToBot(api, group, 222, q, "yes")
	api.Push(models.Update{Message: yes222})
	// 222's "yes" is a reply to the bot: an ordinary message, answered.
	r := api.WaitSent(group.ID, 3)[2]
	if r.ReplyTo() != yes222.ID || r.Fields["text"] != "echo: yes" {
		t.Fatalf("another member's reply got %v", r.Fields)
	}
	if n := repliesTo(api.Calls(), group.ID, lol); n != 0 {
		t.Errorf("another member's chatter got %d replies", n)
	}
	// 222 presses "Yes, delete".
	me := api.Me()
	api.Push(models.Update{CallbackQuery: &models.CallbackQuery{
		ID: "cbq-222", From: models.User{ID: 222, FirstName: "Bob"}, Data: "yes",
		Message: models.MaybeInaccessibleMessage{Type: models.MaybeInaccessibleMessageTypeMessage, Message: &models.Message{
			ID: q.MsgID, Date: 1, Chat: group, From: &me, Text: q.Fields["text"],
			ReplyMarkup:    &models.InlineKeyboardMarkup{InlineKeyboard: q.Keyboard()},
			ReplyToMessage: &models.Message{ID: q.ReplyTo(), Chat: group, Date: 1, From: &models.User{ID: 111, FirstName: "Ada"}},
		}},
	}})
	r = api.WaitSent(group.ID, 4)[3]
	if !strings.Contains(r.Fields["text"], "Only the member who sent the command") {
		t.Fatalf("another member's press got %q", r.Fields["text"])
	}
	// 222 can neither cancel the question nor end it with a command.
	api.SendText(group, 222, "/cancel@"+fakeBotName)
	if r := api.WaitSent(group.ID, 5)[4]; !strings.Contains(r.Fields["text"], "Only the member who sent the command can cancel") {
		t.Fatalf("another member's /cancel got %q", r.Fields["text"])
	}
	api.SendText(group, 222, "/help@"+fakeBotName)
	api.WaitSent(group.ID, 6)
	// The asker's "yes" not addressed to the bot is chatter.
	api.SendText(group, 111, "yes")
	// The asker's reply to the question confirms it.
	yes111 := replyToBot(api, group, 111, q, "yes")
	api.Push(models.Update{Message: yes111})
	r = api.WaitSent(group.ID, 7)[6]
	if r.ReplyTo() != yes111.ID || !strings.HasPrefix(r.Fields["text"], "Deleted") {
		t.Fatalf("the asker's answer got %q", r.Fields["text"])
	}
	if len(api.Sent(group.ID)) != 7 {
		t.Errorf("sent %s", dumpCalls(api.Sent(group.ID)))
	}
	if stored, _ := st.lookup(key(group.ID, ""), remember.ID); stored {
		t.Error("the purge did not run")
	}
	// Another member's press left the asker's buttons alone.
	if c := api.Calls("editMessageReplyMarkup"); len(c) != 0 {
		t.Errorf("another member's press removed the buttons: %s", dumpCalls(c))
	}
}

// Every button press is answered (answerCallbackQuery), also one the bot
// does not handle, so no client is left with a spinning button.
func TestUnhandledButtonPressIsAnswered(t *testing.T) {
	api := newFakeAPI(t)
	newStack(t, api, stackOptions{})
	// A press on a button of an inline message (no chat): nothing to do.
	api.Push(models.Update{CallbackQuery: &models.CallbackQuery{ID: "cbq-inline", From: models.User{ID: 111}, InlineMessageID: "abc", Data: "x"}})
	api.Wait("the press answered", func(calls []fakeCall) bool {
		for _, c := range filterCalls(calls, "answerCallbackQuery") {
			if c.Fields["callback_query_id"] == "cbq-inline" {
				return true
			}
		}
		return false
	})
}

// A polled update the library cannot decode (a forward_origin type newer
// than it) is still answered from its text, chat and sender, in a group
// topic as a reply in the topic; one without a usable message is skipped
// and confirmed.
func TestUndecodableUpdateIsAnswered(t *testing.T) {
	api := newFakeAPI(t)
	newStack(t, api, stackOptions{})
	id := api.MsgID(111)
	api.PushRaw(fmt.Sprintf(`{"message":{"message_id":%d,"date":%d,"chat":{"id":111,"type":"private","first_name":"Ada"},`+
		`"from":{"id":111,"is_bot":false,"first_name":"Ada"},"forward_origin":{"type":"hologram","date":1},"text":"forwarded words"}}`, id, time.Now().Unix()))
	junk := api.PushRaw(`{"message":{"message_id":"not a number"}}`)
	// A press on a message of a kind the library does not know is
	// answered all the same (else the button keeps spinning).
	api.PushRaw(`{"callback_query":{"id":"cbq-future","from":{"id":222,"is_bot":false,"first_name":"Bob"},"data":"x",` +
		`"message":{"message_id":1,"date":0,"chat":{"id":222,"type":"private"},"forward_origin":{"type":"hologram"}}}}`)
	got := api.WaitSent(111, 1)
	if got[0].Fields["text"] != "echo: forwarded words" || got[0].ReplyTo() != id {
		t.Fatalf("reply = %v", got[0].Fields)
	}
	api.Wait("the junk update confirmed", func([]fakeCall) bool { return api.ConfirmedID() >= junk })
	api.Wait("the unknown press answered", func(calls []fakeCall) bool {
		for _, c := range filterCalls(calls, "answerCallbackQuery") {
			if c.Fields["callback_query_id"] == "cbq-future" {
				return true
			}
		}
		return false
	})

	forum := groupChat(-100800, true)
	tid := api.MsgID(forum.ID)
	api.PushRaw(fmt.Sprintf(`{"message":{"message_id":%d,"message_thread_id":9,"is_topic_message":true,"date":%d,`+
		`"chat":{"id":%d,"type":"supergroup","title":"G","is_forum":true},"from":{"id":111,"is_bot":false,"first_name":"Ada"},`+
		`"forward_origin":{"type":"hologram","date":1},"text":"@%s hi there","entities":[{"type":"mention","offset":0,"length":%d}],`+
		`"reply_to_message":{"message_id":9,"date":1,"chat":{"id":%d,"type":"supergroup"},"forum_topic_created":{"name":"T","icon_color":1}}}}`,
		tid, time.Now().Unix(), forum.ID, fakeBotName, len(fakeBotName)+1, forum.ID))
	r := api.WaitSent(forum.ID, 1)[0]
	if r.Fields["text"] != "echo: hi there" || r.Fields["message_thread_id"] != "9" || r.ReplyTo() != tid {
		t.Fatalf("topic reply = %v", r.Fields)
	}
}

// A private chat with topics (Bot API threaded mode): each topic is its own
// conversation and the reply goes into the topic it answers.
func TestPrivateTopicsKeptApart(t *testing.T) {
	api := newFakeAPI(t)
	st := newStack(t, api, stackOptions{})
	user := privateChat(111)
	inTopic := func(thread int, text string) *models.Message {
		m := api.TextMessage(user, 111, text)
		m.IsTopicMessage, m.MessageThreadID = true, thread
		api.Push(models.Update{Message: m})
		return m
	}
	a := inTopic(5, "the topic secret is red")
	r := api.WaitSent(111, 1)[0]
	if r.Fields["message_thread_id"] != "5" || r.ReplyTo() != a.ID {
		t.Fatalf("reply in topic 5 = %v", r.Fields)
	}
	b := inTopic(6, "what is the secret?")
	r = api.WaitSent(111, 2)[1]
	if r.Fields["message_thread_id"] != "6" || r.ReplyTo() != b.ID {
		t.Fatalf("reply in topic 6 = %v", r.Fields)
	}
	if promptHas(st.lastPrompt(), "red") {
		t.Errorf("topic 6's prompt holds topic 5's history: %v", st.lastPrompt())
	}
	if stored, _ := st.lookup(key(111, "5"), a.ID); !stored {
		t.Error("the topic message is not stored under its topic")
	}
}

// In a group an unknown command is answered only when written
// /cmd@ThisBot: a bare /weather is most likely for another bot. Known
// commands work bare; in a private chat the unknown one is answered.
func TestUnknownCommandInGroup(t *testing.T) {
	api := newFakeAPI(t)
	newStack(t, api, stackOptions{})
	group := groupChat(-100900, false)

	weather := api.SendText(group, 111, "/weather Paris")
	help := api.SendText(group, 111, "/help")
	r := api.WaitSent(group.ID, 1)[0]
	if r.ReplyTo() != help {
		t.Fatalf("first group reply = %v", r.Fields)
	}
	ours := api.SendText(group, 111, "/weather@"+fakeBotName)
	r = api.WaitSent(group.ID, 2)[1]
	if r.ReplyTo() != ours || !strings.Contains(r.Fields["text"], "I don't know the command /weather") {
		t.Fatalf("reply to /weather@%s = %v", fakeBotName, r.Fields)
	}
	if n := repliesTo(api.Calls(), group.ID, weather); n != 0 {
		t.Errorf("a bare unknown command in a group got %d replies", n)
	}
	api.SendText(privateChat(111), 111, "/weather")
	if r := api.WaitSent(111, 1)[0]; !strings.Contains(r.Fields["text"], "I don't know the command /weather") {
		t.Errorf("private /weather = %q", r.Fields["text"])
	}
}

// With group privacy mode on (Telegram's default) a plain @mention never
// reaches the bot, and the start warns about it; a reply to the bot and
// /cmd@bot still work. With privacy off there is no warning and mentions
// are answered.
func TestPrivacyMode(t *testing.T) {
	api := newFakeAPI(t)
	api.SetPrivacy(true)
	st := newStack(t, api, stackOptions{})
	group := groupChat(-101000, false)

	ment := api.TextMessage(group, 111, "@"+fakeBotName+" hello?")
	ment.Entities = []models.MessageEntity{mention()}
	if api.Push(models.Update{Message: ment}) != 0 {
		t.Fatal("the fake delivered a mention with privacy on")
	}
	help := api.SendText(group, 111, "/help@"+fakeBotName)
	r := api.WaitSent(group.ID, 1)[0]
	if r.ReplyTo() != help {
		t.Fatalf("reply to /help@bot = %v", r.Fields)
	}
	re := replyToBot(api, group, 111, r, "thanks")
	api.Push(models.Update{Message: re})
	if r := api.WaitSent(group.ID, 2)[1]; r.ReplyTo() != re.ID || r.Fields["text"] != "echo: thanks" {
		t.Fatalf("reply to a reply = %v", r.Fields)
	}
	if logs := st.logs.String(); !strings.Contains(logs, "group privacy mode is on") || !strings.Contains(logs, "/setprivacy") {
		t.Errorf("no privacy warning at start:\n%s", logs)
	}

	st.stop()
	api.SetPrivacy(false)
	before := len(st.logs.String())
	st.start()
	ment = api.TextMessage(group, 111, "@"+fakeBotName+" hello?")
	ment.Entities = []models.MessageEntity{mention()}
	api.Push(models.Update{Message: ment})
	if r := api.WaitSent(group.ID, 3)[2]; r.ReplyTo() != ment.ID {
		t.Fatalf("mention with privacy off = %v", r.Fields)
	}
	if strings.Contains(st.logs.String()[before:], "privacy mode is on") {
		t.Error("privacy warning with privacy off")
	}
}

// photo is a photo from user in chat, in album (when not "").
func photo(api *fakeAPI, chat models.Chat, user int64, album, caption string) *models.Message {
	return &models.Message{ID: api.MsgID(chat.ID), Date: int(time.Now().Unix()), Chat: chat, MediaGroupID: album,
		From: &models.User{ID: user, FirstName: "U"}, Photo: []models.PhotoSize{{FileID: "p"}}, Caption: caption}
}

// notices counts the text-only notices delivered to chat.
func notices(api *fakeAPI, chat int64) int {
	n := 0
	for _, c := range api.Sent(chat) {
		if c.Fields["text"] == TextOnlyReply {
			n++
		}
	}
	return n
}

// An album whose one item has a caption is answered once, through that
// item; an album without caption is answered once too (through its first
// item), not once per photo; a sticker gets the text-only notice.
func TestAlbumsAndMediaBurstsGetOneNotice(t *testing.T) {
	api := newFakeAPI(t)
	newStack(t, api, stackOptions{})
	ada, bob := privateChat(111), privateChat(222)

	api.Push(models.Update{Message: photo(api, ada, 111, "alb-1", "")})
	captioned := photo(api, ada, 111, "alb-1", "what are these?")
	api.Push(models.Update{Message: captioned})
	api.Push(models.Update{Message: photo(api, ada, 111, "alb-1", "")})
	if r := api.WaitSent(111, 1)[0]; r.Fields["text"] != "echo: 📷 [the user sent a photo you cannot see]\nwhat are these?" || r.ReplyTo() != captioned.ID {
		t.Fatalf("answer to the album = %v", r.Fields)
	}

	// Bob's album without caption: answered once, through its first item
	// (the fake hosts no file: the photo cannot be downloaded, and Bob is
	// told so once).
	first := photo(api, bob, 222, "alb-2", "")
	api.Push(models.Update{Message: first})
	api.Push(models.Update{Message: photo(api, bob, 222, "alb-2", "")})
	api.Push(models.Update{Message: photo(api, bob, 222, "alb-2", "")})
	if r := api.WaitSent(222, 1)[0]; r.ReplyTo() != first.ID || !strings.Contains(r.Fields["text"], "photo") {
		t.Fatalf("answer to an album without caption = %v", r.Fields)
	}
	// A sticker from Bob, then a question: one notice for the sticker.
	sticker := &models.Message{ID: api.MsgID(222), Date: int(time.Now().Unix()), Chat: bob,
		From: &models.User{ID: 222, FirstName: "Bob"}, Sticker: &models.Sticker{FileID: "stk"}}
	api.Push(models.Update{Message: sticker})
	api.SendText(bob, 222, "hello?")
	// The notice goes out on its own, not in the turn queue: it may come
	// after the answer to the question.
	api.Wait("the answer to Bob's question and the sticker's notice", func(calls []fakeCall) bool {
		answered, noticed := false, false
		for _, c := range filterCalls(calls, "sendMessage") {
			answered = answered || c.Fields["text"] == "echo: hello?"
			noticed = noticed || c.Fields["text"] == TextOnlyReply
		}
		return answered && noticed
	})
	if n := len(api.Sent(111)); n != 1 {
		t.Errorf("Ada's captioned album got %d answers, want 1", n)
	}
	if n := notices(api, 222); n != 1 {
		t.Errorf("Bob's sticker got %d notices, want 1", n)
	}
	if n := len(api.Sent(222)); n != 3 {
		t.Errorf("Bob got %d messages, want 3 (the album's answer, the notice, the answer to hello)", n)
	}
}

// When a group becomes a supergroup (a new chat id), the reply in flight
// reaches the new chat, and the group's memory moves with it: history and
// notes are under the new id, nothing is left under the old one.
func TestGroupUpgradedToSupergroup(t *testing.T) {
	api := newFakeAPI(t)
	release := make(chan struct{})
	echo := llmtest.Echo("echo: ")
	st := newStack(t, api, stackOptions{llm: func(r llmtest.Request) llmtest.Response {
		if last := r.Messages[len(r.Messages)-1]; strings.Contains(last.Content, "slow") {
			<-release
		}
		return echo(r)
	}})
	old := models.Chat{ID: -500, Type: models.ChatTypeGroup, Title: "Group"}
	const newID = -1001234500
	say := func(chat models.Chat, text string) *models.Message {
		m := api.TextMessage(chat, 111, "@"+fakeBotName+" "+text)
		m.Entities = []models.MessageEntity{mention()}
		api.Push(models.Update{Message: m})
		return m
	}
	say(old, "the plan is to meet at noon")
	api.WaitSent(old.ID, 1)
	api.SendText(old, 111, "/remember@"+fakeBotName+" place the old mill")
	api.WaitSent(old.ID, 2)

	say(old, "slow question")
	api.Wait("the slow question asked", func([]fakeCall) bool {
		return promptHas(st.lastPrompt(), "slow question")
	})
	api.Migrate(old.ID, newID)
	api.Wait("the memory moved", func([]fakeCall) bool {
		stored, _ := st.lookup(key(newID, ""), 1)
		return stored
	})
	close(release)
	if r := api.WaitSent(newID, 1)[0]; r.Fields["text"] != "echo: slow question" {
		t.Fatalf("the reply in flight = %v", r.Fields)
	}

	sup := models.Chat{ID: newID, Type: models.ChatTypeSupergroup, Title: "Group"}
	say(sup, "when do we meet?")
	api.WaitSent(newID, 2)
	prompt := st.lastPrompt()
	if !promptHas(prompt, "the plan is to meet at noon") || !promptHas(prompt, "the old mill") {
		t.Errorf("the supergroup's prompt lacks the group's history or notes: %v", prompt)
	}
	if stored, _ := st.lookup(key(old.ID, ""), 1); stored {
		t.Error("the group's messages are still under the old id")
	}
	mems, err := st.store.Memories(t.Context(), key(newID, "").Owner())
	if err != nil || len(mems) != 1 {
		t.Errorf("notes under the new id = %v, %v", mems, err)
	}
}
