package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"
)

// fakeClient is a Client that records what the adapter sends and lets a
// test deliver hand-built events the way whatsmeow does: to every handler,
// one event at a time, reporting whether all of them succeeded (false: the
// message would not be acknowledged). Its connection behaves as
// whatsmeow's: a keepalive reconnect (keepaliveDrop, then reconnected)
// and a ban send no Disconnected event; only Connected follows a login.
// It stands for one linked account: reuse it across restarts with detach.
type fakeClient struct {
	t testing.TB

	deliverMu sync.Mutex // one event at a time, like whatsmeow's handler queue

	mu          sync.Mutex
	media       map[string][]byte // direct path → the media Download returns (addMedia)
	changed     chan struct{}     // closed and replaced on every recorded change
	me          Me
	session     bool
	connected   bool // the websocket is up and logged in
	connects    int
	disconnects int
	logins      int     // Connected events handled
	retries     int     // sends by the outbox's retries (see retrySender)
	connectErr  []error // returned by the next Connect calls, in order
	onConnect   []any   // events delivered by the next Connect calls (default: Connected)
	handlers    []func(evt any) bool
	lids        map[string]types.JID // LID user → phone JID
	sendErr     func(to types.JID, msg *waE2E.Message) error
	// dropAfterSend: the next sends reach WhatsApp, then the socket drops
	// before the answer (the send fails; the recipient has the message).
	dropAfterSend int
	// silent: the socket is up but WhatsApp answers nothing; a send hangs
	// until the connection is closed (whatsmeow then fails it).
	silent  bool
	blocked int // sends hanging on the silent socket

	sent        []sentMsg
	presences   []presence
	reads       []read
	uploads     [][]byte
	online      int      // SendPresence(available) calls
	offline     int      // SendPresence(unavailable) calls
	presenceLog []string // account presences and chat states, in order
}

type sentMsg struct {
	To  types.JID
	Msg *waE2E.Message
	ID  string
	At  time.Time
}

// Text is the text (or document caption) of the message.
func (s sentMsg) Text() string {
	switch {
	case s.Msg.GetConversation() != "":
		return s.Msg.GetConversation()
	case s.Msg.GetExtendedTextMessage() != nil:
		return s.Msg.GetExtendedTextMessage().GetText()
	case s.Msg.GetDocumentMessage() != nil:
		return s.Msg.GetDocumentMessage().GetCaption()
	}
	return ""
}

// Quoted is the id of the message it quotes ("" when none).
func (s sentMsg) Quoted() string {
	return s.Msg.GetExtendedTextMessage().GetContextInfo().GetStanzaID()
}

type presence struct {
	Chat  types.JID
	State types.ChatPresence
}

type read struct {
	IDs          []types.MessageID
	Chat, Sender types.JID
}

func newFakeClient(t testing.TB) *fakeClient {
	return &fakeClient{
		t: t, changed: make(chan struct{}), me: testMe, session: true,
		lids: map[string]types.JID{userLID: pnJID},
	}
}

var _ Client = (*fakeClient)(nil)

// notifyLocked wakes waiters; f.mu is held.
func (f *fakeClient) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// detach forgets the handlers of a stopped adapter and disconnects, as a
// process restart would; the account and the record stay.
func (f *fakeClient) detach() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers = nil
	f.connected = false
}

func (f *fakeClient) Connect() error {
	f.mu.Lock()
	f.connects++
	if len(f.connectErr) > 0 {
		err := f.connectErr[0]
		f.connectErr = f.connectErr[1:]
		f.notifyLocked()
		f.mu.Unlock()
		return err
	}
	var evt any = &events.Connected{}
	if len(f.onConnect) > 0 {
		evt = f.onConnect[0]
		f.onConnect = f.onConnect[1:]
	}
	if _, ok := evt.(*events.Connected); ok {
		f.connected, f.silent = true, false
	}
	f.notifyLocked()
	f.mu.Unlock()
	f.deliver(evt)
	if _, ok := evt.(*events.Connected); ok {
		f.mu.Lock()
		f.logins++
		f.notifyLocked()
		f.mu.Unlock()
	}
	return nil
}

func (f *fakeClient) Disconnect() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.connected = false
	f.disconnects++
	f.notifyLocked()
}

func (f *fakeClient) IsConnected() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.connected
}

func (f *fakeClient) IsLoggedIn() bool { return f.IsConnected() }

// keepaliveDrop is whatsmeow's keepalive reconnect beginning: the socket
// is closed, and no event says so.
func (f *fakeClient) keepaliveDrop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.connected = false
	f.notifyLocked()
}

// reconnected is whatsmeow's auto-reconnect succeeding: logged in again,
// then Connected.
func (f *fakeClient) reconnected() {
	f.mu.Lock()
	f.connected = true
	f.notifyLocked()
	f.mu.Unlock()
	f.deliver(&events.Connected{})
}

// delivered is what the recipients see: one message per id (a message sent
// again with the same id is shown once).
func (f *fakeClient) delivered() []sentMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string]bool{}
	var out []sentMsg
	for _, s := range f.sent {
		if !seen[s.ID] {
			seen[s.ID] = true
			out = append(out, s)
		}
	}
	return out
}

func (f *fakeClient) HasSession() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.session
}

func (f *fakeClient) Me() Me {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.me
}

func (f *fakeClient) PNForLID(_ context.Context, lid types.JID) (types.JID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lids[lid.User], nil
}

func (f *fakeClient) LIDForPN(_ context.Context, pn types.JID) (types.JID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for lid, p := range f.lids {
		if p.User == pn.User {
			return types.NewJID(lid, types.HiddenUserServer), nil
		}
	}
	return types.EmptyJID, nil
}

func (f *fakeClient) AddEventHandler(h func(evt any) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers = append(f.handlers, h)
}

func (f *fakeClient) SendMessage(ctx context.Context, to types.JID, msg *waE2E.Message, id types.MessageID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.connected {
		return whatsmeow.ErrNotConnected
	}
	if f.sendErr != nil {
		if err := f.sendErr(to, msg); err != nil {
			return err
		}
	}
	if id == "" {
		f.t.Error("a message was sent without an id")
	}
	if f.silent {
		f.blocked++
		f.notifyLocked()
		for f.connected && f.silent {
			ch := f.changed
			f.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
			}
			f.mu.Lock()
			if ctx.Err() != nil {
				break
			}
		}
		f.blocked--
		return fmt.Errorf("failed to get response: %w", whatsmeow.ErrNotConnected)
	}
	f.sent = append(f.sent, sentMsg{To: to, Msg: msg, ID: string(id), At: time.Now()})
	if f.dropAfterSend > 0 {
		f.dropAfterSend--
		f.connected = false // no event, as whatsmeow's keepalive reconnect
		f.notifyLocked()
		return fmt.Errorf("failed to send message node: %w", whatsmeow.ErrNotConnected)
	}
	f.notifyLocked()
	return nil
}

func (f *fakeClient) SendChatPresence(_ context.Context, chat types.JID, state types.ChatPresence) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.connected {
		return whatsmeow.ErrNotConnected
	}
	f.presences = append(f.presences, presence{Chat: chat, State: state})
	f.presenceLog = append(f.presenceLog, string(state))
	f.notifyLocked()
	return nil
}

func (f *fakeClient) SendPresence(_ context.Context, state types.Presence) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if state == types.PresenceAvailable {
		f.online++
	} else {
		f.offline++
	}
	f.presenceLog = append(f.presenceLog, string(state))
	f.notifyLocked()
	return nil
}

func (f *fakeClient) MarkRead(_ context.Context, ids []types.MessageID, _ time.Time, chat, sender types.JID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, read{IDs: ids, Chat: chat, Sender: sender})
	f.notifyLocked()
	return nil
}

// Download returns the media registered for the message's direct path
// (addMedia), as whatsmeow returns it decrypted.
func (f *fakeClient) Download(_ context.Context, msg whatsmeow.DownloadableMessage) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, ok := f.media[msg.GetDirectPath()]
	if !ok {
		return nil, errors.New("fake: no media at " + msg.GetDirectPath())
	}
	return data, nil
}

// addMedia makes data downloadable at path.
func (f *fakeClient) addMedia(path string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.media == nil {
		f.media = map[string][]byte{}
	}
	f.media[path] = data
}

func (f *fakeClient) Upload(_ context.Context, data []byte, kind whatsmeow.MediaType) (whatsmeow.UploadResponse, error) {
	if kind != whatsmeow.MediaDocument {
		return whatsmeow.UploadResponse{}, errors.New("fake: only documents")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.uploads = append(f.uploads, append([]byte(nil), data...))
	f.notifyLocked()
	return whatsmeow.UploadResponse{
		URL: "https://mmg.whatsapp.net/fake", DirectPath: "/fake", MediaKey: []byte("key"),
		FileEncSHA256: []byte("enc"), FileSHA256: []byte("sha"), FileLength: uint64(len(data)),
	}, nil
}

// deliver hands evt to the handlers as whatsmeow does and reports whether
// every one succeeded.
func (f *fakeClient) deliver(evt any) bool {
	f.deliverMu.Lock()
	defer f.deliverMu.Unlock()
	f.mu.Lock()
	hs := append([]func(any) bool(nil), f.handlers...)
	f.mu.Unlock()
	ok := true
	for _, h := range hs {
		if !h(evt) {
			ok = false
		}
	}
	return ok
}

// waitFor waits until cond (called with f.mu held) holds; it fails the
// test after a generous timeout.
func (f *fakeClient) waitFor(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		ok := cond()
		ch := f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			f.t.Fatalf("timed out waiting for %s; sent so far: %q", what, f.texts())
		}
	}
}

// waitSent waits for a sent message whose text satisfies match and returns it.
func (f *fakeClient) waitSent(what string, match func(s sentMsg) bool) sentMsg {
	f.t.Helper()
	var got sentMsg
	f.waitFor(what, func() bool {
		for _, s := range f.sent {
			if match(s) {
				got = s
				return true
			}
		}
		return false
	})
	return got
}

// texts lists the texts sent so far.
func (f *fakeClient) texts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, s := range f.sent {
		out = append(out, s.Text())
	}
	return out
}

// sentMsgs is a copy of everything sent.
func (f *fakeClient) sentMsgs() []sentMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sentMsg(nil), f.sent...)
}
