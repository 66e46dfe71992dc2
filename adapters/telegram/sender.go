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
// parse a part it is sent again as plain text. 429 answers are waited out
// (retry_after) within a budget per call; 403 (blocked, kicked) becomes
// ErrBlocked.
type sender struct {
	api         *bot.Bot
	log         *slog.Logger
	data        *callbackData
	rateWait    time.Duration // most time one Send waits for 429s in total
	retries     int           // retries of a call after a transient failure
	retryBase   time.Duration // backoff between those retries
	retryMax    time.Duration
	sendTimeout time.Duration // bound on each API call
	fileTimeout time.Duration // bound on each upload

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
	waited  time.Duration // 429 waits so far
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
	o := &outgoing{chat: chat, thread: thread}
	if n, err := strconv.Atoi(out.ReplyTo); err == nil && n > 0 {
		o.replyTo = n
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
	p := &bot.SendMessageParams{ChatID: o.chat, MessageThreadID: o.thread, Text: text}
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
	err := s.call(ctx, &o.waited, s.sendTimeout, func(ctx context.Context) error {
		var err error
		msg, err = s.api.SendMessage(ctx, p)
		return err
	})
	if err != nil {
		return "", err
	}
	if msg == nil {
		return "", nil
	}
	return strconv.Itoa(msg.ID), nil
}

// call runs fn with a deadline, waiting out 429 answers (retry_after) as
// long as the total wait stays within the budget, and retrying failures that
// are likely transient (a 5xx answer, a broken connection, no answer within
// the deadline) up to s.retries times with backoff. A call that timed out may
// have reached Telegram: retrying it risks a duplicate message, not retrying
// it loses one, and a reply the user never sees is the worse of the two.
func (s *sender) call(ctx context.Context, waited *time.Duration, timeout time.Duration, fn func(ctx context.Context) error) error {
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		err := fn(cctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		var tm *bot.TooManyRequestsError
		if errors.As(err, &tm) {
			wait := time.Duration(max(tm.RetryAfter, 1)) * time.Second
			if *waited+wait > s.rateWait {
				return fmt.Errorf("rate limited by Telegram for longer than %s: %w", s.rateWait, err)
			}
			*waited += wait
			s.log.Info("rate limited by Telegram, waiting", "retry_after", wait)
			if !sleep(ctx, wait) {
				return ctx.Err()
			}
			continue
		}
		if !transient(err) || attempt >= s.retries {
			return err
		}
		wait := backoff.Delay(s.retryBase, s.retryMax, attempt)
		s.log.Warn("Telegram call failed, retrying", "retry_in", wait.Round(time.Millisecond), "err", err)
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
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
	var waited time.Duration
	edit := func(text string, rich bool) error {
		p := &bot.EditMessageTextParams{ChatID: chat, MessageID: msgID, Text: text}
		if rich {
			p.ParseMode = models.ParseModeHTML
		}
		return s.call(ctx, &waited, s.sendTimeout, func(ctx context.Context) error {
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
// 1024 characters).
func (s *sender) SendFile(ctx context.Context, key pipeline.Key, f pipeline.File, caption string) error {
	chat, thread, err := target(key)
	if err != nil {
		return err
	}
	name := f.Name
	if name == "" {
		name = "file"
	}
	caption = strings.TrimSpace(format.Plain(caption))
	if parts := format.SplitPlain(caption, captionLimit); len(parts) > 1 {
		caption = truncateRunes(parts[0], captionLimit-1) + "…"
	}
	var waited time.Duration
	err = s.call(ctx, &waited, s.fileTimeout, func(ctx context.Context) error {
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

// keyboard lays out choices as inline buttons, one per row.
func (s *sender) keyboard(choices []pipeline.Choice) *models.InlineKeyboardMarkup {
	kb := &models.InlineKeyboardMarkup{}
	for _, c := range choices {
		data := c.Data
		if data == "" {
			data = c.Label
		}
		label := c.Label
		if label == "" {
			label = data
		}
		kb.InlineKeyboard = append(kb.InlineKeyboard, []models.InlineKeyboardButton{{Text: label, CallbackData: s.data.short(data)}})
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
