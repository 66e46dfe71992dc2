package figures

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FakeTelegram is a Bot API server on 127.0.0.1 for the real bot: getMe,
// long-polled getUpdates, sendMessage, and true for everything else
// (sendChatAction, setMyCommands, …). Users talk to the bot in private
// chats, each one message at a time: a user's next message is queued when
// the bot answers the previous one, until the user has had its turns.
type FakeTelegram struct {
	URL   string
	Token string

	srv    *httptest.Server
	closed chan struct{}

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
	updates []json.RawMessage
	firstID int64 // update id of updates[0]
	nextID  int64
	nextMsg int
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
}

// StartFakeTelegram starts the server; Close stops it.
func StartFakeTelegram() *FakeTelegram {
	f := &FakeTelegram{Token: "123456:bench", closed: make(chan struct{}), changed: make(chan struct{}),
		nextID: 1000, firstID: 1000, users: map[int64]*fakeUser{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = f.srv.URL
	return f
}

// Close releases blocked getUpdates, then stops the server.
func (f *FakeTelegram) Close() {
	close(f.closed)
	f.srv.Close()
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

func (f *FakeTelegram) sendLocked(id int64, u *fakeUser) {
	f.nextMsg++
	u.lastMsg = f.nextMsg
	text := u.texts[u.sent]
	u.sent++
	from := map[string]any{"id": id, "is_bot": false, "first_name": "User" + strconv.FormatInt(id, 10)}
	raw, _ := json.Marshal(map[string]any{
		"update_id": f.nextID,
		"message": map[string]any{
			"message_id": f.nextMsg, "date": time.Now().Unix(), "text": text, "from": from,
			"chat": map[string]any{"id": id, "type": "private", "first_name": from["first_name"]},
		},
	})
	f.nextID++
	f.updates = append(f.updates, raw)
	close(f.changed)
	f.changed = make(chan struct{})
}

// answered records a message of the bot to chat, replying to message
// replyTo (0: none).
func (f *FakeTelegram) answered(chat int64, replyTo int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u := f.users[chat]
	if u == nil || replyTo == 0 || replyTo != u.lastMsg {
		f.others++
		return
	}
	u.replies++
	u.lastMsg = -1 // one reply per message
	if u.sent < len(u.texts) {
		f.sendLocked(chat, u)
		return
	}
	f.pending--
	if f.pending == 0 && f.done != nil {
		close(f.done)
	}
}

func (f *FakeTelegram) serve(w http.ResponseWriter, r *http.Request) {
	rest, _ := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, _ := strings.Cut(rest, "/")
	if token != f.Token {
		writeTG(w, http.StatusUnauthorized, nil)
		return
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		_ = r.ParseMultipartForm(1 << 20)
	}
	field := r.FormValue
	switch method {
	case "getMe":
		writeTG(w, 200, map[string]any{"id": 123456, "is_bot": true, "first_name": "Recall", "username": "RecallBot"})
	case "getUpdates":
		f.getUpdates(w, r, field)
	case "sendMessage":
		chat, _ := strconv.ParseInt(field("chat_id"), 10, 64)
		var rp struct {
			MessageID int `json:"message_id"`
		}
		_ = json.Unmarshal([]byte(field("reply_parameters")), &rp)
		f.mu.Lock()
		f.nextMsg++
		id := f.nextMsg
		f.mu.Unlock()
		f.answered(chat, rp.MessageID)
		writeTG(w, 200, map[string]any{
			"message_id": id, "date": time.Now().Unix(), "text": field("text"),
			"chat": map[string]any{"id": chat, "type": "private"},
			"from": map[string]any{"id": 123456, "is_bot": true, "first_name": "Recall", "username": "RecallBot"},
		})
	default: // deleteWebhook, setMyCommands, sendChatAction, …
		writeTG(w, 200, true)
	}
}

func (f *FakeTelegram) getUpdates(w http.ResponseWriter, r *http.Request, field func(string) string) {
	offset, _ := strconv.ParseInt(field("offset"), 10, 64)
	timeout, _ := strconv.Atoi(field("timeout"))
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		if drop := offset - f.firstID; drop > 0 { // confirmed
			drop = min(drop, int64(len(f.updates)))
			f.updates = f.updates[drop:]
			f.firstID += drop
		}
		if len(f.updates) > 0 {
			out := append([]json.RawMessage(nil), f.updates[:min(len(f.updates), 100)]...)
			f.mu.Unlock()
			writeTG(w, 200, out)
			return
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			writeTG(w, 200, []json.RawMessage{})
			return
		case <-r.Context().Done():
			return
		case <-f.closed:
			return
		}
	}
}

func writeTG(w http.ResponseWriter, code int, result any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if code != 200 {
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error_code": code, "description": http.StatusText(code)})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}
