package chatexport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Telegram Desktop's export: {"name","type","id","messages":[…]} for one
// chat; the full-account export nests chats under {"chats":{"list":[…]}}.
// Both are read as a stream of tokens, one message at a time.
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
	return ParseTelegramReader(context.Background(), bytes.NewReader(data))
}

// ParseTelegramReader reads Telegram Desktop's result.json from r as a
// stream: one message decoded at a time, counted as it comes (more than
// MaxMessages entries stop it), so memory holds what is kept, not the
// file. It stops with ctx's error when ctx ends.
func ParseTelegramReader(ctx context.Context, r io.Reader) (Chat, error) {
	p := &tgParser{ctx: ctx, dec: json.NewDecoder(r)}
	p.dec.UseNumber()
	c, err := p.top()
	if err != nil {
		return Chat{}, err
	}
	c.Source = "telegram"
	return c, nil
}

// tgParser walks the export's JSON token by token.
type tgParser struct {
	ctx context.Context
	dec *json.Decoder
	n   int // entries of messages lists read
}

// syntax wraps a decoding error: the file is not the JSON of an export.
func syntax(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: the JSON does not parse (%v)", ErrNotExport, err)
}

// top reads {"name","messages":[…]} or {"chats":{"list":[…]}}.
func (p *tgParser) top() (Chat, error) {
	var (
		chat    Chat
		hasMsgs bool
		inner   *Chat
		chats   int
	)
	err := p.fields(func(key string) error {
		switch key {
		case "name":
			return p.dec.Decode(&chat.Name)
		case "messages":
			hasMsgs = true
			return p.messages(&chat)
		case "chats":
			return p.fields(func(key string) error {
				if key != "list" {
					return p.skip()
				}
				return p.list(func() error {
					chats++
					if chats > 1 || hasMsgs {
						return p.skip() // counted; only one chat is imported
					}
					c, err := p.chat()
					inner = &c
					return err
				})
			})
		}
		return p.skip()
	})
	switch {
	case err != nil:
		return Chat{}, err
	case hasMsgs:
		return chat, nil
	case chats > 1:
		return Chat{}, fmt.Errorf("the export holds %d chats: export one chat (in the chat: ⋮ → Export chat history, format JSON)", chats)
	case inner != nil:
		return *inner, nil
	case chats == 0 && !hasMsgs:
		return Chat{}, fmt.Errorf("%w: no \"messages\" list (export with format JSON, not HTML)", ErrNotExport)
	}
	return Chat{}, fmt.Errorf("%w: the export holds no chats", ErrNotExport)
}

// chat reads one {"name","messages":[…]} object.
func (p *tgParser) chat() (Chat, error) {
	var c Chat
	has := false
	err := p.fields(func(key string) error {
		switch key {
		case "name":
			return p.dec.Decode(&c.Name)
		case "messages":
			has = true
			return p.messages(&c)
		}
		return p.skip()
	})
	if err == nil && !has {
		err = fmt.Errorf("%w: no \"messages\" list (export with format JSON, not HTML)", ErrNotExport)
	}
	return c, err
}

// messages reads a messages list into c, one entry at a time.
func (p *tgParser) messages(c *Chat) error {
	return p.list(func() error {
		p.n++
		if p.n > MaxMessages {
			return fmt.Errorf("the export holds more than %d messages; at most %d are imported at once", MaxMessages, MaxMessages)
		}
		if p.n%4096 == 0 {
			if err := p.ctx.Err(); err != nil {
				return err
			}
		}
		var m tgMessage
		if err := p.dec.Decode(&m); err != nil {
			return syntax(err)
		}
		c.add(m)
		return nil
	})
}

// add keeps a message of the export, or counts it as skipped.
func (c *Chat) add(m tgMessage) {
	if m.Type != "message" || m.From == nil {
		c.Skipped++ // service messages: joins, pins, calls…
		return
	}
	text := strings.TrimSpace(tgText(m.Text))
	if text == "" {
		text = tgMediaNote(m)
	}
	t, ok := tgTime(m)
	if text == "" || !ok {
		c.Skipped++
		return
	}
	sender := strings.TrimSpace(*m.From)
	if sender == "" {
		sender = "Deleted Account"
	}
	c.Messages = append(c.Messages, Message{ID: "tg" + m.ID.String(), Sender: sender, Text: text, Time: t})
}

// open reads the delimiter want ('{' or '['); null reads as none.
func (p *tgParser) open(want json.Delim) (null bool, err error) {
	tok, err := p.dec.Token()
	if err != nil {
		return false, syntax(err)
	}
	if tok == nil {
		return true, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return false, fmt.Errorf("%w: %v where %v was expected", ErrNotExport, tok, want)
	}
	return false, nil
}

// fields calls f with each key of the object that comes next (null: no
// keys), f reading the value; it reads the closing '}'.
func (p *tgParser) fields(f func(key string) error) error {
	if null, err := p.open('{'); null || err != nil {
		return err
	}
	for p.dec.More() {
		tok, err := p.dec.Token()
		if err != nil {
			return syntax(err)
		}
		key, _ := tok.(string)
		if err := f(key); err != nil {
			return err
		}
	}
	if _, err := p.dec.Token(); err != nil {
		return syntax(err)
	}
	return nil
}

// list calls f for each element of the array that comes next (null: no
// elements), f reading the element; it reads the closing ']'.
func (p *tgParser) list(f func() error) error {
	if null, err := p.open('['); null || err != nil {
		return err
	}
	for p.dec.More() {
		if err := f(); err != nil {
			return err
		}
	}
	if _, err := p.dec.Token(); err != nil {
		return syntax(err)
	}
	return nil
}

// skip reads past the next value, token by token (nothing kept).
func (p *tgParser) skip() error {
	depth := 0
	for i := 0; ; i++ {
		tok, err := p.dec.Token()
		if err != nil {
			return syntax(err)
		}
		if i%65536 == 65535 {
			if err := p.ctx.Err(); err != nil {
				return err
			}
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
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
