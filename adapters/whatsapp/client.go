package whatsapp

import (
	"context"
	"errors"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
)

// Client is the part of *whatsmeow.Client the adapter uses, and nothing
// more: the real one wraps whatsmeow (newClient), tests use a fake that
// records what was sent and delivers hand-built events.
type Client interface {
	// Connect opens the connection and logs in with the stored session. It
	// returns once the websocket is up; Connected (or LoggedOut,
	// ClientOutdated…) follows as an event. Network errors are retried by
	// the library in the background (auto-reconnect).
	Connect() error
	// Disconnect closes the connection; no auto-reconnect follows.
	Disconnect()
	// IsConnected reports whether the websocket is up. whatsmeow's
	// keepalive reconnect takes it down and up again without any
	// Disconnected event: ask, don't track events.
	IsConnected() bool
	// IsLoggedIn reports whether the connection is logged in (sends work
	// only while IsConnected and IsLoggedIn).
	IsLoggedIn() bool
	// HasSession reports whether a linked device is stored (login done).
	HasSession() bool
	// Me is the linked account (zero before login).
	Me() Me
	// PNForLID returns the phone-number JID of a @lid user, or the empty
	// JID when the mapping is not known.
	PNForLID(ctx context.Context, lid types.JID) (types.JID, error)
	// LIDForPN returns the @lid JID of a phone-number user, or the empty
	// JID when the mapping is not known.
	LIDForPN(ctx context.Context, pn types.JID) (types.JID, error)
	// AddEventHandler registers h for every event. Handlers run one at a
	// time for messages; connection events may come concurrently. When h
	// returns false for a message, it is not acknowledged, so WhatsApp
	// delivers it again.
	AddEventHandler(h func(evt any) bool)
	// SendMessage sends msg to a chat with the message id id, so that a
	// retry of the same message carries the same id (the recipient shows
	// it once).
	SendMessage(ctx context.Context, to types.JID, msg *waE2E.Message, id types.MessageID) error
	// SendChatPresence shows or clears "typing…" in a chat.
	SendChatPresence(ctx context.Context, chat types.JID, state types.ChatPresence) error
	// SendPresence marks the account online (needed for typing to show).
	SendPresence(ctx context.Context, state types.Presence) error
	// MarkRead sends read receipts for messages of one sender in a chat.
	MarkRead(ctx context.Context, ids []types.MessageID, at time.Time, chat, sender types.JID) error
	// Upload encrypts and uploads media for a message.
	Upload(ctx context.Context, data []byte, kind whatsmeow.MediaType) (whatsmeow.UploadResponse, error)
	// Download fetches and decrypts the media of a received message.
	Download(ctx context.Context, msg whatsmeow.DownloadableMessage) ([]byte, error)
}

// Me is the bot's own WhatsApp account.
type Me struct {
	PN   types.JID // phone-number JID without device, "4915112345678@s.whatsapp.net"
	LID  types.JID // its @lid identity without device; empty when not known
	Name string    // the account's push name; "" when not known
}

// is reports whether j names the bot (by phone number or LID, any device).
func (me Me) is(j types.JID) bool {
	switch {
	case j.User == "":
		return false
	case j.Server == types.DefaultUserServer:
		return me.PN.User != "" && j.User == me.PN.User
	case j.Server == types.HiddenUserServer:
		return me.LID.User != "" && j.User == me.LID.User
	}
	return false
}

// waClient is the real Client.
type waClient struct {
	c *whatsmeow.Client
}

var _ Client = (*waClient)(nil)

func (w *waClient) Connect() error    { return w.c.Connect() }
func (w *waClient) Disconnect()       { w.c.Disconnect() }
func (w *waClient) IsConnected() bool { return w.c.IsConnected() }
func (w *waClient) IsLoggedIn() bool  { return w.c.IsLoggedIn() }
func (w *waClient) HasSession() bool  { return w.c.Store.ID != nil }

func (w *waClient) Me() Me {
	s := w.c.Store
	me := Me{LID: s.GetLID().ToNonAD(), Name: s.PushName}
	if id := s.GetJID(); !id.IsEmpty() {
		me.PN = id.ToNonAD()
	}
	if me.LID.User == "" {
		me.LID = types.EmptyJID
	}
	return me
}

func (w *waClient) PNForLID(ctx context.Context, lid types.JID) (types.JID, error) {
	if w.c.Store.LIDs == nil {
		return types.EmptyJID, errors.New("no LID store")
	}
	return w.c.Store.LIDs.GetPNForLID(ctx, lid)
}

func (w *waClient) LIDForPN(ctx context.Context, pn types.JID) (types.JID, error) {
	if w.c.Store.LIDs == nil {
		return types.EmptyJID, errors.New("no LID store")
	}
	return w.c.Store.LIDs.GetLIDForPN(ctx, pn)
}

func (w *waClient) AddEventHandler(h func(evt any) bool) {
	w.c.AddEventHandlerWithSuccessStatus(h)
}

func (w *waClient) SendMessage(ctx context.Context, to types.JID, msg *waE2E.Message, id types.MessageID) error {
	_, err := w.c.SendMessage(ctx, to, msg, whatsmeow.SendRequestExtra{ID: id})
	return err
}

func (w *waClient) SendChatPresence(ctx context.Context, chat types.JID, state types.ChatPresence) error {
	return w.c.SendChatPresence(ctx, chat, state, types.ChatPresenceMediaText)
}

func (w *waClient) SendPresence(ctx context.Context, state types.Presence) error {
	return w.c.SendPresence(ctx, state)
}

func (w *waClient) MarkRead(ctx context.Context, ids []types.MessageID, at time.Time, chat, sender types.JID) error {
	return w.c.MarkRead(ctx, ids, at, chat, sender)
}

func (w *waClient) Upload(ctx context.Context, data []byte, kind whatsmeow.MediaType) (whatsmeow.UploadResponse, error) {
	return w.c.Upload(ctx, data, kind)
}

func (w *waClient) Download(ctx context.Context, msg whatsmeow.DownloadableMessage) ([]byte, error) {
	return w.c.Download(ctx, msg)
}
