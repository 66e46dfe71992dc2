package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// SentAt is when a platform says a message was sent (t), believed when it
// is between 2000 and a day after now (clocks drift; a platform message
// from later than that, or of the last century, is a forged or broken
// update): otherwise zero, and the store takes the time it arrived. Such a
// time could not even be stored (a year after 9999 has no JSON form).
func SentAt(t, now time.Time) time.Time {
	if t.Year() < 2000 || t.After(now.Add(24*time.Hour)) {
		return time.Time{}
	}
	return t
}

// Inbound is one message from a user, normalized by an adapter. Adapters fill
// it from a platform update with a pure function; the pipeline never sees a
// platform type.
type Inbound struct {
	Key         Key
	SenderID    string // platform user id, e.g. "123456" or "4915112345678"
	SenderName  string
	MessageID   string // platform message id ("" if none)
	Text        string
	ReplyTo     string // platform id of the message this replies to
	ReplyToBot  bool   // it replies to one of the bot's messages
	IsGroup     bool
	MentionsBot bool
	Choice      string // data of a pressed choice button; Text is then the button's label
	Time        time.Time
	Media       *Media // a voice note, photo, document… that came with it (Text is its caption); nil for none
	// Image is shown to the model with Text (a photo, once the media
	// stage has it); never stored. A pointer keeps Inbound comparable.
	Image *Image `json:"-"`
	// Prompt, when not empty, is what the model reads for this message
	// instead of Text (a long document's part relevant to the question);
	// Text is what is stored.
	Prompt string `json:"-"`
}

// ConsoleUser is the UserID of the local terminal user; access lets it in
// always, as an admin.
const ConsoleUser = "console:local"

// UserID is the sender as access lists name it: the channel and the platform
// user id, e.g. "telegram:123456". In a group it names the person, not the
// group.
func (in Inbound) UserID() string { return in.Key.Channel + ":" + in.SenderID }

// IsCommand reports whether the text is a command ("/help", "/summary@RecallBot").
func (in Inbound) IsCommand() bool { return strings.HasPrefix(in.Text, "/") }

// Addressed reports whether the message is meant for the bot: always in a
// private chat; in a group only when it mentions the bot, replies to one of
// its messages, is a command or presses one of its buttons.
func (in Inbound) Addressed() bool {
	return !in.IsGroup || in.MentionsBot || in.ReplyToBot || in.IsCommand() || in.Choice != ""
}

// Choice is one option offered to the user: Label is what they read, Data is
// what comes back in Inbound.Choice when they press its button.
type Choice struct{ Label, Data string }

// File is a document sent to the user, e.g. an /export.
type File struct {
	Name string
	MIME string
	Data []byte
}

// Outbound is one message to send.
type Outbound struct {
	Key     Key
	Text    string   // Markdown; the adapter renders it for its platform
	Plain   bool     // send as is, no Markdown rendering
	ReplyTo string   // platform message id to reply to, "" for none
	Choices []Choice // offered as buttons where the adapter has them, else the caller writes numbered text (see WithChoices)
}

// Sender is what an adapter implements to send. Send returns the platform id
// of the sent message ("" when the platform gives none). A cancelled ctx
// abandons the send; the message may or may not have been delivered. Long
// texts are split by the adapter; the id is then the last part's.
type Sender interface {
	Send(ctx context.Context, out Outbound) (id string, err error)
}

// Typer shows "typing…" in the conversation once; the platform clears it after
// a few seconds, so the caller refreshes it while it waits.
type Typer interface {
	Typing(ctx context.Context, key Key) error
}

// Chooser reports whether Outbound.Choices are rendered as buttons. A Sender
// that is not a Chooser, or returns false, gets them as numbered text.
type Chooser interface {
	Buttons() bool
}

// Editor replaces the text of a message the bot sent earlier (id as returned
// by Send).
type Editor interface {
	Edit(ctx context.Context, key Key, id, text string) error
}

// Streamer shows a reply while the model is still writing it. A Sender that
// is not a Streamer gets the whole reply by Send once it is complete.
type Streamer interface {
	// Stream starts a reply in the conversation key, answering the message
	// replyTo ("" for none). Nothing is shown before the first Append. ctx
	// bounds the showing; Finish must be called exactly once, even when
	// nothing was appended, to end the Stream.
	Stream(ctx context.Context, key Key, replyTo string) Stream
}

// Stream is one reply shown as it grows. Append and Finish are called from
// one goroutine.
type Stream interface {
	// Append adds text (Markdown) to the reply. It never waits for the
	// network: the adapter shows the text so far at its own pace, as plain
	// text, and a failure to show it only stops the showing (Finish still
	// delivers the reply).
	Append(text string)
	// Finish replaces whatever was shown with out (its Key and ReplyTo are
	// those given to Stream), rendered and split like Send, and returns the
	// id of the last message. When the shown message cannot be replaced,
	// out is sent as new messages, so the reply is never lost. Nothing is
	// shown after Finish returns.
	Finish(ctx context.Context, out Outbound) (id string, err error)
}

// ShownStream is a Stream that tells the id of the message it shows the
// reply in while the model writes it (a draft has none), so that a crash
// before Finish leaves a trace: the next start replaces the partial text
// left behind.
type ShownStream interface {
	Stream
	// OnShown sets fn, called once with the message id as soon as a
	// message shows the reply. It must be called before the first Append;
	// fn runs on the adapter's goroutine and must return quickly.
	OnShown(fn func(id string))
}

// ChatAdmins is a Sender that can tell a group's administrators on its
// platform (Telegram's getChatAdministrators). userID is the platform's
// user id (Inbound.SenderID); a chat that is not a group has none.
type ChatAdmins interface {
	IsChatAdmin(ctx context.Context, key Key, userID string) (bool, error)
}

// FileSender sends a document with an optional caption.
type FileSender interface {
	SendFile(ctx context.Context, key Key, f File, caption string) error
}

// SendText sends Markdown text to the conversation.
func SendText(ctx context.Context, s Sender, key Key, text string) error {
	if _, err := s.Send(ctx, Outbound{Key: key, Text: text}); err != nil {
		return fmt.Errorf("sending to %s: %w", key, err)
	}
	return nil
}

// WithChoices prepares out for s: when s renders buttons it is returned as is;
// otherwise the choices are appended to the text as a numbered list
// ("1. SQLite (recommended)\n2. JSON file") and Choices is cleared, so the user
// answers with a number or a label (see PickChoice). out is not modified.
func WithChoices(s Sender, out Outbound) Outbound {
	if len(out.Choices) == 0 {
		return out
	}
	if c, ok := s.(Chooser); ok && c.Buttons() {
		return out
	}
	var b strings.Builder
	b.WriteString(out.Text)
	if out.Text != "" {
		b.WriteString("\n\n")
	}
	for i, c := range out.Choices {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%d. %s", i+1, c.Label)
	}
	out.Text = b.String()
	out.Choices = nil
	return out
}

// PickChoice maps a user's reply to one of choices: its number ("1", " 2 ",
// "2." or "2)"), its label or its data, both compared case-insensitively after
// trimming spaces, or else a single word of exactly one label ("json" for
// "JSON file"). ok is false when nothing matches or the word is ambiguous.
func PickChoice(text string, choices []Choice) (Choice, bool) {
	s := strings.TrimSpace(text)
	if s == "" {
		return Choice{}, false
	}
	num := strings.TrimRight(s, ".)")
	if n, err := strconv.Atoi(num); err == nil {
		if n >= 1 && n <= len(choices) {
			return choices[n-1], true
		}
		return Choice{}, false
	}
	for _, c := range choices {
		if strings.EqualFold(s, strings.TrimSpace(c.Label)) {
			return c, true
		}
	}
	for _, c := range choices {
		if c.Data != "" && strings.EqualFold(s, c.Data) {
			return c, true
		}
	}
	var found []Choice
	for _, c := range choices {
		if slices.ContainsFunc(labelWords(c.Label), func(w string) bool { return strings.EqualFold(w, s) }) {
			found = append(found, c)
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	return Choice{}, false
}

// labelWords splits a label into its words of letters and digits.
func labelWords(label string) []string {
	return strings.FieldsFunc(label, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// GroupReply says which group messages a channel answers (the
// telegram.groups.reply and whatsapp.groups.reply settings).
type GroupReply string

// Group reply policies.
const (
	// GroupReplyMention answers only messages addressed to the bot
	// (mentioned, replied to, commanded).
	GroupReplyMention GroupReply = "mention"
	// GroupReplyAlways answers every group message.
	GroupReplyAlways GroupReply = "always"
)
