package whatsapp

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"
	"google.golang.org/protobuf/proto"

	"github.com/recallbot/recall/pipeline"
)

// Test identities.
const (
	botPhone  = "15550000000"
	botLID    = "99000000000001"
	userPhone = "4915112345678"
	userLID   = "88000000000002"
	user2     = "4915187654321"
	groupID   = "120363000000000001"
)

var (
	testMe = Me{
		PN:   types.NewJID(botPhone, types.DefaultUserServer),
		LID:  types.NewJID(botLID, types.HiddenUserServer),
		Name: "Recall",
	}
	pnJID    = types.NewJID(userPhone, types.DefaultUserServer)
	lidJID   = types.NewJID(userLID, types.HiddenUserServer)
	user2JID = types.NewJID(user2, types.DefaultUserServer)
	groupJID = types.NewJID(groupID, types.GroupServer)
	testNow  = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
)

// mapTestLID knows one LID: the test user's.
func mapTestLID(j types.JID) types.JID {
	if j.User == userLID && j.Server == types.HiddenUserServer {
		return pnJID
	}
	return types.EmptyJID
}

// msgEvent builds a text message from sender in chat.
func msgEvent(chat, sender types.JID, id, text string) *events.Message {
	return &events.Message{
		Info: types.MessageInfo{
			MessageSource: types.MessageSource{Chat: chat, Sender: sender, IsGroup: chat.Server == types.GroupServer},
			ID:            id,
			PushName:      "Ada",
			Timestamp:     testNow.Add(-time.Minute),
		},
		Message: &waE2E.Message{Conversation: proto.String(text)},
	}
}

// extEvent builds an extended text message with a context.
func extEvent(chat, sender types.JID, id, text string, ci *waE2E.ContextInfo) *events.Message {
	ev := msgEvent(chat, sender, id, "")
	ev.Message = &waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{Text: proto.String(text), ContextInfo: ci}}
	return ev
}

func with(ev *events.Message, f func(ev *events.Message)) *events.Message {
	f(ev)
	return ev
}

func dmKey(j types.JID) pipeline.Key { return pipeline.Key{Channel: Channel, Chat: j.String()} }

func TestToInbound(t *testing.T) {
	group := dmKey(groupJID)
	tests := []struct {
		name    string
		ev      *events.Message
		reply   string // groups reply policy, default mention
		want    pipeline.Inbound
		answer  bool
		ignored bool
	}{
		{
			name:   "direct text",
			ev:     msgEvent(pnJID, types.JID{User: userPhone, Server: types.DefaultUserServer, Device: 0}, "M1", "  hello there "),
			want:   pipeline.Inbound{Key: dmKey(pnJID), SenderID: userPhone, SenderName: "Ada", MessageID: "M1", Text: "hello there"},
			answer: true,
		},
		{
			name:   "sender device dropped",
			ev:     msgEvent(pnJID, types.JID{User: userPhone, Server: types.DefaultUserServer, Device: 3}, "M2", "hi"),
			want:   pipeline.Inbound{Key: dmKey(pnJID), SenderID: userPhone, SenderName: "Ada", MessageID: "M2", Text: "hi"},
			answer: true,
		},
		{
			name: "lid dm mapped through SenderAlt",
			ev: with(msgEvent(lidJID, lidJID, "M3", "hi"), func(ev *events.Message) {
				ev.Info.SenderAlt = pnJID
			}),
			want:   pipeline.Inbound{Key: dmKey(pnJID), SenderID: userPhone, SenderName: "Ada", MessageID: "M3", Text: "hi"},
			answer: true,
		},
		{
			name:   "lid dm mapped through the LID store",
			ev:     msgEvent(lidJID, types.JID{User: userLID, Server: types.HiddenUserServer, Device: 2}, "M4", "hi"),
			want:   pipeline.Inbound{Key: dmKey(pnJID), SenderID: userPhone, SenderName: "Ada", MessageID: "M4", Text: "hi"},
			answer: true,
		},
		{
			name:   "unmappable lid stays a lid",
			ev:     msgEvent(types.NewJID("777", types.HiddenUserServer), types.NewJID("777", types.HiddenUserServer), "M5", "hi"),
			want:   pipeline.Inbound{Key: pipeline.Key{Channel: Channel, Chat: "777@lid"}, SenderID: "777@lid", SenderName: "Ada", MessageID: "M5", Text: "hi"},
			answer: true,
		},
		{
			name:   "group without mention goes on, not addressed",
			ev:     msgEvent(groupJID, pnJID, "G1", "just chatting"),
			want:   pipeline.Inbound{Key: group, SenderID: userPhone, SenderName: "Ada", MessageID: "G1", Text: "just chatting", IsGroup: true},
			answer: true,
		},
		{
			name: "group lid sender mapped",
			ev: with(msgEvent(groupJID, lidJID, "G2", "x"), func(ev *events.Message) {
				ev.Info.AddressingMode = types.AddressingModeLID
			}),
			want:   pipeline.Inbound{Key: group, SenderID: userPhone, SenderName: "Ada", MessageID: "G2", Text: "x", IsGroup: true},
			answer: true,
		},
		{
			name: "group mention by phone stripped at start",
			ev: extEvent(groupJID, pnJID, "G3", "@"+botPhone+" what time is it?", &waE2E.ContextInfo{
				MentionedJID: []string{testMe.PN.String()},
			}),
			want:   pipeline.Inbound{Key: group, SenderID: userPhone, SenderName: "Ada", MessageID: "G3", Text: "what time is it?", IsGroup: true, MentionsBot: true},
			answer: true,
		},
		{
			name: "group mention by lid stripped at end",
			ev: extEvent(groupJID, lidJID, "G4", "thoughts, @"+botLID, &waE2E.ContextInfo{
				MentionedJID: []string{testMe.LID.String()},
			}),
			want:   pipeline.Inbound{Key: group, SenderID: userPhone, SenderName: "Ada", MessageID: "G4", Text: "thoughts", IsGroup: true, MentionsBot: true},
			answer: true,
		},
		{
			name: "mention in the middle becomes the name",
			ev: extEvent(groupJID, pnJID, "G5", "ask @"+botPhone+" about it", &waE2E.ContextInfo{
				MentionedJID: []string{testMe.PN.String()},
			}),
			want:   pipeline.Inbound{Key: group, SenderID: userPhone, SenderName: "Ada", MessageID: "G5", Text: "ask Recall about it", IsGroup: true, MentionsBot: true},
			answer: true,
		},
		{
			name: "mention of someone else",
			ev: extEvent(groupJID, pnJID, "G6", "@"+user2+" look", &waE2E.ContextInfo{
				MentionedJID: []string{user2JID.String()},
			}),
			want:   pipeline.Inbound{Key: group, SenderID: userPhone, SenderName: "Ada", MessageID: "G6", Text: "@" + user2 + " look", IsGroup: true},
			answer: true,
		},
		{
			name: "longer number is not the bot's",
			ev: extEvent(groupJID, pnJID, "G7", "@"+botPhone+"9 and @"+botPhone, &waE2E.ContextInfo{
				MentionedJID: []string{testMe.PN.String()},
			}),
			want:   pipeline.Inbound{Key: group, SenderID: userPhone, SenderName: "Ada", MessageID: "G7", Text: "@" + botPhone + "9 and", IsGroup: true, MentionsBot: true},
			answer: true,
		},
		{
			name:    "only the mention",
			ev:      extEvent(groupJID, pnJID, "G8", "@"+botPhone, &waE2E.ContextInfo{MentionedJID: []string{testMe.PN.String()}}),
			ignored: true,
		},
		{
			name:   "group always",
			reply:  GroupsReplyAlways,
			ev:     msgEvent(groupJID, pnJID, "G9", "anyone?"),
			want:   pipeline.Inbound{Key: group, SenderID: userPhone, SenderName: "Ada", MessageID: "G9", Text: "anyone?", IsGroup: true, MentionsBot: true},
			answer: true,
		},
		{
			name: "quoted reply to the bot",
			ev: extEvent(groupJID, pnJID, "G10", "and then?", &waE2E.ContextInfo{
				StanzaID: proto.String("BOTMSG"), Participant: proto.String(botPhone + "@s.whatsapp.net"),
			}),
			want:   pipeline.Inbound{Key: group, SenderID: userPhone, SenderName: "Ada", MessageID: "G10", Text: "and then?", IsGroup: true, ReplyTo: "BOTMSG", ReplyToBot: true},
			answer: true,
		},
		{
			name: "quoted reply to the bot's lid",
			ev: extEvent(groupJID, pnJID, "G11", "and then?", &waE2E.ContextInfo{
				StanzaID: proto.String("BOTMSG"), Participant: proto.String(botLID + "@lid"),
			}),
			want:   pipeline.Inbound{Key: group, SenderID: userPhone, SenderName: "Ada", MessageID: "G11", Text: "and then?", IsGroup: true, ReplyTo: "BOTMSG", ReplyToBot: true},
			answer: true,
		},
		{
			name: "quoted reply to someone else",
			ev: extEvent(groupJID, pnJID, "G12", "agreed", &waE2E.ContextInfo{
				StanzaID: proto.String("OTHER"), Participant: proto.String(user2JID.String()),
			}),
			want:   pipeline.Inbound{Key: group, SenderID: userPhone, SenderName: "Ada", MessageID: "G12", Text: "agreed", IsGroup: true, ReplyTo: "OTHER"},
			answer: true,
		},
		{
			name: "image caption",
			ev: with(msgEvent(pnJID, pnJID, "C1", ""), func(ev *events.Message) {
				ev.Message = &waE2E.Message{ImageMessage: &waE2E.ImageMessage{Caption: proto.String("what is this?")}}
			}),
			want:   pipeline.Inbound{Key: dmKey(pnJID), SenderID: userPhone, SenderName: "Ada", MessageID: "C1", Text: "what is this?", Media: &pipeline.Media{Kind: pipeline.MediaPhoto}},
			answer: true,
		},
		{
			name: "video caption",
			ev: with(msgEvent(pnJID, pnJID, "C2", ""), func(ev *events.Message) {
				ev.Message = &waE2E.Message{VideoMessage: &waE2E.VideoMessage{Caption: proto.String("watch")}}
			}),
			want:   pipeline.Inbound{Key: dmKey(pnJID), SenderID: userPhone, SenderName: "Ada", MessageID: "C2", Text: "watch"},
			answer: true,
		},
		{
			name: "document caption with mention",
			ev: with(msgEvent(groupJID, pnJID, "C3", ""), func(ev *events.Message) {
				ev.Message = &waE2E.Message{DocumentMessage: &waE2E.DocumentMessage{
					Caption:     proto.String("@" + botPhone + " summarize"),
					ContextInfo: &waE2E.ContextInfo{MentionedJID: []string{testMe.PN.String()}},
				}}
			}),
			want:   pipeline.Inbound{Key: group, SenderID: userPhone, SenderName: "Ada", MessageID: "C3", Text: "summarize", IsGroup: true, MentionsBot: true, Media: &pipeline.Media{Kind: pipeline.MediaDocument}},
			answer: true,
		},
		{
			name: "image without caption",
			ev: with(msgEvent(pnJID, pnJID, "C4", ""), func(ev *events.Message) {
				ev.Message = &waE2E.Message{ImageMessage: &waE2E.ImageMessage{}}
			}),
			want:   pipeline.Inbound{Key: dmKey(pnJID), SenderID: userPhone, SenderName: "Ada", MessageID: "C4", Media: &pipeline.Media{Kind: pipeline.MediaPhoto}},
			answer: true,
		},
		{
			name: "voice note",
			ev: with(msgEvent(pnJID, pnJID, "C5", ""), func(ev *events.Message) {
				ev.Message = &waE2E.Message{AudioMessage: &waE2E.AudioMessage{PTT: proto.Bool(true), Seconds: proto.Uint32(14)}}
			}),
			want:   pipeline.Inbound{Key: dmKey(pnJID), SenderID: userPhone, SenderName: "Ada", MessageID: "C5", Media: &pipeline.Media{Kind: pipeline.MediaVoice}},
			answer: true,
		},
		{
			name: "sticker",
			ev: with(msgEvent(pnJID, pnJID, "C6", ""), func(ev *events.Message) {
				ev.Message = &waE2E.Message{StickerMessage: &waE2E.StickerMessage{}}
			}),
			ignored: true,
		},
		{
			name:   "command",
			ev:     msgEvent(groupJID, pnJID, "K1", "/summary"),
			want:   pipeline.Inbound{Key: group, SenderID: userPhone, SenderName: "Ada", MessageID: "K1", Text: "/summary", IsGroup: true},
			answer: true,
		},
		{
			name:   "backlog older than the window",
			ev:     with(msgEvent(pnJID, pnJID, "B1", "still there?"), func(ev *events.Message) { ev.Info.Timestamp = testNow.Add(-11 * time.Minute) }),
			want:   pipeline.Inbound{Key: dmKey(pnJID), SenderID: userPhone, SenderName: "Ada", MessageID: "B1", Text: "still there?"},
			answer: false,
		},
		{
			name:   "backlog inside the window",
			ev:     with(msgEvent(pnJID, pnJID, "B2", "still there?"), func(ev *events.Message) { ev.Info.Timestamp = testNow.Add(-9 * time.Minute) }),
			want:   pipeline.Inbound{Key: dmKey(pnJID), SenderID: userPhone, SenderName: "Ada", MessageID: "B2", Text: "still there?"},
			answer: true,
		},
		{name: "from me", ev: with(msgEvent(pnJID, testMe.PN, "X1", "hi"), func(ev *events.Message) { ev.Info.IsFromMe = true }), ignored: true},
		{name: "bot's own lid as sender", ev: msgEvent(groupJID, testMe.LID, "X2", "hi"), ignored: true},
		{name: "status broadcast", ev: msgEvent(types.StatusBroadcastJID, pnJID, "X3", "my status"), ignored: true},
		{name: "broadcast list", ev: msgEvent(types.NewJID("1234", types.BroadcastServer), pnJID, "X4", "to all"), ignored: true},
		{name: "newsletter", ev: msgEvent(types.NewJID("1234", types.NewsletterServer), types.NewJID("1234", types.NewsletterServer), "X5", "news"), ignored: true},
		{name: "meta ai bot", ev: msgEvent(types.NewJID("867051314767696", types.BotServer), types.NewJID("867051314767696", types.BotServer), "X6", "hi"), ignored: true},
		{name: "empty text", ev: msgEvent(pnJID, pnJID, "X7", "   "), ignored: true},
		{name: "no id", ev: msgEvent(pnJID, pnJID, "", "hi"), ignored: true},
		{name: "nil message", ev: with(msgEvent(pnJID, pnJID, "X8", "hi"), func(ev *events.Message) { ev.Message = nil }), ignored: true},
		{name: "edit", ev: with(msgEvent(pnJID, pnJID, "X9", "fixed typo"), func(ev *events.Message) { ev.IsEdit = true }), ignored: true},
		{name: "edit attribute", ev: with(msgEvent(pnJID, pnJID, "X10", "fixed"), func(ev *events.Message) { ev.Info.Edit = types.EditAttributeMessageEdit }), ignored: true},
		{
			name: "protocol message",
			ev: with(msgEvent(pnJID, pnJID, "X11", ""), func(ev *events.Message) {
				ev.Message = &waE2E.Message{ProtocolMessage: &waE2E.ProtocolMessage{Type: waE2E.ProtocolMessage_REVOKE.Enum()}}
			}),
			ignored: true,
		},
		{
			name: "reaction",
			ev: with(msgEvent(pnJID, pnJID, "X12", ""), func(ev *events.Message) {
				ev.Message = &waE2E.Message{ReactionMessage: &waE2E.ReactionMessage{Text: proto.String("👍")}}
			}),
			ignored: true,
		},
		{
			name: "poll",
			ev: with(msgEvent(pnJID, pnJID, "X13", ""), func(ev *events.Message) {
				ev.Message = &waE2E.Message{PollCreationMessageV3: &waE2E.PollCreationMessage{Name: proto.String("lunch?")}}
			}),
			ignored: true,
		},
		{
			name: "text with a poll is still a poll",
			ev: with(msgEvent(pnJID, pnJID, "X14", "vote"), func(ev *events.Message) {
				ev.Message.PollUpdateMessage = &waE2E.PollUpdateMessage{}
			}),
			ignored: true,
		},
		{name: "nil event", ev: nil, ignored: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply := tt.reply
			if reply == "" {
				reply = GroupsReplyMention
			}
			got, answer, ok := toInbound(tt.ev, testMe, mapTestLID, reply, testNow, 10*time.Minute)
			if tt.ignored {
				if ok {
					t.Fatalf("got %+v, want ignored", got)
				}
				return
			}
			if !ok {
				t.Fatal("ignored, want a message")
			}
			want := tt.want
			want.Time = tt.ev.Info.Timestamp.UTC()
			if got.Media != nil {
				if want.Media == nil || got.Media.Kind != want.Media.Kind {
					t.Errorf("media %+v, want %+v", got.Media, want.Media)
				}
				got.Media, want.Media = nil, nil
			}
			if got != want {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			if answer != tt.answer {
				t.Errorf("answer = %v, want %v", answer, tt.answer)
			}
			if err := got.Key.Validate(); err != nil {
				t.Errorf("invalid key: %v", err)
			}
		})
	}
}

// A person is one user and one conversation whichever id WhatsApp uses.
func TestToInboundLIDIsPhoneUser(t *testing.T) {
	byPN, _, ok1 := toInbound(msgEvent(pnJID, pnJID, "A", "one"), testMe, mapTestLID, GroupsReplyMention, testNow, time.Hour)
	byLID, _, ok2 := toInbound(msgEvent(lidJID, lidJID, "B", "two"), testMe, mapTestLID, GroupsReplyMention, testNow, time.Hour)
	if !ok1 || !ok2 {
		t.Fatal("ignored")
	}
	if byPN.Key != byLID.Key || byPN.UserID() != byLID.UserID() {
		t.Errorf("phone %v/%s vs lid %v/%s", byPN.Key, byPN.UserID(), byLID.Key, byLID.UserID())
	}
	if byPN.UserID() != "whatsapp:"+userPhone {
		t.Errorf("UserID = %s", byPN.UserID())
	}
}

func TestToInboundWithoutBacklogOrTime(t *testing.T) {
	ev := msgEvent(pnJID, pnJID, "A", "old")
	ev.Info.Timestamp = testNow.Add(-48 * time.Hour)
	if _, answer, ok := toInbound(ev, testMe, nil, GroupsReplyMention, testNow, 0); !ok || !answer {
		t.Errorf("backlog 0: answer=%v ok=%v, want both", answer, ok)
	}
	ev.Info.Timestamp = time.Time{}
	if in, answer, ok := toInbound(ev, testMe, nil, GroupsReplyMention, testNow, time.Minute); !ok || !answer || !in.Time.IsZero() {
		t.Errorf("no timestamp: answer=%v ok=%v time=%v", answer, ok, in.Time)
	}
}

// FuzzNormalize feeds toInbound messages built from arbitrary strings: it
// never panics, and what it accepts is a valid WhatsApp message.
func FuzzNormalize(f *testing.F) {
	f.Add("4915112345678@s.whatsapp.net", "4915112345678@s.whatsapp.net", "hello", "", "", "", false)
	f.Add("120363000000000001@g.us", "88000000000002@lid", "@15550000000 hi", "15550000000@s.whatsapp.net", "Q1", "99000000000001@lid", true)
	f.Add("status@broadcast", "4915112345678@s.whatsapp.net", "status", "", "", "", false)
	f.Add("88000000000002@lid", "88000000000002:3@lid", "@@@ *x* _y_", "", "", "", false)
	f.Fuzz(func(t *testing.T, chat, sender, text, mentioned, stanza, participant string, ext bool) {
		c, err1 := types.ParseJID(chat)
		s, err2 := types.ParseJID(sender)
		if err1 != nil || err2 != nil {
			return
		}
		ev := msgEvent(c, s, "ID1", text)
		if ext {
			ev = extEvent(c, s, "ID1", text, &waE2E.ContextInfo{
				MentionedJID: strings.Split(mentioned, ","), StanzaID: proto.String(stanza), Participant: proto.String(participant),
			})
		}
		for _, policy := range []string{GroupsReplyMention, GroupsReplyAlways} {
			in, _, ok := toInbound(ev, testMe, mapTestLID, policy, testNow, time.Minute)
			if !ok {
				continue
			}
			if in.Key.Channel != Channel || in.Key.Thread != "" || in.SenderID == "" || in.MessageID != "ID1" {
				t.Fatalf("bad inbound %+v", in)
			}
			if strings.TrimSpace(in.Text) != in.Text || in.Text == "" {
				t.Fatalf("text %q not trimmed or empty", in.Text)
			}
			if utf8.ValidString(text) && !utf8.ValidString(in.Text) {
				t.Fatalf("invalid UTF-8 from valid input: %q", in.Text)
			}
			if policy == GroupsReplyAlways && in.IsGroup && !in.MentionsBot {
				t.Fatal("group message not addressed under always")
			}
			if in.IsGroup != (c.Server == types.GroupServer) {
				t.Fatalf("IsGroup %v for chat %s", in.IsGroup, c)
			}
			if testMe.is(s) {
				t.Fatal("accepted the bot's own message")
			}
		}
	})
}
