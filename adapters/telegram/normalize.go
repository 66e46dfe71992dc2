package telegram

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/pipeline"
)

// Channel is the pipeline channel name of Telegram conversations.
const Channel = "telegram"

// Group reply policies (Options.GroupsReply).
const (
	GroupsReplyMention = string(pipeline.GroupReplyMention) // answer only when mentioned, replied to, commanded or a button is pressed
	GroupsReplyAlways  = string(pipeline.GroupReplyAlways)  // answer every group message
)

// TextOnlyReply is what a user reads after sending a sticker, a photo without
// caption, a voice note and the like in a private chat.
const TextOnlyReply = "I can read text only for now."

// callbackPrefix marks the MessageID of a button press: "cb:" + callback id.
const callbackPrefix = "cb:"

// Me is the bot's own account, learned from getMe.
type Me struct {
	ID       int64
	Username string // without "@"
	Name     string // first name, used where a mention is part of a sentence
	// ReadsAllGroupMessages is getMe's can_read_all_group_messages: false
	// while group privacy mode is on (then plain @mentions never arrive).
	ReadsAllGroupMessages bool
}

// toInbound turns an update into the message the pipeline handles. ok is
// false for everything the bot does not answer: edited messages, service
// messages (joins, pins, title changes…), media without caption, messages of
// other bots and channel posts, commands addressed to another bot, and updates
// it cannot make sense of. It is pure and never panics on missing fields.
func toInbound(u *models.Update, me Me, groupsReply string) (pipeline.Inbound, bool) {
	switch {
	case u == nil:
		return pipeline.Inbound{}, false
	case u.Message != nil:
		return messageInbound(u.Message, me, groupsReply)
	case u.CallbackQuery != nil:
		return callbackInbound(u.CallbackQuery)
	}
	// Edited messages are ignored on purpose: the original was answered
	// already, and answering every typo fix again would surprise the user.
	return pipeline.Inbound{}, false
}

// chatKind reports whether the chat is one the bot talks in, and whether it
// is a group.
func chatKind(c models.Chat) (ok, group bool) {
	if c.ID == 0 {
		return false, false
	}
	switch c.Type {
	case models.ChatTypePrivate:
		return true, false
	case models.ChatTypeGroup, models.ChatTypeSupergroup:
		return true, true
	}
	return false, false // channels and unknown kinds
}

// keyOf is the conversation of a message: its chat, and its topic when the
// message was posted in one — of a forum group, or of a private chat with
// topics (Bot API threaded mode). The General topic and reply threads of a
// plain group are the chat itself.
func keyOf(m *models.Message) pipeline.Key {
	k := pipeline.Key{Channel: Channel, Chat: strconv.FormatInt(m.Chat.ID, 10)}
	topics := m.Chat.IsForum || m.Chat.Type == models.ChatTypePrivate
	if topics && m.IsTopicMessage && m.MessageThreadID > 0 {
		k.Thread = strconv.Itoa(m.MessageThreadID)
	}
	return k
}

// author names who wrote m: the user, or the chat a message was sent on
// behalf of (an anonymous group admin, a linked channel). ok is false for
// messages of bots and messages without a sender.
func author(m *models.Message, me Me) (id, name string, ok bool) {
	if m.SenderChat != nil && m.SenderChat.ID != 0 {
		// An anonymous group admin (the group itself) or someone posting as
		// one of their channels: the chat is the sender.
		return strconv.FormatInt(m.SenderChat.ID, 10), chatName(*m.SenderChat), true
	}
	if m.From == nil || m.From.ID == 0 || m.From.IsBot || m.From.ID == me.ID {
		return "", "", false
	}
	return strconv.FormatInt(m.From.ID, 10), userName(*m.From), true
}

func userName(u models.User) string {
	if n := strings.TrimSpace(u.FirstName + " " + u.LastName); n != "" {
		return n
	}
	return u.Username
}

func chatName(c models.Chat) string {
	if c.Title != "" {
		return c.Title
	}
	if n := strings.TrimSpace(c.FirstName + " " + c.LastName); n != "" {
		return n
	}
	return c.Username
}

func messageInbound(m *models.Message, me Me, groupsReply string) (pipeline.Inbound, bool) {
	ok, group := chatKind(m.Chat)
	if !ok || m.IsAutomaticForward {
		return pipeline.Inbound{}, false
	}
	senderID, senderName, ok := author(m, me)
	if !ok {
		return pipeline.Inbound{}, false
	}
	text, entities := m.Text, m.Entities
	if text == "" {
		text, entities = m.Caption, m.CaptionEntities
	}
	media := mediaOf(m)
	if strings.TrimSpace(text) == "" && media == nil {
		return pipeline.Inbound{}, false // service messages, stickers and the like
	}
	in := pipeline.Inbound{
		Key:        keyOf(m),
		SenderID:   senderID,
		SenderName: senderName,
		MessageID:  strconv.Itoa(m.ID),
		IsGroup:    group,
	}
	if m.Date > 0 {
		in.Time = pipeline.SentAt(time.Unix(int64(m.Date), 0).UTC(), time.Now())
	}
	if r := m.ReplyToMessage; r != nil && !isTopicRoot(m, r) {
		in.ReplyTo = strconv.Itoa(r.ID)
		in.ReplyToBot = me.ID != 0 && r.From != nil && r.From.ID == me.ID
	}
	text, in.MentionsBot = stripMentions(text, entities, me)
	text, ok = ownCommand(text, me)
	if !ok {
		return pipeline.Inbound{}, false // a command for another bot
	}
	in.Text = strings.TrimSpace(text)
	if in.Text == "" && media == nil {
		return pipeline.Inbound{}, false // only "@RecallBot": nothing to answer
	}
	in.Media = media
	if group && groupsReply == GroupsReplyAlways {
		in.MentionsBot = true
	}
	return in, true
}

// isTopicRoot reports whether r, the message m replies to, is only the
// topic's first message: Telegram sets reply_to_message to it for every
// message in a forum topic that is not an explicit reply.
func isTopicRoot(m, r *models.Message) bool {
	return r.ForumTopicCreated != nil || (m.IsTopicMessage && r.ID == m.MessageThreadID)
}

// ownCommand strips "@ThisBot" from "/cmd@ThisBot args", so commands parse the
// same in groups and private chats. ok is false for "/cmd@OtherBot".
func ownCommand(text string, me Me) (string, bool) {
	lead := len(text) - len(strings.TrimLeft(text, " \t\r\n"))
	rest := text[lead:]
	if !strings.HasPrefix(rest, "/") {
		return text, true
	}
	head := rest
	if i := strings.IndexAny(rest, " \t\r\n\u00a0"); i >= 0 {
		head = rest[:i]
	}
	at := strings.IndexByte(head, '@')
	if at < 0 {
		return text, true
	}
	if me.Username == "" || !strings.EqualFold(head[at+1:], me.Username) {
		return "", false
	}
	return head[:at] + rest[len(head):], true
}

// span is a byte range of text.
type span struct {
	start, end int
	named      bool // a text_mention: the text is already a name
}

// stripMentions finds mentions of the bot (an @username entity, or a
// text_mention of its user) and removes them where they address the bot (at
// the start or the end of the message). A mention in the middle of a sentence
// becomes the bot's name, so the sentence still reads.
func stripMentions(text string, entities []models.MessageEntity, me Me) (string, bool) {
	var spans []span
	for _, e := range entities {
		switch e.Type {
		case models.MessageEntityTypeMention:
			if me.Username == "" {
				continue
			}
			s, end, ok := utf16Range(text, e.Offset, e.Length)
			if ok && strings.EqualFold(text[s:end], "@"+me.Username) {
				spans = append(spans, span{start: s, end: end})
			}
		case models.MessageEntityTypeTextMention:
			if e.User == nil || me.ID == 0 || e.User.ID != me.ID {
				continue
			}
			if s, end, ok := utf16Range(text, e.Offset, e.Length); ok {
				spans = append(spans, span{start: s, end: end, named: true})
			}
		}
	}
	if len(spans) == 0 {
		return text, false
	}
	// Entities come in order; remove from the end so earlier offsets hold.
	for i := len(spans) - 1; i >= 0; i-- {
		sp := spans[i]
		if sp.end > len(text) || (i+1 < len(spans) && sp.end > spans[i+1].start) {
			continue // overlapping or out of order: leave it
		}
		before, after := text[:sp.start], text[sp.end:]
		switch {
		case strings.TrimSpace(before) == "":
			text = strings.TrimLeft(after, " \t\r\n,:;")
		case strings.Trim(after, " \t\r\n,.!?:;") == "":
			text = strings.TrimRight(before, " \t\r\n,") + strings.TrimLeft(after, " \t\r\n,")
		case sp.named:
			// "ask Recall about it": the linked name is part of the sentence.
		case me.Name != "":
			text = before + me.Name + after
		default:
			text = strings.TrimRight(before, " ") + " " + strings.TrimLeft(after, " ")
		}
	}
	return text, true
}

// utf16Range converts an entity's offset and length, counted in UTF-16 code
// units as Telegram counts them, to byte offsets in s. ok is false when the
// range does not fall on character boundaries inside s.
func utf16Range(s string, off, length int) (start, end int, ok bool) {
	if off < 0 || length <= 0 || off > 2*len(s) || length > 2*len(s) {
		return 0, 0, false
	}
	stop := off + length
	start = -1
	u := 0
	for i, r := range s {
		if u == off {
			start = i
		}
		if u == stop {
			return start, i, start >= 0
		}
		if u > stop {
			return 0, 0, false
		}
		if r == utf8.RuneError {
			u++
		} else {
			u += utf16.RuneLen(r)
		}
	}
	if u == stop && start >= 0 {
		return start, len(s), true
	}
	return 0, 0, false
}

// callbackInbound turns a button press into a message: Choice is the
// button's data and Text its label (the data when the label cannot be found).
func callbackInbound(q *models.CallbackQuery) (pipeline.Inbound, bool) {
	if q.ID == "" || q.Data == "" || q.From.ID == 0 || q.From.IsBot {
		return pipeline.Inbound{}, false
	}
	var key pipeline.Key
	var group bool
	var msgID int
	label := ""
	switch {
	case q.Message.Message != nil:
		m := q.Message.Message
		ok, g := chatKind(m.Chat)
		if !ok {
			return pipeline.Inbound{}, false
		}
		key, group, msgID = keyOf(m), g, m.ID
		label = buttonLabel(m.ReplyMarkup, q.Data)
	case q.Message.InaccessibleMessage != nil:
		m := q.Message.InaccessibleMessage
		ok, g := chatKind(m.Chat)
		if !ok {
			return pipeline.Inbound{}, false
		}
		key = pipeline.Key{Channel: Channel, Chat: strconv.FormatInt(m.Chat.ID, 10)}
		group, msgID = g, m.MessageID
	default:
		return pipeline.Inbound{}, false // a button of an inline message: no chat
	}
	if label == "" {
		label = q.Data
	}
	in := pipeline.Inbound{
		Key:        key,
		SenderID:   strconv.FormatInt(q.From.ID, 10),
		SenderName: userName(q.From),
		MessageID:  callbackPrefix + q.ID,
		Text:       label,
		Choice:     q.Data,
		IsGroup:    group,
		ReplyToBot: true, // buttons are on the bot's own messages
	}
	if msgID > 0 {
		in.ReplyTo = strconv.Itoa(msgID)
	}
	return in, true
}

// buttonLabel finds the label of the button carrying data.
func buttonLabel(kb *models.InlineKeyboardMarkup, data string) string {
	if kb == nil {
		return ""
	}
	for _, row := range kb.InlineKeyboard {
		for _, b := range row {
			if b.CallbackData == data {
				return b.Text
			}
		}
	}
	return ""
}

// textOnly reports whether u is something the bot cannot read (a sticker, a
// photo, a voice note… without caption) sent in a private chat; the adapter
// then answers TextOnlyReply directly. In groups such messages are ignored.
func textOnly(u *models.Update, me Me) (key pipeline.Key, replyTo string, ok bool) {
	if u == nil || u.Message == nil {
		return pipeline.Key{}, "", false
	}
	m := u.Message
	if ok, group := chatKind(m.Chat); !ok || group || m.Text != "" || m.Caption != "" {
		return pipeline.Key{}, "", false
	}
	if _, _, ok := author(m, me); !ok || !hasMedia(m) || mediaOf(m) != nil {
		return pipeline.Key{}, "", false
	}
	return keyOf(m), strconv.Itoa(m.ID), true
}

// hasMedia reports whether m carries content other than text (as opposed to
// a service message).
func hasMedia(m *models.Message) bool {
	return m.Animation != nil || m.Audio != nil || m.Document != nil || m.PaidMedia != nil ||
		len(m.Photo) > 0 || m.Sticker != nil || m.Story != nil || m.Video != nil ||
		m.VideoNote != nil || m.Voice != nil || m.Contact != nil || m.Dice != nil ||
		m.Game != nil || m.Poll != nil || m.Venue != nil || m.Location != nil || m.Checklist != nil
}
