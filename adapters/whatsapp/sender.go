package whatsapp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"google.golang.org/protobuf/proto"

	"github.com/recallbot/recall/pipeline"
)

var (
	_ pipeline.Sender     = (*Adapter)(nil)
	_ pipeline.Typer      = (*Adapter)(nil)
	_ pipeline.Chooser    = (*Adapter)(nil)
	_ pipeline.FileSender = (*Adapter)(nil)
)

// quoteTextMax is how much of a user's message a quoted reply repeats.
const quoteTextMax = 200

// quote is what a reply needs to quote a user's message in a group.
type quote struct {
	sender string // the author's JID as WhatsApp addressed it
	text   string
}

// msgRef names a message in a chat.
type msgRef struct {
	chat string // pipeline.Key.Chat
	id   string
}

// Sender is where answers go: pass it with every message submitted to the
// pipeline, including messages resubmitted at start (chat.Pending). It is
// the Adapter itself: pipeline.Sender, Typer, Chooser (no buttons) and
// FileSender.
func (a *Adapter) Sender() pipeline.Sender { return a }

// Buttons reports false: WhatsApp has no buttons for this kind of account,
// so choices are sent as a numbered list and answered with a number
// (pipeline.WithChoices, pipeline.PickChoice).
func (a *Adapter) Buttons() bool { return false }

// Send renders out's Markdown for WhatsApp (or, with Plain, sends the text
// as it is, its marker characters made inert), splits it into messages of
// at most SplitLimit characters, and sends them in order. In a group the
// first one quotes the message it answers (when that message arrived in
// this process). It waits for the connection while WhatsApp is reconnecting
// (until ctx ends, at most 2 minutes). Each part has one message id, the
// same on every attempt and, for a reply, derived from the reply itself
// (partID), so a send retried after a dropped socket, by the outbox or
// after a restart shows once. A send that could not reach WhatsApp fails
// with pipeline.ErrNotDelivered (the outbox sends it again later). It
// returns the id of the last message sent, and clears the typing
// indicator.
func (a *Adapter) Send(ctx context.Context, out pipeline.Outbound) (string, error) {
	chat, err := chatJID(out.Key)
	if err != nil {
		return "", err
	}
	out = pipeline.WithChoices(a, out)
	parts := a.render(out.Text, out.Plain)
	if len(parts) == 0 {
		return "", fmt.Errorf("whatsapp: nothing to send to %s (empty text)", out.Key)
	}
	defer a.stopTyping(out.Key, chat)
	var id string
	for i, p := range parts {
		var q *quote
		if i == 0 && out.ReplyTo != "" && chat.Server == types.GroupServer {
			if v, ok := a.quotes.get(msgRef{chat: out.Key.Chat, id: out.ReplyTo}); ok {
				q = &v
			}
		}
		if err := a.waitPace(ctx, i); err != nil {
			return id, err
		}
		mid := partID(chat, out.ReplyTo, i, p)
		msg := textMessage(p, out.ReplyTo, q, a.expirationOf(chat))
		if err := a.send(ctx, chat, msg, mid); err != nil {
			return id, fmt.Errorf("whatsapp: sending part %d of %d to %s: %w", i+1, len(parts), out.Key, err)
		}
		a.sentMsgs.add(string(mid), msg)
		id = string(mid)
	}
	return id, nil
}

// waitPace waits before part i of a message: the gap between parts and
// the global budget.
func (a *Adapter) waitPace(ctx context.Context, i int) error {
	d := max(a.gap(i), a.pace.reserve(a.now()))
	if d > 0 && !a.pause(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// partID is the message id of part i of a reply to replyTo: derived from
// the chat, the message answered, the part's place and its text, so that
// the same reply sent again (a retry, the outbox after a restart) carries
// the same id and WhatsApp shows it once. Without replyTo the id is random.
// Its shape is whatsmeow's: "3EB0" and 18 hex digits.
// randomID is a message id for a send not repeated with the same id.
func randomID() types.MessageID {
	//lint:ignore SA1019 the client's GenerateMessageID needs the logged-in client behind our narrow interface; an id only has to be unique
	return whatsmeow.GenerateMessageID()
}

func partID(chat types.JID, replyTo string, i int, text string) types.MessageID {
	if replyTo == "" {
		return randomID()
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00", chat.String(), replyTo, i)
	h.Write([]byte(text))
	return types.MessageID(whatsmeow.WebMessageIDPrefix + strings.ToUpper(hex.EncodeToString(h.Sum(nil)[:9])))
}

// render formats text into the messages to send.
func (a *Adapter) render(text string, plain bool) []string {
	if plain {
		return formatPlain(text, a.opts.SplitLimit)
	}
	return formatMarkdown(text, a.opts.SplitLimit)
}

// sendAttempts is how many times one message is tried before the send
// fails (the outbox tries again later).
const sendAttempts = 3

// send sends one message with id, waiting for the connection first. When
// the send fails because the connection dropped (or the socket went
// silent), it waits for the connection and tries again with the same id.
// A failure that is the connection's wraps pipeline.ErrNotDelivered.
func (a *Adapter) send(ctx context.Context, chat types.JID, msg *waE2E.Message, id types.MessageID) error {
	for attempt := 0; ; attempt++ {
		if err := a.waitConnected(ctx); err != nil {
			if errors.Is(err, ErrNotConnected) || errors.Is(err, ErrClosed) {
				return fmt.Errorf("%w: %w", err, pipeline.ErrNotDelivered)
			}
			return err
		}
		sctx, cancel := context.WithTimeout(ctx, a.callTimeout)
		err := a.client.SendMessage(sctx, chat, msg, id)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		if !a.connectionFault(err) {
			return err
		}
		if attempt+1 >= sendAttempts {
			return fmt.Errorf("%w: %w", err, pipeline.ErrNotDelivered)
		}
		a.log.Warn("sending failed on a broken connection; trying again with the same message id once connected",
			"chat", chat.String(), "msg_id", id, "err", err)
		if a.ready() && !sleep(ctx, a.backoff(attempt)) {
			return ctx.Err()
		}
	}
}

// connectionFault reports whether a send failed because of the connection
// (dropped, silent, timed out), not because WhatsApp refused the message.
func (a *Adapter) connectionFault(err error) bool {
	return !a.ready() || errors.Is(err, whatsmeow.ErrNotConnected) || errors.Is(err, whatsmeow.ErrIQTimedOut) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, whatsmeow.ErrNotLoggedIn)
}

// textMessage builds a text message; with q it quotes the message
// replyTo; with a disappearing-messages timer (expiration, seconds) it
// carries it, as the phone's own messages in that chat do.
func textMessage(text, replyTo string, q *quote, expiration uint32) *waE2E.Message {
	if q == nil && expiration == 0 {
		return &waE2E.Message{Conversation: proto.String(text)}
	}
	ci := &waE2E.ContextInfo{}
	if q != nil {
		ci.StanzaID = proto.String(replyTo)
		ci.Participant = proto.String(q.sender)
		ci.QuotedMessage = &waE2E.Message{Conversation: proto.String(q.text)}
	}
	if expiration > 0 {
		ci.Expiration = proto.Uint32(expiration)
	}
	return &waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{Text: proto.String(text), ContextInfo: ci}}
}

// expirationOf is the disappearing-messages timer of a chat (seconds; 0
// when off or not known), as the last message from it carried.
func (a *Adapter) expirationOf(chat types.JID) uint32 {
	v, _ := a.timers.get(chat.String())
	return v
}

// typingEvery is how often "typing…" is sent again in one conversation:
// WhatsApp shows it for about 25 seconds, so more often is only noise.
const typingEvery = 10 * time.Second

// Typing shows "typing…" in the conversation (WhatsApp shows it for about
// 25 seconds, or until a message arrives); Send clears it. Calls closer
// than typingEvery send nothing again. The account is "available" only
// while it types (WhatsApp shows typing only then), "unavailable"
// otherwise, so the phone keeps getting its notifications. It does not
// wait for a connection: while disconnected it fails at once.
func (a *Adapter) Typing(ctx context.Context, key pipeline.Key) error {
	chat, err := chatJID(key)
	if err != nil {
		return err
	}
	if a.isClosed() || !a.ready() {
		return ErrNotConnected
	}
	now := a.now()
	a.typingMu.Lock()
	last, was := a.typing[key]
	if was && now.Sub(last) < typingEvery {
		a.typingMu.Unlock()
		return nil
	}
	a.typing[key] = now
	goOnline := !a.online
	a.online = true
	a.typingMu.Unlock()
	if goOnline {
		if err := a.client.SendPresence(ctx, types.PresenceAvailable); err != nil {
			a.log.Debug("marking the account available for typing failed", "err", err)
		}
	}
	if err := a.client.SendChatPresence(ctx, chat, types.ChatPresenceComposing); err != nil {
		return fmt.Errorf("whatsapp: typing in %s: %w", key, err)
	}
	return nil
}

// stopTyping sends "paused" when typing was shown in the conversation,
// and "unavailable" when no conversation is typing any more.
func (a *Adapter) stopTyping(key pipeline.Key, chat types.JID) {
	a.typingMu.Lock()
	_, was := a.typing[key]
	delete(a.typing, key)
	goOffline := was && a.online && len(a.typing) == 0
	if goOffline {
		a.online = false
	}
	a.typingMu.Unlock()
	if !was || !a.ready() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.client.SendChatPresence(ctx, chat, types.ChatPresencePaused); err != nil {
		a.log.Debug("clearing the typing indicator failed", "key", key, "err", err)
	}
	if goOffline {
		if err := a.client.SendPresence(ctx, types.PresenceUnavailable); err != nil {
			a.log.Debug("marking the account unavailable failed", "err", err)
		}
	}
}

// SendFile uploads f and sends it as a document (name and MIME type kept;
// an /export is application/json). A caption longer than SplitLimit goes on
// in text messages after the document.
func (a *Adapter) SendFile(ctx context.Context, key pipeline.Key, f pipeline.File, caption string) error {
	chat, err := chatJID(key)
	if err != nil {
		return err
	}
	if err := a.waitConnected(ctx); err != nil {
		return err
	}
	uctx, cancel := context.WithTimeout(ctx, 2*a.callTimeout)
	up, err := a.client.Upload(uctx, f.Data, whatsmeow.MediaDocument)
	cancel()
	if err != nil {
		return fmt.Errorf("whatsapp: uploading %s for %s: %w", f.Name, key, err)
	}
	mime := f.MIME
	if mime == "" {
		mime = "application/octet-stream"
	}
	name := f.Name
	if name == "" {
		name = "file"
	}
	var parts []string
	if strings.TrimSpace(caption) != "" {
		parts = a.render(caption, false)
	}
	doc := &waE2E.DocumentMessage{
		URL:               proto.String(up.URL),
		DirectPath:        proto.String(up.DirectPath),
		MediaKey:          up.MediaKey,
		FileEncSHA256:     up.FileEncSHA256,
		FileSHA256:        up.FileSHA256,
		FileLength:        proto.Uint64(up.FileLength),
		Mimetype:          proto.String(mime),
		FileName:          proto.String(name),
		Title:             proto.String(name),
		MediaKeyTimestamp: proto.Int64(a.now().Unix()),
	}
	if len(parts) > 0 {
		doc.Caption = proto.String(parts[0])
		parts = parts[1:]
	}
	if exp := a.expirationOf(chat); exp > 0 {
		doc.ContextInfo = &waE2E.ContextInfo{Expiration: proto.Uint32(exp)}
	}
	if err := a.waitPace(ctx, 0); err != nil {
		return err
	}
	if err := a.send(ctx, chat, &waE2E.Message{DocumentMessage: doc}, randomID()); err != nil {
		return fmt.Errorf("whatsapp: sending %s to %s: %w", name, key, err)
	}
	for i, p := range parts {
		if err := a.waitPace(ctx, i+1); err != nil {
			return err
		}
		if err := a.send(ctx, chat, textMessage(p, "", nil, a.expirationOf(chat)), randomID()); err != nil {
			return fmt.Errorf("whatsapp: sending the caption of %s to %s: %w", name, key, err)
		}
	}
	return nil
}

// chatJID is the WhatsApp chat of a conversation key.
func chatJID(key pipeline.Key) (types.JID, error) {
	if key.Channel != Channel {
		return types.EmptyJID, fmt.Errorf("whatsapp: %s is not a WhatsApp conversation", key)
	}
	j, err := types.ParseJID(key.Chat)
	if err != nil {
		return types.EmptyJID, fmt.Errorf("whatsapp: bad chat in %s: %w", key, err)
	}
	switch j.Server {
	case types.DefaultUserServer, types.HiddenUserServer, types.GroupServer:
		return j.ToNonAD(), nil
	}
	return types.EmptyJID, fmt.Errorf("whatsapp: %s is not a chat the bot can write to", key)
}

// shorten cuts s to at most n runes.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// connState wakes senders waiting for the connection. The state itself is
// whatsmeow's (Adapter.ready): events only say when to look again, since
// a keepalive reconnect sends none.
type connState struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every connection event
	closed  chan struct{} // closed by Close
	once    sync.Once
}

func newConnState() *connState {
	return &connState{changed: make(chan struct{}), closed: make(chan struct{})}
}

// poke wakes the waiters.
func (c *connState) poke() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *connState) wake() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

func (c *connState) close() { c.once.Do(func() { close(c.closed) }) }

// connPoll is how often a waiting send looks at the connection between
// events.
const connPoll = 250 * time.Millisecond

// ready reports whether sends can go out now: whatsmeow's own state.
func (a *Adapter) ready() bool { return a.client.IsConnected() && a.client.IsLoggedIn() }

// waitConnected waits until the client is connected and logged in (at
// most sendWait): nil, ErrClosed after Close, ctx's error, or
// ErrNotConnected.
func (a *Adapter) waitConnected(ctx context.Context) error {
	deadline := time.NewTimer(a.sendWait)
	defer deadline.Stop()
	tick := time.NewTicker(connPoll)
	defer tick.Stop()
	for {
		wake := a.conn.wake()
		select {
		case <-a.conn.closed:
			return ErrClosed
		default:
		}
		if a.ready() {
			return nil
		}
		select {
		case <-wake:
		case <-tick.C:
		case <-a.conn.closed:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("%w (waited %s)", ErrNotConnected, a.sendWait)
		}
	}
}
