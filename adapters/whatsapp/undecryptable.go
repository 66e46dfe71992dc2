package whatsapp

import (
	"context"
	"sync"
	"time"

	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"

	"github.com/recallbot/recall/pipeline"
)

// UnreadableReply is sent when a direct message could not be decrypted and
// no readable copy came (whatsmeow asks the sender's phone to send it
// again; that usually works within seconds).
const UnreadableReply = "I couldn't read your last message, please send it again."

// undecryptableWait is how long a readable copy of an undecryptable
// message is waited for before the sender is asked to send it again.
const undecryptableWait = 2 * time.Minute

// unreadable tracks direct messages that could not be decrypted, until a
// readable copy arrives or the sender is told. Bounded by recentMax.
type unreadable struct {
	mu      sync.Mutex
	pending map[msgRef]func() bool // the timer's Stop
}

// onUndecryptable starts waiting for a readable copy of a direct message
// from an allowed sender; when none comes in time the sender is asked to
// send it again.
func (a *Adapter) onUndecryptable(ctx context.Context, e *events.UndecryptableMessage) {
	info := e.Info
	a.log.Warn("a message could not be decrypted; WhatsApp asks the sender's phone to send it again",
		"chat", info.Chat.String(), "msg_id", info.ID)
	if info.IsFromMe || info.IsGroup || e.UnavailableType == events.UnavailableTypeViewOnce ||
		(info.Chat.Server != types.DefaultUserServer && info.Chat.Server != types.HiddenUserServer) {
		return
	}
	sender := phoneJID(info.Sender.ToNonAD(), &info, a.lidMapper(ctx))
	if a.opts.Allowed != nil && !a.opts.Allowed(Channel+":"+senderID(sender)) {
		return
	}
	ref := msgRef{chat: info.Chat.ToNonAD().String(), id: info.ID}
	key := pipeline.Key{Channel: Channel, Chat: phoneJID(info.Chat.ToNonAD(), &info, a.lidMapper(ctx)).String()}
	a.unread.mu.Lock()
	defer a.unread.mu.Unlock()
	if a.unread.pending == nil {
		a.unread.pending = map[msgRef]func() bool{}
	}
	if _, ok := a.unread.pending[ref]; ok || len(a.unread.pending) >= recentMax {
		return
	}
	a.unread.pending[ref] = a.afterFunc(a.undecryptWait, func() {
		a.unread.mu.Lock()
		_, still := a.unread.pending[ref]
		delete(a.unread.pending, ref)
		a.unread.mu.Unlock()
		if !still {
			return
		}
		a.goBG(func() {
			sctx, cancel := context.WithTimeout(context.Background(), a.sendWait+a.callTimeout)
			defer cancel()
			a.log.Warn("no readable copy of an undecryptable message came; asking the sender to send it again", "key", key, "msg_id", info.ID)
			if _, err := a.Send(sctx, pipeline.Outbound{Key: key, Text: UnreadableReply, Plain: true, ReplyTo: info.ID}); err != nil {
				a.log.Warn("asking for an unreadable message again failed", "key", key, "err", err)
			}
		})
	})
}

// readable notes that a message arrived decrypted: nobody is asked for it.
func (a *Adapter) readable(info types.MessageInfo) {
	ref := msgRef{chat: info.Chat.ToNonAD().String(), id: info.ID}
	a.unread.mu.Lock()
	defer a.unread.mu.Unlock()
	if stop, ok := a.unread.pending[ref]; ok {
		stop()
		delete(a.unread.pending, ref)
	}
}

// stopUnreadable cancels every wait (the adapter is closing).
func (a *Adapter) stopUnreadable() {
	a.unread.mu.Lock()
	defer a.unread.mu.Unlock()
	for ref, stop := range a.unread.pending {
		stop()
		delete(a.unread.pending, ref)
	}
}
