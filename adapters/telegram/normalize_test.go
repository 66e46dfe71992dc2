package telegram

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/pipeline"
)

var testMe = Me{ID: fakeBotID, Username: fakeBotName, Name: "Recall"}

func TestToInbound(t *testing.T) {
	ada := &models.User{ID: 111, FirstName: "Ada", LastName: "Lovelace"}
	botUser := &models.User{ID: fakeBotID, IsBot: true, FirstName: "Recall", Username: fakeBotName}
	private := models.Chat{ID: 111, Type: models.ChatTypePrivate}
	group := models.Chat{ID: -100200, Type: models.ChatTypeSupergroup, Title: "Friends"}
	basic := models.Chat{ID: -300, Type: models.ChatTypeGroup, Title: "Old group"}
	forum := models.Chat{ID: -100300, Type: models.ChatTypeSupergroup, Title: "Forum", IsForum: true}
	date := 1_700_000_000
	msg := func(chat models.Chat, text string) *models.Message {
		return &models.Message{ID: 42, Date: date, Chat: chat, From: ada, Text: text}
	}
	with := func(m *models.Message, f func(m *models.Message)) *models.Message { f(m); return m }
	ment := func(off, n int) []models.MessageEntity {
		return []models.MessageEntity{{Type: models.MessageEntityTypeMention, Offset: off, Length: n}}
	}
	base := func(chat models.Chat, text string) pipeline.Inbound {
		in := pipeline.Inbound{
			Key: pipeline.Key{Channel: "telegram", Chat: itoa64(chat.ID)}, SenderID: "111", SenderName: "Ada Lovelace",
			MessageID: "42", Text: text, Time: time.Unix(int64(date), 0).UTC(),
			IsGroup: chat.Type != models.ChatTypePrivate,
		}
		return in
	}
	edit := func(in pipeline.Inbound, f func(in *pipeline.Inbound)) pipeline.Inbound { f(&in); return in }

	tests := []struct {
		name   string
		u      *models.Update
		policy string
		want   pipeline.Inbound
		ok     bool
	}{
		{name: "nil update", u: nil},
		{name: "empty update", u: &models.Update{}},
		{name: "private text", u: &models.Update{Message: msg(private, "hello")}, ok: true, want: base(private, "hello")},
		{name: "private text trimmed", u: &models.Update{Message: msg(private, "  hello \n")}, ok: true, want: base(private, "hello")},
		{name: "a send time far in the future is not believed (the store takes the arrival time)",
			u:  &models.Update{Message: with(msg(private, "hello"), func(m *models.Message) { m.Date = 17000066666660000 })},
			ok: true, want: edit(base(private, "hello"), func(in *pipeline.Inbound) { in.Time = time.Time{} })},
		{name: "group text not addressed", u: &models.Update{Message: msg(group, "hello all")}, ok: true, want: base(group, "hello all")},
		{name: "basic group", u: &models.Update{Message: msg(basic, "hi")}, ok: true, want: base(basic, "hi")},
		{name: "group always", policy: GroupsReplyAlways, u: &models.Update{Message: msg(group, "hello all")}, ok: true,
			want: edit(base(group, "hello all"), func(in *pipeline.Inbound) { in.MentionsBot = true })},
		{name: "private always does not change", policy: GroupsReplyAlways, u: &models.Update{Message: msg(private, "hi")}, ok: true, want: base(private, "hi")},
		{name: "mention at start stripped",
			u:  &models.Update{Message: with(msg(group, "@RecallBot, what is 2+2?"), func(m *models.Message) { m.Entities = ment(0, 10) })},
			ok: true, want: edit(base(group, "what is 2+2?"), func(in *pipeline.Inbound) { in.MentionsBot = true })},
		{name: "mention at end stripped",
			u:  &models.Update{Message: with(msg(group, "what is 2+2 @recallbot?"), func(m *models.Message) { m.Entities = ment(12, 10) })},
			ok: true, want: edit(base(group, "what is 2+2?"), func(in *pipeline.Inbound) { in.MentionsBot = true })},
		{name: "mention in the middle becomes the name",
			u:  &models.Update{Message: with(msg(group, "I think @RecallBot knows this"), func(m *models.Message) { m.Entities = ment(8, 10) })},
			ok: true, want: edit(base(group, "I think Recall knows this"), func(in *pipeline.Inbound) { in.MentionsBot = true })},
		{name: "mention after emoji (UTF-16 offsets)",
			u:  &models.Update{Message: with(msg(group, "😀 hey @RecallBot"), func(m *models.Message) { m.Entities = ment(7, 10) })},
			ok: true, want: edit(base(group, "😀 hey"), func(in *pipeline.Inbound) { in.MentionsBot = true })},
		{name: "mention of someone else",
			u:  &models.Update{Message: with(msg(group, "@alice look"), func(m *models.Message) { m.Entities = ment(0, 6) })},
			ok: true, want: base(group, "@alice look")},
		{name: "mention entity out of range ignored",
			u:  &models.Update{Message: with(msg(group, "@RecallBot"), func(m *models.Message) { m.Entities = ment(5, 50) })},
			ok: true, want: base(group, "@RecallBot")},
		{name: "only a mention: nothing to answer",
			u: &models.Update{Message: with(msg(group, "@RecallBot"), func(m *models.Message) { m.Entities = ment(0, 10) })}},
		{name: "text mention of the bot",
			u: &models.Update{Message: with(msg(group, "Recall tell me a joke"), func(m *models.Message) {
				m.Entities = []models.MessageEntity{{Type: models.MessageEntityTypeTextMention, Offset: 0, Length: 6, User: botUser}}
			})},
			ok: true, want: edit(base(group, "tell me a joke"), func(in *pipeline.Inbound) { in.MentionsBot = true })},
		{name: "text mention in the middle kept",
			u: &models.Update{Message: with(msg(group, "ask Recall about it"), func(m *models.Message) {
				m.Entities = []models.MessageEntity{{Type: models.MessageEntityTypeTextMention, Offset: 4, Length: 6, User: botUser}}
			})},
			ok: true, want: edit(base(group, "ask Recall about it"), func(in *pipeline.Inbound) { in.MentionsBot = true })},
		{name: "text mention without user",
			u: &models.Update{Message: with(msg(group, "Recall hi"), func(m *models.Message) {
				m.Entities = []models.MessageEntity{{Type: models.MessageEntityTypeTextMention, Offset: 0, Length: 6}}
			})},
			ok: true, want: base(group, "Recall hi")},
		{name: "command for this bot", u: &models.Update{Message: msg(group, "/summary@RecallBot sqlite 15")}, ok: true,
			want: base(group, "/summary sqlite 15")},
		{name: "command for this bot, case-insensitive", u: &models.Update{Message: msg(private, "/help@recallbot")}, ok: true,
			want: base(private, "/help")},
		{name: "command for another bot", u: &models.Update{Message: msg(group, "/summary@OtherBot")}},
		{name: "plain command", u: &models.Update{Message: msg(group, "/help")}, ok: true, want: base(group, "/help")},
		{name: "reply to the bot",
			u: &models.Update{Message: with(msg(group, "why?"), func(m *models.Message) {
				m.ReplyToMessage = &models.Message{ID: 41, Chat: group, From: botUser, Text: "because"}
			})},
			ok: true, want: edit(base(group, "why?"), func(in *pipeline.Inbound) { in.ReplyTo, in.ReplyToBot = "41", true })},
		{name: "reply to someone else",
			u: &models.Update{Message: with(msg(group, "yes"), func(m *models.Message) {
				m.ReplyToMessage = &models.Message{ID: 40, Chat: group, From: &models.User{ID: 9, FirstName: "Bob"}}
			})},
			ok: true, want: edit(base(group, "yes"), func(in *pipeline.Inbound) { in.ReplyTo = "40" })},
		{name: "forum topic",
			u: &models.Update{Message: with(msg(forum, "in topic"), func(m *models.Message) {
				m.IsTopicMessage, m.MessageThreadID = true, 7
				m.ReplyToMessage = &models.Message{ID: 7, Chat: forum, ForumTopicCreated: &models.ForumTopicCreated{Name: "T"}}
			})},
			ok: true, want: edit(base(forum, "in topic"), func(in *pipeline.Inbound) { in.Key.Thread = "7" })},
		{name: "forum topic, explicit reply",
			u: &models.Update{Message: with(msg(forum, "re"), func(m *models.Message) {
				m.IsTopicMessage, m.MessageThreadID = true, 7
				m.ReplyToMessage = &models.Message{ID: 30, Chat: forum, From: botUser, MessageThreadID: 7}
			})},
			ok: true, want: edit(base(forum, "re"), func(in *pipeline.Inbound) { in.Key.Thread, in.ReplyTo, in.ReplyToBot = "7", "30", true })},
		{name: "forum general topic",
			u:  &models.Update{Message: with(msg(forum, "general"), func(m *models.Message) { m.MessageThreadID = 0 })},
			ok: true, want: base(forum, "general")},
		{name: "topic of a private chat",
			u: &models.Update{Message: with(msg(private, "in a private topic"), func(m *models.Message) {
				m.IsTopicMessage, m.MessageThreadID = true, 5
			})},
			ok: true, want: edit(base(private, "in a private topic"), func(in *pipeline.Inbound) { in.Key.Thread = "5" })},
		{name: "reply thread in a non-forum group is the chat",
			u:  &models.Update{Message: with(msg(group, "thread"), func(m *models.Message) { m.MessageThreadID, m.IsTopicMessage = 12, true })},
			ok: true, want: base(group, "thread")},
		{name: "photo with caption",
			u: &models.Update{Message: with(msg(private, ""), func(m *models.Message) {
				m.Photo = []models.PhotoSize{{FileID: "x"}}
				m.Caption = "@RecallBot what is this"
				m.CaptionEntities = ment(0, 10)
			})},
			ok: true, want: edit(base(private, "what is this"), func(in *pipeline.Inbound) { in.MentionsBot = true })},
		{name: "photo without caption", u: &models.Update{Message: with(msg(private, ""), func(m *models.Message) { m.Photo = []models.PhotoSize{{FileID: "x"}} })},
			ok: true, want: pipeline.Inbound{Key: pipeline.Key{Channel: "telegram", Chat: "111"}, SenderID: "111", SenderName: "Ada Lovelace", MessageID: "42", Time: time.Unix(1700000000, 0).UTC()}},
		{name: "sticker", u: &models.Update{Message: with(msg(private, ""), func(m *models.Message) { m.Sticker = &models.Sticker{} })}},
		{name: "join", u: &models.Update{Message: with(msg(group, ""), func(m *models.Message) { m.NewChatMembers = []models.User{*ada} })}},
		{name: "pin", u: &models.Update{Message: with(msg(group, ""), func(m *models.Message) { m.PinnedMessage = &models.MaybeInaccessibleMessage{} })}},
		{name: "title change", u: &models.Update{Message: with(msg(group, ""), func(m *models.Message) { m.NewChatTitle = "New" })}},
		{name: "edited message ignored", u: &models.Update{EditedMessage: msg(private, "fixed typo")}},
		{name: "message from another bot", u: &models.Update{Message: with(msg(group, "beep"), func(m *models.Message) { m.From = &models.User{ID: 5, IsBot: true} })}},
		{name: "message from the bot itself", u: &models.Update{Message: with(msg(group, "me"), func(m *models.Message) { m.From = botUser })}},
		{name: "message without sender", u: &models.Update{Message: with(msg(group, "who"), func(m *models.Message) { m.From = nil })}},
		{name: "anonymous admin",
			u: &models.Update{Message: with(msg(group, "/help"), func(m *models.Message) {
				m.From = &models.User{ID: 1087968824, IsBot: true, FirstName: "Group"}
				m.SenderChat = &group
			})},
			ok: true, want: edit(base(group, "/help"), func(in *pipeline.Inbound) { in.SenderID, in.SenderName = "-100200", "Friends" })},
		{name: "automatic forward from a channel",
			u: &models.Update{Message: with(msg(group, "post"), func(m *models.Message) {
				m.IsAutomaticForward = true
				m.SenderChat = &models.Chat{ID: -100999, Type: models.ChatTypeChannel}
			})}},
		{name: "channel post", u: &models.Update{ChannelPost: msg(models.Chat{ID: -100999, Type: models.ChatTypeChannel}, "news")}},
		{name: "message in a channel chat", u: &models.Update{Message: msg(models.Chat{ID: -100999, Type: models.ChatTypeChannel}, "news")}},
		{name: "chat without id", u: &models.Update{Message: msg(models.Chat{Type: models.ChatTypePrivate}, "x")}},
		{name: "callback with label",
			u: &models.Update{CallbackQuery: &models.CallbackQuery{ID: "q1", From: *ada, Data: "json",
				Message: models.MaybeInaccessibleMessage{Message: &models.Message{ID: 50, Date: date, Chat: private, From: botUser,
					ReplyMarkup: &models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{{Text: "SQLite", CallbackData: "sqlite"}}, {{Text: "JSON file", CallbackData: "json"}}}}}}}},
			ok: true, want: pipeline.Inbound{Key: pipeline.Key{Channel: "telegram", Chat: "111"}, SenderID: "111", SenderName: "Ada Lovelace",
				MessageID: "cb:q1", Text: "JSON file", Choice: "json", ReplyTo: "50", ReplyToBot: true}},
		{name: "callback in a forum topic, label not found",
			u: &models.Update{CallbackQuery: &models.CallbackQuery{ID: "q2", From: *ada, Data: "yes",
				Message: models.MaybeInaccessibleMessage{Message: &models.Message{ID: 51, Date: date, Chat: forum, IsTopicMessage: true, MessageThreadID: 7}}}},
			ok: true, want: pipeline.Inbound{Key: pipeline.Key{Channel: "telegram", Chat: "-100300", Thread: "7"}, SenderID: "111", SenderName: "Ada Lovelace",
				MessageID: "cb:q2", Text: "yes", Choice: "yes", ReplyTo: "51", ReplyToBot: true, IsGroup: true}},
		{name: "callback on an inaccessible message",
			u: &models.Update{CallbackQuery: &models.CallbackQuery{ID: "q3", From: *ada, Data: "no",
				Message: models.MaybeInaccessibleMessage{Type: models.MaybeInaccessibleMessageTypeInaccessibleMessage, InaccessibleMessage: &models.InaccessibleMessage{Chat: group, MessageID: 3}}}},
			ok: true, want: pipeline.Inbound{Key: pipeline.Key{Channel: "telegram", Chat: "-100200"}, SenderID: "111", SenderName: "Ada Lovelace",
				MessageID: "cb:q3", Text: "no", Choice: "no", ReplyTo: "3", ReplyToBot: true, IsGroup: true}},
		{name: "callback of an inline message", u: &models.Update{CallbackQuery: &models.CallbackQuery{ID: "q4", From: *ada, Data: "x", InlineMessageID: "i"}}},
		{name: "callback without data", u: &models.Update{CallbackQuery: &models.CallbackQuery{ID: "q5", From: *ada,
			Message: models.MaybeInaccessibleMessage{Message: &models.Message{ID: 1, Chat: private}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := tt.policy
			if policy == "" {
				policy = GroupsReplyMention
			}
			got, ok := toInbound(tt.u, testMe, policy)
			if ok && got.Media != nil {
				got.Media = nil // TestMediaInbound checks media
			}
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (got %+v)", ok, tt.ok, got)
			}
			if ok && got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if ok {
				if err := got.Key.Validate(); err != nil {
					t.Errorf("invalid key: %v", err)
				}
			}
		})
	}
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

func TestMediaInbound(t *testing.T) {
	ada := &models.User{ID: 111, FirstName: "Ada"}
	private := models.Chat{ID: 111, Type: models.ChatTypePrivate}
	tests := []struct {
		name string
		m    *models.Message
		want pipeline.Media
		text string
	}{
		{"voice", &models.Message{Voice: &models.Voice{FileID: "v1", Duration: 14, MimeType: "audio/ogg", FileSize: 5000}},
			pipeline.Media{Kind: pipeline.MediaVoice, MIME: "audio/ogg", Size: 5000, Duration: 14 * time.Second, Ref: "v1", Name: "voice.ogg"}, ""},
		{"photo takes the largest size", &models.Message{Photo: []models.PhotoSize{{FileID: "small"}, {FileID: "big", FileSize: 90000}}, Caption: "my wine", MediaGroupID: "g1"},
			pipeline.Media{Kind: pipeline.MediaPhoto, MIME: "image/jpeg", Size: 90000, Ref: "big", Name: "photo.jpg", Album: "g1"}, "my wine"},
		{"document", &models.Message{Document: &models.Document{FileID: "d1", FileName: "notes.md", MimeType: "text/markdown", FileSize: 12}},
			pipeline.Media{Kind: pipeline.MediaDocument, MIME: "text/markdown", Size: 12, Ref: "d1", Name: "notes.md"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.m.ID, tt.m.Chat, tt.m.From = 5, private, ada
			in, ok := toInbound(&models.Update{Message: tt.m}, testMe, GroupsReplyMention)
			if !ok || in.Media == nil {
				t.Fatalf("ok %v, media %v", ok, in.Media)
			}
			got := *in.Media
			got.Fetch = nil
			if !reflect.DeepEqual(got, tt.want) || in.Text != tt.text {
				t.Fatalf("media %+v text %q, want %+v %q", *in.Media, in.Text, tt.want, tt.text)
			}
		})
	}
}

func TestTextOnly(t *testing.T) {
	ada := &models.User{ID: 111, FirstName: "Ada"}
	private := models.Chat{ID: 111, Type: models.ChatTypePrivate}
	group := models.Chat{ID: -5, Type: models.ChatTypeGroup}
	tests := []struct {
		name string
		m    *models.Message
		want bool
	}{
		{"sticker", &models.Message{ID: 1, Chat: private, From: ada, Sticker: &models.Sticker{}}, true},
		// Media the bot hears, sees or reads goes to the pipeline (Inbound.Media).
		{"photo", &models.Message{ID: 1, Chat: private, From: ada, Photo: []models.PhotoSize{{}}}, false},
		{"voice", &models.Message{ID: 1, Chat: private, From: ada, Voice: &models.Voice{}}, false},
		{"video note", &models.Message{ID: 1, Chat: private, From: ada, VideoNote: &models.VideoNote{}}, false},
		{"document", &models.Message{ID: 1, Chat: private, From: ada, Document: &models.Document{}}, false},
		{"poll", &models.Message{ID: 1, Chat: private, From: ada, Poll: &models.Poll{}}, true},
		{"document with caption", &models.Message{ID: 1, Chat: private, From: ada, Document: &models.Document{}, Caption: "read"}, false},
		{"photo in a group", &models.Message{ID: 1, Chat: group, From: ada, Photo: []models.PhotoSize{{}}}, false},
		{"service message", &models.Message{ID: 1, Chat: private, From: ada, NewChatTitle: "x"}, false},
		{"from a bot", &models.Message{ID: 1, Chat: private, From: &models.User{ID: 2, IsBot: true}, Sticker: &models.Sticker{}}, false},
		{"text", &models.Message{ID: 1, Chat: private, From: ada, Text: "hi"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, replyTo, ok := textOnly(&models.Update{Message: tt.m}, testMe)
			if ok != tt.want {
				t.Fatalf("ok = %v, want %v", ok, tt.want)
			}
			if ok && (key != pipeline.Key{Channel: "telegram", Chat: "111"} || replyTo != "1") {
				t.Errorf("key %v reply %q", key, replyTo)
			}
		})
	}
	if _, _, ok := textOnly(&models.Update{EditedMessage: &models.Message{ID: 1, Chat: private, From: ada, Sticker: &models.Sticker{}}}, testMe); ok {
		t.Error("an edited sticker got the notice")
	}
}

func TestUTF16Range(t *testing.T) {
	tests := []struct {
		s          string
		off, n     int
		start, end int
		ok         bool
	}{
		{"hello", 0, 5, 0, 5, true},
		{"hello", 1, 2, 1, 3, true},
		{"😀ab", 2, 1, 4, 5, true},  // the emoji is two code units, four bytes
		{"😀ab", 1, 1, 0, 0, false}, // inside the surrogate pair
		{"éa", 1, 1, 2, 3, true},
		{"ab", 2, 1, 0, 0, false},
		{"ab", -1, 1, 0, 0, false},
		{"ab", 0, 0, 0, 0, false},
		{"", 0, 1, 0, 0, false},
		{"a\xffb", 1, 1, 1, 2, true}, // invalid UTF-8 counts one unit
	}
	for _, tt := range tests {
		s, e, ok := utf16Range(tt.s, tt.off, tt.n)
		if ok != tt.ok || (ok && (s != tt.start || e != tt.end)) {
			t.Errorf("utf16Range(%q, %d, %d) = %d, %d, %v; want %d, %d, %v", tt.s, tt.off, tt.n, s, e, ok, tt.start, tt.end, tt.ok)
		}
	}
}

// FuzzNormalize decodes arbitrary JSON as an update (as the poller and the
// webhook do) and normalizes it: it never panics, and what it accepts has a
// valid key and text. Seeds: testdata/fuzz/FuzzNormalize.
func FuzzNormalize(f *testing.F) {
	f.Add([]byte(`{"update_id":1,"callback_query":{"id":"x","from":{"id":1},"data":"d","message":null}}`), true)
	f.Fuzz(func(t *testing.T, data []byte, always bool) {
		u, err := decodeUpdate(data)
		if err != nil {
			return
		}
		policy := GroupsReplyMention
		if always {
			policy = GroupsReplyAlways
		}
		in, ok := toInbound(u, testMe, policy)
		textOnly(u, testMe)
		if !ok {
			return
		}
		if err := in.Key.Validate(); err != nil {
			t.Fatalf("invalid key %v: %v", in.Key, err)
		}
		if (in.Text == "" && in.Media == nil) || in.MessageID == "" || in.SenderID == "" {
			t.Fatalf("accepted an incomplete message: %+v", in)
		}
		if _, err := json.Marshal(in); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzDecodeUpdate: any body Telegram (or someone with the webhook secret)
// sends decodes, fully, minimally or not at all, without panicking, and
// what decodes normalizes without panicking.
func FuzzDecodeUpdate(f *testing.F) {
	f.Add([]byte(`{"update_id":1,"message":{"message_id":2,"date":1,"chat":{"id":5,"type":"private"},"from":{"id":5,"first_name":"A"},"text":"hi"}}`))
	f.Add([]byte(`{"update_id":1,"message":{"message_id":2,"chat":{"id":-5,"type":"supergroup","is_forum":true},"is_topic_message":true,"message_thread_id":3,"forward_origin":{"type":"new"},"text":"@RecallBot x","entities":[{"type":"mention","offset":0,"length":10}],"reply_to_message":{"message_id":3,"forum_topic_created":{"name":"t"}}}}`))
	f.Add([]byte(`{"update_id":1,"callback_query":{"id":"q","from":{"id":5},"data":"d","message":{"message_id":2,"chat":{"id":5,"type":"private"},"forward_origin":{"type":"x"}}}}`))
	f.Add([]byte(`{"update_id":1,"message":{"message_id":"x"}}`))
	me := Me{ID: 123456, Username: "RecallBot", Name: "Recall"}
	f.Fuzz(func(t *testing.T, raw []byte) {
		u, _ := decodeUpdate(raw)
		if u == nil {
			return
		}
		toInbound(u, me, GroupsReplyMention)
		textOnly(u, me)
	})
}
