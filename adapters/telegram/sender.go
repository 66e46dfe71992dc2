package telegram

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/adapters/telegram/format"
	"github.com/recallbot/recall/backoff"
	"github.com/recallbot/recall/pipeline"
)

// sender sends to Telegram. Markdown is rendered to Telegram's HTML and split
// into messages of at most format.Limit characters; when Telegram cannot
// parse a part it is sent again as plain text. Every call that posts into a
// chat keeps to Telegram's flood limits (pacer), and a 429 is waited out
// however long its retry_after; 403 (blocked, kicked) becomes ErrBlocked.
type sender struct {
	api         *bot.Bot
	log         *slog.Logger
	data        *callbackData
	pace        *pacer        // Telegram's flood limits, per chat
	retryUnit   time.Duration // what one second of a 429's retry_after is (time.Second; shorter in tests)
	retries     int           // retries of a call after a transient failure
	retryBase   time.Duration // backoff between those retries
	retryMax    time.Duration
	sendTimeout time.Duration              // bound on each API call
	fileTimeout time.Duration              // bound on each upload
	preview     *models.LinkPreviewOptions // on every message and edit; nil shows link previews

	moved sync.Map // int64 → int64: groups upgraded to supergroups, old id → new

	// Streaming (streamSender).
	streamEvery time.Duration // least time between two updates of a streamed reply
	drafts      atomic.Bool   // try sendMessageDraft in private chats
	draftSeq    atomic.Int64  // the last draft id used
}

var (
	_ pipeline.Sender     = (*sender)(nil)
	_ pipeline.Typer      = (*sender)(nil)
	_ pipeline.Chooser    = (*sender)(nil)
	_ pipeline.Editor     = (*sender)(nil)
	_ pipeline.FileSender = (*sender)(nil)
)

// captionLimit is Telegram's limit on a document caption.
const captionLimit = 1024

// migrated records that group old became supergroup new: what is sent to
// old goes to new from now on.
func (s *sender) migrated(old, new int64) { s.moved.Store(old, new) }

// chatNow is where a message for chat goes: the supergroup it became, or
// chat itself.
func (s *sender) chatNow(chat int64) int64 {
	for range 4 { // a group upgrades once; the bound guards against a loop
		next, ok := s.moved.Load(chat)
		if !ok {
			return chat
		}
		chat = next.(int64)
	}
	return chat
}

// movedTo reports the supergroup a 400 says the group became (and records
// it); 0 when err is not that.
func (s *sender) movedTo(chat int64, err error) int64 {
	var me *bot.MigrateError
	if !errors.As(err, &me) || me.MigrateToChatID == 0 || int64(me.MigrateToChatID) == chat {
		return 0
	}
	to := int64(me.MigrateToChatID)
	s.migrated(chat, to)
	s.log.Info("the group became a supergroup; sending there", "from", chat, "to", to)
	return to
}

// target is the chat and topic of a key.
func target(key pipeline.Key) (chat int64, thread int, err error) {
	if key.Channel != Channel {
		return 0, 0, fmt.Errorf("telegram: cannot send to %s: not a Telegram conversation", key)
	}
	chat, err = strconv.ParseInt(key.Chat, 10, 64)
	if err != nil || chat == 0 {
		return 0, 0, fmt.Errorf("telegram: cannot send to %s: the chat is not a Telegram chat id", key)
	}
	if key.Thread != "" {
		thread, err = strconv.Atoi(key.Thread)
		if err != nil || thread <= 0 {
			return 0, 0, fmt.Errorf("telegram: cannot send to %s: the thread is not a topic id", key)
		}
	}
	return chat, thread, nil
}

// Buttons reports that choices are shown as inline buttons.
func (s *sender) Buttons() bool { return true }

// outgoing is what every part of one Send shares.
type outgoing struct {
	chat    int64
	thread  int
	replyTo int // 0: none
	markup  models.ReplyMarkup
}

// Send sends out, split into as many messages as needed; the id is the last
// message's. ReplyTo applies to the first message, the buttons to the last.
func (s *sender) Send(ctx context.Context, out pipeline.Outbound) (string, error) {
	o, out, parts, err := s.prepare(out)
	if err != nil || len(parts) == 0 {
		return "", err // nothing to send: Telegram refuses empty messages
	}
	return s.sendParts(ctx, o, out, parts, 0)
}

// prepare finds out's chat and renders it into message parts (HTML, or plain
// text when out.Plain, which it may set).
func (s *sender) prepare(out pipeline.Outbound) (*outgoing, pipeline.Outbound, []string, error) {
	chat, thread, err := target(out.Key)
	if err != nil {
		return nil, out, nil, err
	}
	o := &outgoing{chat: s.chatNow(chat), thread: thread}
	if n, err := strconv.Atoi(out.ReplyTo); err == nil && n > 0 && o.chat == chat {
		o.replyTo = n // (a message of a group that became a supergroup stayed behind)
	}
	if len(out.Choices) > 0 {
		o.markup = s.keyboard(out.Choices)
	}
	var parts []string
	if out.Plain {
		parts = format.SplitPlain(out.Text, format.Limit)
	} else {
		parts = format.Split(format.Render(out.Text), format.Limit)
	}
	if len(parts) == 0 && o.markup != nil {
		parts, out.Plain = []string{"Please choose:"}, true
	}
	return o, out, parts, nil
}

// sendParts sends parts[from:] of out as new messages and returns the last
// one's id. A part Telegram cannot parse is sent again as plain text.
func (s *sender) sendParts(ctx context.Context, o *outgoing, out pipeline.Outbound, parts []string, from int) (string, error) {
	var id string
	for i := from; i < len(parts); i++ {
		p := parts[i]
		first, last := i == 0, i == len(parts)-1
		mid, err := s.sendPart(ctx, o, p, !out.Plain, first, last)
		if err != nil && !out.Plain && isParseError(err) {
			s.log.Warn("Telegram could not parse the formatted text; sending it as plain text", "key", out.Key, "part", i+1, "err", err)
			mid, err = s.sendPlain(ctx, o, plainOf(out.Text, parts, i), first, last)
		}
		if err != nil {
			return id, s.sendError(out.Key, err)
		}
		id = mid
	}
	return id, nil
}

// plainOf is the plain text to send instead of parts[i] of Markdown md:
// the whole message as plain text when it is one part, else that part's own
// text (the parts before it were delivered).
func plainOf(md string, parts []string, i int) string {
	if len(parts) == 1 {
		return format.Plain(md)
	}
	return htmlText(parts[i])
}

// sendPlain sends text as plain messages.
func (s *sender) sendPlain(ctx context.Context, o *outgoing, text string, first, last bool) (string, error) {
	parts := format.SplitPlain(text, format.Limit)
	var id string
	for j, q := range parts {
		mid, err := s.sendPart(ctx, o, q, false, first && j == 0, last && j == len(parts)-1)
		if err != nil {
			return id, err
		}
		id = mid
	}
	return id, nil
}

// sendPart sends one message.
func (s *sender) sendPart(ctx context.Context, o *outgoing, text string, rich, first, last bool) (string, error) {
	p := &bot.SendMessageParams{ChatID: o.chat, MessageThreadID: o.thread, Text: text, LinkPreviewOptions: s.preview}
	if rich {
		p.ParseMode = models.ParseModeHTML
	}
	if first && o.replyTo != 0 {
		p.ReplyParameters = &models.ReplyParameters{MessageID: o.replyTo, AllowSendingWithoutReply: true}
	}
	if last && o.markup != nil {
		p.ReplyMarkup = o.markup
	}
	var msg *models.Message
	send := func(ctx context.Context) error {
		var err error
		msg, err = s.api.SendMessage(ctx, p)
		return err
	}
	err := s.call(ctx, o.chat, false, s.sendTimeout, send)
	if to := s.movedTo(o.chat, err); to != 0 {
		// The group became a supergroup: the message goes there (the
		// message replied to stayed in the old chat).
		o.chat, p.ChatID, p.ReplyParameters = to, to, nil
		err = s.call(ctx, o.chat, false, s.sendTimeout, send)
	}
	if err != nil {
		return "", err
	}
	if msg == nil {
		return "", nil
	}
	return strconv.Itoa(msg.ID), nil
}

// call runs fn, which posts into chat (an edit when edit is set), in the
// chat's next slot of Telegram's flood limits (pacer) and with a deadline.
// A 429 holds the whole chat for its retry_after, then the call is made
// again: however long Telegram asks to wait, the message is sent when it
// allows, never dropped (only ctx ending stops the wait). Failures that are
// likely transient (a 5xx answer, a broken connection, no answer within the
// deadline) are retried up to s.retries times with backoff. A call that
// timed out may have reached Telegram: retrying it risks a duplicate
// message, not retrying it loses one, and a reply the user never sees is the
// worse of the two.
func (s *sender) call(ctx context.Context, chat int64, edit bool, timeout time.Duration, fn func(ctx context.Context) error) error {
	for attempt := 0; ; {
		if !s.pace.wait(ctx, nil, chat, edit) {
			return ctx.Err()
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		err := fn(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			var tm *bot.TooManyRequestsError
			if errors.As(err, &tm) {
				// A 429 answered as ctx ended: the wait it asks for is what
				// ctx ended, not the 429.
				return fmt.Errorf("%w (while rate limited: %v)", ctx.Err(), err)
			}
			return err
		}
		if s.rateLimited(chat, err) {
			continue
		}
		if !transient(err) || attempt >= s.retries {
			return err
		}
		wait := backoff.Delay(s.retryBase, s.retryMax, attempt)
		attempt++
		s.log.Warn("Telegram call failed, retrying", "retry_in", wait.Round(time.Millisecond), "err", err)
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// rateLimited reports whether err is a 429, and then holds every call of
// the chat for its retry_after.
func (s *sender) rateLimited(chat int64, err error) bool {
	var tm *bot.TooManyRequestsError
	if !errors.As(err, &tm) {
		return false
	}
	wait := time.Duration(max(tm.RetryAfter, 1)) * s.retryUnit
	s.pace.block(chat, wait)
	s.log.Info("rate limited by Telegram, waiting", "chat", chat, "retry_after", tm.RetryAfter)
	return true
}

// transient reports a failure worth retrying: the Bot API answered 5xx,
// the connection broke, or no answer came in time.
func transient(err error) bool {
	var se *serverError
	var ue *url.Error
	return errors.As(err, &se) || errors.As(err, &ue) || errors.Is(err, io.ErrUnexpectedEOF)
}

// serverError is a 5xx answer of the Bot API (often an HTML page from its
// front end, which the library cannot decode). serverErrors turns it into a
// transport error so that it can be recognized.
type serverError struct {
	Code   int
	Status string
}

func (e *serverError) Error() string { return "the Bot API answered " + e.Status }

// serverErrors makes 5xx answers errors of the round trip.
type serverErrors struct{ next http.RoundTripper }

func (t serverErrors) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode < 500 {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return nil, &serverError{Code: resp.StatusCode, Status: resp.Status}
}

// sendError wraps a failed send; a 403 becomes ErrBlocked, logged at info.
func (s *sender) sendError(key pipeline.Key, err error) error {
	if errors.Is(err, bot.ErrorForbidden) {
		s.log.Info("cannot send: the user blocked the bot or it was removed from the chat", "key", key, "err", err)
		return fmt.Errorf("sending to %s: %w", key, ErrBlocked)
	}
	return fmt.Errorf("sending to %s: %w", key, err)
}

// isParseError reports Telegram's 400 "can't parse entities".
func isParseError(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(strings.ToLower(err.Error()), "can't parse entities")
}

// isNotModified reports Telegram's 400 "message is not modified".
func isNotModified(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(strings.ToLower(err.Error()), "message is not modified")
}

// Typing shows "typing…" in the conversation for a few seconds. It does not
// retry: a failing indicator must never hold up the reply.
func (s *sender) Typing(ctx context.Context, key pipeline.Key) error {
	chat, thread, err := target(key)
	if err != nil {
		return err
	}
	chat = s.chatNow(chat)
	ctx, cancel := context.WithTimeout(ctx, s.sendTimeout)
	defer cancel()
	_, err = s.api.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: chat, MessageThreadID: thread, Action: models.ChatActionTyping})
	if err != nil {
		return fmt.Errorf("typing in %s: %w", key, err)
	}
	return nil
}

// ShowWaitNote sends text (a slow answer's "still thinking" note) as a plain
// message, without retries; remove deletes it again.
func (s *sender) ShowWaitNote(ctx context.Context, key pipeline.Key, text string) (remove func(context.Context) error, err error) {
	chat, thread, err := target(key)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, s.sendTimeout)
	defer cancel()
	m, err := s.api.SendMessage(sctx, &bot.SendMessageParams{ChatID: chat, MessageThreadID: thread, Text: text})
	if err != nil {
		return nil, fmt.Errorf("showing a note in %s: %w", key, err)
	}
	return func(ctx context.Context) error {
		dctx, cancel := context.WithTimeout(ctx, s.sendTimeout)
		defer cancel()
		if _, err := s.api.DeleteMessage(dctx, &bot.DeleteMessageParams{ChatID: chat, MessageID: m.ID}); err != nil {
			return fmt.Errorf("deleting the note in %s: %w", key, err)
		}
		return nil
	}, nil
}

// Edit replaces the text of message id (as returned by Send). Text longer
// than one message is cut to its first part. "message is not modified" is
// not an error.
func (s *sender) Edit(ctx context.Context, key pipeline.Key, id, text string) error {
	chat, _, err := target(key)
	if err != nil {
		return err
	}
	msgID, err := strconv.Atoi(id)
	if err != nil || msgID <= 0 {
		return fmt.Errorf("telegram: editing in %s: %q is not a message id", key, id)
	}
	edit := func(text string, rich bool) error {
		p := &bot.EditMessageTextParams{ChatID: chat, MessageID: msgID, Text: text, LinkPreviewOptions: s.preview}
		if rich {
			p.ParseMode = models.ParseModeHTML
		}
		return s.call(ctx, chat, true, s.sendTimeout, func(ctx context.Context) error {
			_, err := s.api.EditMessageText(ctx, p)
			return err
		})
	}
	parts := format.Split(format.Render(text), format.Limit)
	if len(parts) == 0 {
		return nil
	}
	err = edit(parts[0], true)
	if err != nil && isParseError(err) {
		s.log.Warn("Telegram could not parse the formatted text; editing as plain text", "key", key, "err", err)
		if plain := format.SplitPlain(format.Plain(text), format.Limit); len(plain) > 0 {
			err = edit(plain[0], false)
		}
	}
	if err != nil && !isNotModified(err) {
		return s.sendError(key, err)
	}
	return nil
}

// SendFile sends a document with a plain-text caption (cut to Telegram's
// 1024 UTF-16 code units).
func (s *sender) SendFile(ctx context.Context, key pipeline.Key, f pipeline.File, caption string) error {
	chat, thread, err := target(key)
	if err != nil {
		return err
	}
	chat = s.chatNow(chat)
	name := f.Name
	if name == "" {
		name = "file"
	}
	caption = strings.TrimSpace(format.Plain(caption))
	if parts := format.SplitPlain(caption, captionLimit); len(parts) > 1 {
		// Room for the "…" (one UTF-16 unit, as Telegram counts).
		caption = format.SplitPlain(caption, captionLimit-1)[0] + "…"
	}
	err = s.call(ctx, chat, false, s.fileTimeout, func(ctx context.Context) error {
		_, err := s.api.SendDocument(ctx, &bot.SendDocumentParams{
			ChatID: chat, MessageThreadID: thread, Caption: caption,
			Document: &models.InputFileUpload{Filename: name, Data: bytes.NewReader(f.Data)},
		})
		return err
	})
	if err != nil {
		return s.sendError(key, err)
	}
	return nil
}

// inlineKeyboard is the reply_markup of a message with buttons, encoded by
// us: the library's InlineKeyboardButton sends "copy_text":{"text":""} with
// every button, which Telegram refuses (BUTTON_COPY_TEXT_INVALID) as soon as
// it stops checking callback_data first.
type inlineKeyboard struct {
	InlineKeyboard [][]inlineButton `json:"inline_keyboard"`
}

// inlineButton is a button that sends its callback_data when pressed.
type inlineButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

// keyboard lays out choices as inline buttons, one per row; nil when no
// choice has a label or data. A choice without label shows its data, one
// without data sends its label; one with neither is left out.
func (s *sender) keyboard(choices []pipeline.Choice) models.ReplyMarkup {
	kb := &inlineKeyboard{}
	for _, c := range choices {
		label, data := strings.TrimSpace(c.Label), c.Data
		if strings.TrimSpace(data) == "" {
			data = label
		}
		if label == "" {
			label = strings.TrimSpace(data)
		}
		if label == "" {
			continue
		}
		kb.InlineKeyboard = append(kb.InlineKeyboard, []inlineButton{{Text: label, CallbackData: s.data.short(data)}})
	}
	if len(kb.InlineKeyboard) == 0 {
		return nil
	}
	return kb
}

// htmlText is the plain text of a part of Telegram HTML: tags dropped, a
// link's address kept after its text, entities decoded.
func htmlText(s string) string {
	var b strings.Builder
	var href string
	var linkText strings.Builder
	inLink := false
	for len(s) > 0 {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(s)
			if inLink {
				linkText.WriteString(s)
			}
			break
		}
		b.WriteString(s[:i])
		if inLink {
			linkText.WriteString(s[:i])
		}
		j := strings.IndexByte(s[i:], '>')
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		tag := s[i+1 : i+j]
		s = s[i+j+1:]
		switch {
		case strings.HasPrefix(tag, "a "):
			inLink, href = true, attr(tag, "href")
			linkText.Reset()
		case tag == "/a":
			if inLink && href != "" && html.UnescapeString(linkText.String()) != href {
				b.WriteString(" (" + html.EscapeString(href) + ")")
			}
			inLink = false
		}
	}
	return html.UnescapeString(b.String())
}

// attr reads a double-quoted attribute of a tag, decoded.
func attr(tag, name string) string {
	_, v, ok := strings.Cut(tag, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, `"`)
	return html.UnescapeString(v)
}

// callbackData maps choice data longer than Telegram's 64 bytes of
// callback_data to short ids, and back when the button is pressed. The
// mapping lives in memory (the newest maxLongData entries).
type callbackData struct {
	mu    sync.Mutex
	long  map[string]string
	order []string
}

const (
	maxCallbackData = 64
	maxLongData     = 10000
	shortPrefix     = "~h:" // never the start of data we send as is
)

func newCallbackData() *callbackData { return &callbackData{long: map[string]string{}} }

// short returns data, or a short id standing for it when it does not fit.
func (c *callbackData) short(data string) string {
	if len(data) <= maxCallbackData && !strings.HasPrefix(data, shortPrefix) {
		return data
	}
	sum := sha256.Sum256([]byte(data))
	id := shortPrefix + base64.RawURLEncoding.EncodeToString(sum[:18])
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.long[id]; !ok {
		c.long[id] = data
		c.order = append(c.order, id)
		if len(c.order) > maxLongData {
			delete(c.long, c.order[0])
			c.order = c.order[1:]
		}
	}
	return id
}

// resolve returns the data a short id stands for (data itself otherwise).
func (c *callbackData) resolve(data string) string {
	if !strings.HasPrefix(data, shortPrefix) {
		return data
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if long, ok := c.long[data]; ok {
		return long
	}
	return data
}
