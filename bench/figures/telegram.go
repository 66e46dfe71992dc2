package figures

import (
	"sync"
	"time"

	"github.com/recallbot/recall/adapters/telegram/telegramtest"
)

// FakeTelegram is the fake Bot API (telegramtest.Server) on 127.0.0.1 for
// the real bot, with users who talk to the bot in private chats, each one
// message at a time: a user's next message is queued when the bot answers
// the previous one, until the user has had its turns. Give the bot URL and
// Token; Close stops it.
type FakeTelegram struct {
	*telegramtest.Server
	// Think is how long a user waits after a reply before the next message
	// (0: at once). A reply sooner than about a second after the previous
	// one in a chat waits for Telegram's flood limit, which a latency
	// figure must not measure.
	Think time.Duration

	mu      sync.Mutex
	users   map[int64]*fakeUser
	pending int // users who still expect a reply
	done    chan struct{}
	others  int // messages that answered no user message
}

type fakeUser struct {
	texts   []string
	sent    int // messages sent so far
	lastMsg int // message id of the last one
	replies int
	sentAt  time.Time       // of the last message
	waited  []time.Duration // per message: from sending it to the bot's reply
}

// StartFakeTelegram starts the server; Close stops it.
func StartFakeTelegram() *FakeTelegram {
	f := &FakeTelegram{users: map[int64]*fakeUser{}}
	f.Server = telegramtest.Start(telegramtest.Options{OnSend: f.answered})
	return f
}

// Converse starts conversations: user ids[i] sends texts[i] one at a time,
// each after the bot answered the previous one. The returned channel is
// closed when every user had a reply to every message.
func (f *FakeTelegram) Converse(ids []int64, texts [][]string) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done = make(chan struct{})
	f.pending = 0
	for i, id := range ids {
		u := &fakeUser{texts: texts[i]}
		f.users[id] = u
		if len(u.texts) > 0 {
			f.pending++
			f.sendLocked(id, u)
		}
	}
	if f.pending == 0 {
		close(f.done)
	}
	return f.done
}

// Others is how many messages the bot sent that answered no user message
// (notices, the continuation of a long reply).
func (f *FakeTelegram) Others() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.others
}

// Latencies returns, for each message user id sent, the time from sending
// it to the bot's reply, in the order sent.
func (f *FakeTelegram) Latencies(id int64) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if u := f.users[id]; u != nil {
		return append([]time.Duration(nil), u.waited...)
	}
	return nil
}

func (f *FakeTelegram) sendLocked(id int64, u *fakeUser) {
	u.sentAt = time.Now()
	u.lastMsg = f.SendText(telegramtest.PrivateChat(id), id, u.texts[u.sent])
	u.sent++
}

// answered follows a message of the bot: the reply to a user's last
// message has the user send the next one.
func (f *FakeTelegram) answered(s telegramtest.Sent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u := f.users[s.Chat]
	if u == nil || s.ReplyTo == 0 || s.ReplyTo != u.lastMsg {
		f.others++
		return
	}
	u.replies++
	u.waited = append(u.waited, time.Since(u.sentAt))
	u.lastMsg = -1 // one reply per message
	if u.sent < len(u.texts) {
		if f.Think <= 0 {
			f.sendLocked(s.Chat, u)
			return
		}
		chat := s.Chat
		time.AfterFunc(f.Think, func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.sendLocked(chat, u)
		})
		return
	}
	f.pending--
	if f.pending == 0 && f.done != nil {
		close(f.done)
	}
}
