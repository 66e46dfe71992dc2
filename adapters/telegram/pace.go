package telegram

import (
	"context"
	"sync"
	"time"
)

// Telegram's flood limits, as its FAQ states them: about one message per
// second in a chat, about 20 messages a minute in a group. Edits count as
// messages; edits of one message in a group are held further apart, so a
// streamed reply does not eat the group's minute.
const (
	DefaultChatEvery      = time.Second     // least time between two calls in one chat
	DefaultGroupEditEvery = 3 * time.Second // least time between two edits in one group
	DefaultGroupPerMinute = 20              // messages and edits per minute in one group
)

// maxPacedChats bounds the pacer's memory: past it, chats with nothing
// pending are forgotten.
const maxPacedChats = 10000

// pacer keeps the calls that post into a chat (messages, edits, drafts,
// documents) within Telegram's flood limits: one pacer per adapter, one
// schedule per chat, shared by the chat's topics, its streams and its
// sends. A 429's retry_after holds every call of the chat until it passed.
type pacer struct {
	every      time.Duration // per chat
	groupEdit  time.Duration // between edits in a group
	groupLimit int           // calls per groupWindow in a group
	window     time.Duration

	// granted, when set (tests), is told every slot a call went out in.
	granted func(chat int64, at time.Time, edit bool)

	mu    sync.Mutex
	chats map[int64]*chatPace
}

type chatPace struct {
	next     time.Time   // earliest next call
	nextEdit time.Time   // groups: earliest next edit
	slots    []time.Time // groups: the calls of the last window, oldest first
	blocked  time.Time   // a 429 asked to wait until then
}

func newPacer() *pacer {
	return &pacer{every: DefaultChatEvery, groupEdit: DefaultGroupEditEvery, groupLimit: DefaultGroupPerMinute,
		window: time.Minute, chats: map[int64]*chatPace{}}
}

// isGroup reports whether a chat id is a group's (groups and supergroups
// have negative ids).
func isGroup(chat int64) bool { return chat < 0 }

// booking is a reserved slot, and what the chat's schedule was before it
// (to give the slot back).
type booking struct {
	chat               int64
	at                 time.Time
	prevNext, prevEdit time.Time
}

// reserve books the chat's next slot for a call (an edit when edit is set)
// and returns when it may go. Slots are handed out in order, so concurrent
// callers queue.
func (p *pacer) reserve(chat int64, edit bool) time.Time { return p.book(chat, edit).at }

// cancel gives an unused slot back when no later slot was booked since.
func (p *pacer) cancel(b booking) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.chats[b.chat]
	if c == nil || !c.next.Equal(b.at.Add(p.every)) {
		return
	}
	c.next, c.nextEdit = b.prevNext, b.prevEdit
	if n := len(c.slots); n > 0 && c.slots[n-1].Equal(b.at) {
		c.slots = c.slots[:n-1]
	}
}

func (p *pacer) book(chat int64, edit bool) booking {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.chats[chat]
	if c == nil {
		if len(p.chats) >= maxPacedChats {
			p.forgetLocked(now)
		}
		c = &chatPace{}
		p.chats[chat] = c
	}
	b := booking{chat: chat, prevNext: c.next, prevEdit: c.nextEdit}
	t := latest(now, c.next, c.blocked)
	if isGroup(chat) {
		if edit {
			t = latest(t, c.nextEdit)
		}
		keep := c.slots[:0]
		for _, s := range c.slots {
			if s.After(t.Add(-p.window)) {
				keep = append(keep, s)
			}
		}
		c.slots = keep
		if p.groupLimit > 0 && len(c.slots) >= p.groupLimit {
			t = latest(t, c.slots[len(c.slots)-p.groupLimit].Add(p.window))
		}
		c.slots = append(c.slots, t)
		if edit {
			c.nextEdit = t.Add(p.groupEdit)
		}
	}
	c.next = t.Add(p.every)
	b.at = t
	return b
}

// block holds every call of the chat for d (a 429's retry_after).
func (p *pacer) block(chat int64, d time.Duration) {
	until := time.Now().Add(d)
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.chats[chat]
	if c == nil {
		c = &chatPace{}
		p.chats[chat] = c
	}
	c.blocked = latest(c.blocked, until)
}

// blockedUntil is when the chat's 429 wait ends (zero when none).
func (p *pacer) blockedUntil(chat int64) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.chats[chat]; c != nil {
		return c.blocked
	}
	return time.Time{}
}

// wait books a slot and waits for it, and for a 429 met meanwhile; false
// when ctx ended or stop was closed first (the slot is then given back).
func (p *pacer) wait(ctx context.Context, stop <-chan struct{}, chat int64, edit bool) bool {
	b := p.book(chat, edit)
	for {
		d := time.Until(latest(b.at, p.blockedUntil(chat)))
		if d <= 0 {
			if p.granted != nil {
				p.granted(chat, b.at, edit)
			}
			return true
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			p.cancel(b)
			return false
		case <-stop:
			t.Stop()
			p.cancel(b)
			return false
		}
	}
}

// forgetLocked drops the chats with nothing pending.
func (p *pacer) forgetLocked(now time.Time) {
	for id, c := range p.chats {
		if c.next.Before(now) && c.blocked.Before(now) && c.nextEdit.Before(now) &&
			(len(c.slots) == 0 || c.slots[len(c.slots)-1].Before(now.Add(-p.window))) {
			delete(p.chats, id)
		}
	}
}

func latest(t time.Time, others ...time.Time) time.Time {
	for _, o := range others {
		if o.After(t) {
			t = o
		}
	}
	return t
}
