package chatexport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// Message is one message of an exported chat.
type Message struct {
	ID     string // the app's message id, or a line number (stable across re-imports of the same file)
	Sender string // display name as the export shows it
	Text   string
	Time   time.Time
}

// Chat is a parsed export.
type Chat struct {
	Name     string // the chat's name when the export says it ("" for WhatsApp text)
	Source   string // "telegram" or "whatsapp"
	Messages []Message
	Skipped  int // service and system lines, media without text
}

// Senders lists the distinct senders, most messages first.
func (c Chat) Senders() []string {
	n := map[string]int{}
	for _, m := range c.Messages {
		n[m.Sender]++
	}
	out := make([]string, 0, len(n))
	for s := range n {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if n[out[i]] != n[out[j]] {
			return n[out[i]] > n[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}

// Span is the time of the first and the last message.
func (c Chat) Span() (first, last time.Time) {
	for i, m := range c.Messages {
		if i == 0 || m.Time.Before(first) {
			first = m.Time
		}
		if m.Time.After(last) {
			last = m.Time
		}
	}
	return first, last
}

// Describe is the one-line summary a user confirms before an import:
// "1,834 messages between Anna and Ben, Mar 2023 – Nov 2026".
func (c Chat) Describe() string {
	if len(c.Messages) == 0 {
		return "no messages"
	}
	senders := c.Senders()
	who := ""
	switch {
	case len(senders) == 1:
		who = "from " + senders[0]
	case len(senders) == 2:
		who = "between " + senders[0] + " and " + senders[1]
	default:
		who = fmt.Sprintf("from %d people (%s, %s, …)", len(senders), senders[0], senders[1])
	}
	first, last := c.Span()
	return fmt.Sprintf("%s %s, %s – %s", count(len(c.Messages), "message", "messages"), who, first.Format("Jan 2006"), last.Format("Jan 2006"))
}

func count(n int, one, many string) string {
	s := fmt.Sprintf("%d", n)
	if n >= 1000 {
		s = fmt.Sprintf("%d,%03d", n/1000, n%1000)
	}
	if n == 1 {
		return s + " " + one
	}
	return s + " " + many
}

// ErrNotExport means the data is not a chat export this package reads.
var ErrNotExport = errors.New("not a Telegram or WhatsApp chat export")

// MaxMessages caps one import (a decade of a busy chat fits).
const MaxMessages = 1_000_000

// Parse recognizes the format (Telegram JSON, WhatsApp text or zip) and
// parses it. loc is the time zone of WhatsApp's local times (Telegram's
// JSON carries Unix times).
func Parse(data []byte, loc *time.Location) (Chat, error) {
	return Read(context.Background(), bytes.NewReader(data), int64(len(data)), loc)
}

// Read is Parse reading the size bytes of r as a stream (a file need not
// be in memory whole); it stops with ctx's error when ctx ends.
func Read(ctx context.Context, r io.ReaderAt, size int64, loc *time.Location) (Chat, error) {
	head := make([]byte, min(size, 64))
	if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
		return Chat{}, fmt.Errorf("reading the export: %w", err)
	}
	trimmed := strings.TrimLeft(string(head), " \t\r\n\ufeff")
	switch {
	case strings.HasPrefix(trimmed, "{"):
		return ParseTelegramReader(ctx, io.NewSectionReader(r, 0, size))
	case len(head) >= 4 && string(head[:4]) == "PK\x03\x04":
		return ReadWhatsAppZip(ctx, r, size, loc)
	}
	return ParseWhatsAppReader(ctx, io.NewSectionReader(r, 0, size), loc)
}

// Conversation turns the chat into the archived messages of the
// conversation key, as an import takes them: every message is the user role
// with its sender's name (and an id derived from the name), archived (it is
// the past: searchable, not in the recent window), with a platform id
// derived from the export's own ids so that importing the same file twice
// adds nothing. count gives each message's tokens.
func (c Chat) Conversation(key pipeline.Key, count func(string) int) memory.ConversationData {
	conv := memory.ConversationData{Key: key.String()}
	for _, m := range c.Messages {
		conv.Messages = append(conv.Messages, memory.Message{
			Key: key, Role: memory.RoleUser, SenderID: "import:" + m.Sender, SenderName: m.Sender,
			PlatformID: "import:" + c.Source + ":" + m.ID, Text: m.Text, Time: m.Time, Tokens: count(m.Text),
		})
	}
	return conv
}
