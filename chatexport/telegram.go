package chatexport

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Telegram Desktop's export: {"name","type","id","messages":[…]} for one
// chat; the full-account export nests chats under {"chats":{"list":[…]}}.
type tgChat struct {
	Name     string      `json:"name"`
	Messages []tgMessage `json:"messages"`
}

type tgMessage struct {
	ID           json.Number     `json:"id"`
	Type         string          `json:"type"`
	Date         string          `json:"date"`
	DateUnix     string          `json:"date_unixtime"`
	From         *string         `json:"from"`
	FromID       string          `json:"from_id"`
	Text         json.RawMessage `json:"text"`
	MediaType    string          `json:"media_type"`
	Photo        string          `json:"photo"`
	File         string          `json:"file"`
	StickerEmoji string          `json:"sticker_emoji"`
}

// ParseTelegram reads Telegram Desktop's result.json of one chat (or a
// full export holding exactly one chat).
func ParseTelegram(data []byte) (Chat, error) {
	var top struct {
		tgChat
		Chats *struct {
			List []tgChat `json:"list"`
		} `json:"chats"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return Chat{}, fmt.Errorf("%w: the JSON does not parse (%v)", ErrNotExport, err)
	}
	chat := top.tgChat
	if chat.Messages == nil && top.Chats != nil {
		switch n := len(top.Chats.List); n {
		case 0:
			return Chat{}, fmt.Errorf("%w: the export holds no chats", ErrNotExport)
		case 1:
			chat = top.Chats.List[0]
		default:
			return Chat{}, fmt.Errorf("the export holds %d chats: export one chat (in the chat: ⋮ → Export chat history, format JSON)", n)
		}
	}
	if chat.Messages == nil {
		return Chat{}, fmt.Errorf("%w: no \"messages\" list (export with format JSON, not HTML)", ErrNotExport)
	}
	if len(chat.Messages) > MaxMessages {
		return Chat{}, fmt.Errorf("the export holds %d messages; at most %d are imported at once", len(chat.Messages), MaxMessages)
	}
	out := Chat{Name: chat.Name, Source: "telegram"}
	for _, m := range chat.Messages {
		if m.Type != "message" || m.From == nil {
			out.Skipped++ // service messages: joins, pins, calls…
			continue
		}
		text := strings.TrimSpace(tgText(m.Text))
		if text == "" {
			text = tgMediaNote(m)
		}
		t, ok := tgTime(m)
		if text == "" || !ok {
			out.Skipped++
			continue
		}
		sender := strings.TrimSpace(*m.From)
		if sender == "" {
			sender = "Deleted Account"
		}
		out.Messages = append(out.Messages, Message{ID: "tg" + m.ID.String(), Sender: sender, Text: text, Time: t})
	}
	return out, nil
}

// tgText flattens "text": a string, or an array of strings and
// {"type","text"} entities.
func tgText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if json.Unmarshal(p, &s) == nil {
			b.WriteString(s)
			continue
		}
		var e struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(p, &e) == nil {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

// tgMediaNote stands in for a media message without caption.
func tgMediaNote(m tgMessage) string {
	switch {
	case m.MediaType == "voice_message":
		return "[voice message]"
	case m.MediaType == "video_message" || m.MediaType == "video_file":
		return "[video]"
	case m.MediaType == "sticker":
		return strings.TrimSpace("[sticker] " + m.StickerEmoji)
	case m.Photo != "":
		return "[photo]"
	case m.File != "":
		return "[file]"
	}
	return ""
}

func tgTime(m tgMessage) (time.Time, bool) {
	if sec, err := strconv.ParseInt(m.DateUnix, 10, 64); err == nil && sec > 0 && sec < 1<<40 {
		return time.Unix(sec, 0).UTC(), true
	}
	// Older exports have only the local "2023-03-01T10:00:00".
	if t, err := time.ParseInLocation("2006-01-02T15:04:05", m.Date, time.Local); err == nil {
		return t.UTC(), true
	}
	return time.Time{}, false
}
