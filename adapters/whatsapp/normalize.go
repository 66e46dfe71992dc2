package whatsapp

import (
	"strings"
	"time"

	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"

	"github.com/recallbot/recall/pipeline"
)

// toInbound turns a WhatsApp message into the message the pipeline handles.
// It is pure: mapLID (which may be nil) is the only lookup, and it never
// panics on missing fields.
//
// ok is false for everything the bot ignores: its own messages, status
// updates, broadcast lists, newsletters, other bots, protocol messages
// (revokes, history sync notices…), reactions, polls, edits, and messages
// without text (stickers, media without caption). answer is false when the
// message is older than backlog at now (queued by WhatsApp while the bot
// was offline): it is accepted (stored) but not answered. backlog <= 0
// answers everything.
//
// A @lid sender is mapped to their phone number (the message's SenderAlt,
// else mapLID), so a person is one user whichever id arrives; a direct chat
// on a @lid JID gets the same conversation key as on the phone JID. An
// unmappable LID stays as it is ("…@lid").
func toInbound(ev *events.Message, me Me, mapLID func(types.JID) types.JID, groupsReply string, now time.Time, backlog time.Duration) (in pipeline.Inbound, answer, ok bool) {
	if ev == nil || ev.Message == nil {
		return in, false, false
	}
	info := &ev.Info
	if info.IsFromMe || info.ID == "" || me.is(info.Sender) || info.Sender.IsBot() {
		return in, false, false
	}
	var group bool
	switch info.Chat.Server {
	case types.GroupServer:
		group = true
	case types.DefaultUserServer, types.HiddenUserServer:
	default:
		// status@broadcast, broadcast lists, newsletters, bots, Messenger…
		return in, false, false
	}
	m := ev.Message
	if ev.IsEdit || info.Edit != types.EditAttributeEmpty || ignored(m) {
		return in, false, false
	}
	text, ci := textOf(m)
	media, _ := mediaOf(m)
	if strings.TrimSpace(text) == "" && media == nil {
		return in, false, false
	}
	resolve := func(j types.JID) types.JID { return phoneJID(j.ToNonAD(), info, mapLID) }
	sender := resolve(info.Sender)
	if sender.User == "" {
		return in, false, false
	}
	chat := info.Chat.ToNonAD()
	if !group {
		chat = resolve(info.Chat)
	}
	in = pipeline.Inbound{
		Key:        pipeline.Key{Channel: Channel, Chat: chat.String()},
		SenderID:   senderID(sender),
		SenderName: strings.TrimSpace(info.PushName),
		MessageID:  info.ID,
		IsGroup:    group,
	}
	if !info.Timestamp.IsZero() {
		in.Time = pipeline.SentAt(info.Timestamp.UTC(), now)
	}
	if ci != nil {
		in.ReplyTo = ci.GetStanzaID()
		if in.ReplyTo != "" {
			if p, err := types.ParseJID(ci.GetParticipant()); err == nil {
				in.ReplyToBot = me.is(p)
			}
		}
		text, in.MentionsBot = stripMentions(text, ci.GetMentionedJID(), me)
	}
	in.Text = strings.TrimSpace(text)
	if in.Text == "" && media == nil {
		return pipeline.Inbound{}, false, false // only "@Recall": nothing to answer
	}
	in.Media = media
	if group && groupsReply == GroupsReplyAlways {
		in.MentionsBot = true
	}
	answer = backlog <= 0 || in.Time.IsZero() || now.Sub(in.Time) <= backlog
	return in, answer, true
}

// ignored reports whether m is a message kind the bot never answers, even
// if it carried text.
func ignored(m *waE2E.Message) bool {
	return m.ProtocolMessage != nil || m.ReactionMessage != nil || m.EncReactionMessage != nil ||
		m.PollCreationMessage != nil || m.PollCreationMessageV2 != nil || m.PollCreationMessageV3 != nil ||
		m.PollUpdateMessage != nil || m.EditedMessage != nil
}

// textOf returns the text of m and its context (quoted message, mentions):
// plain text, extended text, or the caption of an image, a video or a
// document.
func textOf(m *waE2E.Message) (string, *waE2E.ContextInfo) {
	switch {
	case m.GetConversation() != "":
		return m.GetConversation(), nil
	case m.GetExtendedTextMessage() != nil:
		x := m.GetExtendedTextMessage()
		return x.GetText(), x.GetContextInfo()
	case m.GetImageMessage() != nil:
		x := m.GetImageMessage()
		return x.GetCaption(), x.GetContextInfo()
	case m.GetVideoMessage() != nil:
		x := m.GetVideoMessage()
		return x.GetCaption(), x.GetContextInfo()
	case m.GetDocumentMessage() != nil:
		x := m.GetDocumentMessage()
		return x.GetCaption(), x.GetContextInfo()
	case m.GetAudioMessage() != nil:
		return "", m.GetAudioMessage().GetContextInfo()
	}
	return "", nil
}

// phoneJID maps a @lid JID to its phone-number JID: from the message itself
// (SenderAlt, when j is its sender), else through mapLID. Other JIDs, and
// LIDs that cannot be mapped, are returned as they are.
func phoneJID(j types.JID, info *types.MessageInfo, mapLID func(types.JID) types.JID) types.JID {
	if j.Server != types.HiddenUserServer {
		return j
	}
	if alt := info.SenderAlt; alt.Server == types.DefaultUserServer && alt.User != "" && j.User == info.Sender.User {
		return alt.ToNonAD()
	}
	if mapLID != nil {
		if pn := mapLID(j); pn.Server == types.DefaultUserServer && pn.User != "" {
			return pn.ToNonAD()
		}
	}
	return j
}

// senderID is how access lists name a WhatsApp user: the phone number
// ("4915112345678"), or the whole JID ("123456789@lid") for a LID that
// could not be mapped, so it never collides with a phone number.
func senderID(j types.JID) string {
	if j.Server == types.DefaultUserServer {
		return j.User
	}
	return j.String()
}

// stripMentions reports whether mentioned (the JIDs a message mentions)
// names the bot, and removes "@<number>" of the bot from text where it
// addresses the bot (at the start or the end); in the middle of a sentence
// it becomes the bot's name, so the sentence still reads.
func stripMentions(text string, mentioned []string, me Me) (string, bool) {
	var tokens []string
	for _, s := range mentioned {
		j, err := types.ParseJID(s)
		if err != nil || !me.is(j) {
			continue
		}
		tokens = append(tokens, "@"+j.User)
	}
	if len(tokens) == 0 {
		return text, false
	}
	for _, tok := range tokens {
		text = replaceMention(text, tok, me.Name)
	}
	return text, true
}

// replaceMention removes or replaces every whole occurrence of tok ("@123")
// in text.
func replaceMention(text, tok, name string) string {
	var b strings.Builder
	rest := text
	for {
		i := strings.Index(rest, tok)
		if i < 0 {
			b.WriteString(rest)
			break
		}
		end := i + len(tok)
		if end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
			// "@1234" inside "@12345": another number.
			b.WriteString(rest[:end])
			rest = rest[end:]
			continue
		}
		before := b.String() + rest[:i]
		after := rest[end:]
		b.Reset()
		switch {
		case strings.TrimSpace(before) == "":
			b.WriteString(strings.TrimLeft(before, " \t\r\n"))
			after = strings.TrimLeft(after, " \t\r\n,:;")
		case strings.Trim(after, " \t\r\n,.!?:;") == "":
			b.WriteString(strings.TrimRight(before, " \t\r\n,"))
			after = strings.TrimLeft(after, " \t\r\n,")
		case name != "":
			b.WriteString(before + name)
		default:
			b.WriteString(strings.TrimRight(before, " ") + " ")
			after = strings.TrimLeft(after, " ")
		}
		rest = after
	}
	return b.String()
}

// revoked recognises "delete for everyone": the conversation key, the id
// of the deleted message and who deleted it (a sender id, as in
// pipeline.Inbound). ok is false for anything else, and for the bot's own
// deletions.
func revoked(ev *events.Message, me Me, mapLID func(types.JID) types.JID) (key pipeline.Key, id, sender string, ok bool) {
	pm := ev.Message.GetProtocolMessage()
	if pm == nil || pm.GetType() != waE2E.ProtocolMessage_REVOKE || pm.GetKey().GetID() == "" {
		return key, "", "", false
	}
	info := &ev.Info
	if info.IsFromMe || me.is(info.Sender) {
		return key, "", "", false
	}
	chat := info.Chat.ToNonAD()
	switch chat.Server {
	case types.GroupServer:
	case types.DefaultUserServer, types.HiddenUserServer:
		chat = phoneJID(chat, info, mapLID)
	default:
		return key, "", "", false
	}
	s := phoneJID(info.Sender.ToNonAD(), info, mapLID)
	return pipeline.Key{Channel: Channel, Chat: chat.String()}, pm.GetKey().GetID(), senderID(s), true
}
