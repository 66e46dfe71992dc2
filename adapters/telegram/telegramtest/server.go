// Package telegramtest provides a fake Telegram Bot API server for tests of
// the Telegram adapter and of the whole bot.
//
// The server speaks the real protocol: multipart POSTs to
// /bot<token>/<method>, answers {"ok":true,"result":…} or
// {"ok":false,"error_code":…,"description":…,"parameters":{"retry_after":…}}.
// getUpdates blocks while there is nothing to deliver and confirms updates
// the way Telegram does: an update is dropped only once a getUpdates call
// asks for an offset past it, so a restarted client gets the unconfirmed ones
// again. A newer getUpdates terminates an older one (409), and getUpdates
// fails with 409 while a webhook is set. Every call is recorded. SetHook
// scripts failures: error answers, dropped connections (DropConnection) and
// calls that hang until the client gives up (Hang).
//
// Tests start it with NewServer; a program without a testing.TB (the
// benchmark program) with Start and Close. Options.OnSend follows every
// message delivered, for fakes driving many users.
package telegramtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/go-telegram/bot/models"
)

// The bot the server answers for.
const (
	Token   = "123456:TEST-token_secret" // the only token accepted
	BotID   = 123456
	BotName = "RecallBot"
)

const (
	// DropConnection, as a scripted error's Code, closes the connection
	// without an answer (a network error).
	DropConnection = -1
	// Hang, as a scripted error's Code, answers nothing until the client
	// gives up (its timeout, a cancelled context) or the server closes. The
	// call is not carried out: a hung sendMessage delivers nothing.
	Hang = -2
)

// Err is a scripted error answer.
type Err struct {
	Code        int
	Description string
	RetryAfter  int
	MigrateTo   int64 // parameters.migrate_to_chat_id
}

// File is an uploaded file.
type File struct {
	Name string
	Data []byte
}

// Call is one recorded API call.
type Call struct {
	Method string
	Fields map[string]string
	Files  map[string]File
	At     time.Time
	Err    *Err // the error answered; nil when it succeeded
	MsgID  int  // id of the message sent or edited
}

// ChatID is the chat_id field as a number.
func (c Call) ChatID() int64 {
	n, _ := strconv.ParseInt(c.Fields["chat_id"], 10, 64)
	return n
}

// ReplyTo is reply_parameters.message_id (0 when absent).
func (c Call) ReplyTo() int {
	var rp struct {
		MessageID int  `json:"message_id"`
		Allow     bool `json:"allow_sending_without_reply"`
	}
	_ = json.Unmarshal([]byte(c.Fields["reply_parameters"]), &rp)
	return rp.MessageID
}

// Keyboard is the inline keyboard sent, if any.
func (c Call) Keyboard() [][]models.InlineKeyboardButton {
	var kb models.InlineKeyboardMarkup
	_ = json.Unmarshal([]byte(c.Fields["reply_markup"]), &kb)
	return kb.InlineKeyboard
}

type queued struct {
	id  int64
	raw json.RawMessage
}

// Options configure a server started with Start.
type Options struct {
	// Token is the only token accepted (default Token).
	Token string
	// OnSend, when set, is called after every successful sendMessage,
	// before the answer is written, without the server's lock held: it may
	// call Push or SendText.
	OnSend func(Sent)
}

// Sent is a message delivered by a successful sendMessage.
type Sent struct {
	Chat    int64
	MsgID   int // the message's id
	ReplyTo int // reply_parameters.message_id; 0 when absent
	Text    string
	At      time.Time
}

// Server is a running fake Bot API. Give URL to the client
// (bot.WithServerURL, telegram.Options.APIURL) with Token.
type Server struct {
	t     testing.TB // nil when started by Start
	srv   *httptest.Server
	URL   string
	Token string

	onSend    func(Sent)
	closeOnce sync.Once

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change
	closed    chan struct{}
	queue     []queued
	nextID    int64
	calls     []Call
	nextMsg   map[int64]int
	texts     map[[2]int64]string // (chat, message id) → text, for edits
	markups   map[[2]int64]string // (chat, message id) → reply_markup shown ("" none)
	hook      func(c *Call) *Err
	webhook   string
	secret    string
	pollGen   int
	privacy   bool            // group privacy mode (see SetPrivacy)
	migrated  map[int64]int64 // group → the supergroup it became (see Migrate)
	confirmed int64           // highest update id confirmed
	delivered int             // successful sendMessage calls
	files     files           // hosted media (AddFile)
}

// NewServer starts a fake Bot API on 127.0.0.1 accepting Token, closed when
// the test ends.
func NewServer(t testing.TB) *Server {
	t.Helper()
	f := Start(Options{})
	f.t = t
	t.Cleanup(f.Close)
	return f
}

// Start starts a fake Bot API on 127.0.0.1 for a program that has no
// testing.TB: the caller must Close it. Wait and WaitSent need NewServer.
func Start(o Options) *Server {
	f := &Server{
		Token: o.Token, onSend: o.OnSend, changed: make(chan struct{}), closed: make(chan struct{}),
		nextID: 1000, nextMsg: map[int64]int{}, texts: map[[2]int64]string{}, markups: map[[2]int64]string{},
	}
	if f.Token == "" {
		f.Token = Token
	}
	f.srv = httptest.NewServer(f)
	f.URL = f.srv.URL
	return f
}

// Close releases blocked and hanging calls, then stops the server. It may
// be called more than once.
func (f *Server) Close() {
	f.closeOnce.Do(func() {
		close(f.closed) // before Close waits for the handlers
		f.srv.Close()
	})
}

func (f *Server) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// SetHook scripts failures: h sees every call before it is handled and
// returns the error to answer, or nil to handle it normally.
func (f *Server) SetHook(h func(c *Call) *Err) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

// SetPrivacy turns the bot's group privacy mode on or off (off by default
// here; on by default on Telegram). With it on, getMe reports
// can_read_all_group_messages=false and a group message is delivered only
// when it is a command or a reply to one of the bot's messages: other
// messages, plain @mentions included, are pushed but never delivered (Push
// returns 0).
func (f *Server) SetPrivacy(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.privacy = on
}

// hiddenLocked reports whether privacy mode keeps u from the bot.
func (f *Server) hiddenLocked(u models.Update) bool {
	m := u.Message
	if !f.privacy || m == nil || m.Chat.Type == models.ChatTypePrivate {
		return false
	}
	text := m.Text
	if text == "" {
		text = m.Caption
	}
	if strings.HasPrefix(text, "/") {
		return false
	}
	r := m.ReplyToMessage
	return r == nil || r.From == nil || r.From.ID != BotID
}

// Migrate upgrades group chat old to supergroup chat new, as Telegram does
// it: from now on every call into old is refused with 400 and
// migrate_to_chat_id; and it queues the two service messages Telegram sends
// (migrate_to_chat_id in old, migrate_from_chat_id in new).
func (f *Server) Migrate(old, new int64) {
	f.mu.Lock()
	if f.migrated == nil {
		f.migrated = map[int64]int64{}
	}
	f.migrated[old] = new
	f.mu.Unlock()
	from := &models.User{ID: 1, FirstName: "Admin"}
	f.Push(models.Update{Message: &models.Message{ID: f.MsgID(old), Date: int(time.Now().Unix()), From: from,
		Chat: models.Chat{ID: old, Type: models.ChatTypeGroup, Title: "Group"}, MigrateToChatID: new}})
	f.Push(models.Update{Message: &models.Message{ID: f.MsgID(new), Date: int(time.Now().Unix()), From: from,
		Chat: models.Chat{ID: new, Type: models.ChatTypeSupergroup, Title: "Group"}, MigrateFromChatID: old}})
}

// Push queues an update (its id is assigned) and returns the id; 0 when
// privacy mode keeps it from the bot (SetPrivacy).
func (f *Server) Push(u models.Update) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hiddenLocked(u) {
		return 0
	}
	f.nextID++
	u.ID = f.nextID
	raw, err := json.Marshal(&u)
	if err != nil {
		panic(fmt.Sprintf("telegramtest: encoding an update: %v", err))
	}
	f.queue = append(f.queue, queued{id: u.ID, raw: raw})
	f.notifyLocked()
	return u.ID
}

// PushRaw queues an update given as JSON (its update_id is replaced), for
// updates the library's models cannot encode or decode, and returns its id.
func (f *Server) PushRaw(update string) int64 {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(update), &fields); err != nil {
		panic(fmt.Sprintf("telegramtest: PushRaw: %v", err))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	fields["update_id"] = json.RawMessage(strconv.FormatInt(f.nextID, 10))
	raw, _ := json.Marshal(fields)
	f.queue = append(f.queue, queued{id: f.nextID, raw: raw})
	f.notifyLocked()
	return f.nextID
}

// MsgID reserves the next message id in a chat (user and bot messages share
// the sequence, as on Telegram).
func (f *Server) MsgID(chat int64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nextMsgLocked(chat)
}

func (f *Server) nextMsgLocked(chat int64) int {
	f.nextMsg[chat]++
	return f.nextMsg[chat]
}

// Calls returns the recorded calls of the given methods (all when none).
func (f *Server) Calls(methods ...string) []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return FilterCalls(f.calls, methods...)
}

func FilterCalls(calls []Call, methods ...string) []Call {
	var out []Call
	for _, c := range calls {
		if len(methods) == 0 {
			out = append(out, c)
			continue
		}
		for _, m := range methods {
			if c.Method == m {
				out = append(out, c)
			}
		}
	}
	return out
}

// Sent returns the messages delivered (successful sendMessage calls) to chat
// (every chat when 0).
func (f *Server) Sent(chat int64) []Call {
	var out []Call
	for _, c := range f.Calls("sendMessage") {
		if c.Err == nil && (chat == 0 || c.ChatID() == chat) {
			out = append(out, c)
		}
	}
	return out
}

// Wait blocks until cond holds for the recorded calls, failing the test
// after a while. It must be called from the test's goroutine.
func (f *Server) Wait(what string, cond func(calls []Call) bool) []Call {
	if f.t == nil {
		panic("telegramtest: Wait needs a server started by NewServer")
	}
	f.t.Helper()
	calls, ok := f.Until(cond)
	if !ok {
		f.t.Fatalf("timed out waiting for %s; calls so far:\n%s", what, DumpCalls(calls))
	}
	return calls
}

// Until blocks until cond holds for the recorded calls (true) or a while
// passed (false).
func (f *Server) Until(cond func(calls []Call) bool) ([]Call, bool) {
	return f.UntilWithin(20*time.Second, cond)
}

// UntilWithin blocks until cond holds for the recorded calls (true) or
// timeout passed (false).
func (f *Server) UntilWithin(timeout time.Duration, cond func(calls []Call) bool) ([]Call, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		calls := append([]Call(nil), f.calls...)
		ch := f.changed
		f.mu.Unlock()
		if cond(calls) {
			return calls, true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return calls, false
		}
	}
}

// WaitSent waits until n messages were delivered to chat and returns them.
func (f *Server) WaitSent(chat int64, n int) []Call {
	if f.t != nil {
		f.t.Helper()
	}
	f.Wait(fmt.Sprintf("%d messages to chat %d", n, chat), func(calls []Call) bool {
		k := 0
		for _, c := range FilterCalls(calls, "sendMessage") {
			if c.Err == nil && c.ChatID() == chat {
				k++
			}
		}
		return k >= n
	})
	return f.Sent(chat)
}

// ShownText is the text message id shows now in chat (after its edits).
func (f *Server) ShownText(chat int64, id int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.texts[[2]int64{chat, int64(id)}]
}

// ShownMarkup is the reply_markup message id shows now in chat, as sent
// ("" when it has none).
func (f *Server) ShownMarkup(chat int64, id int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.markups[[2]int64{chat, int64(id)}]
}

// ConfirmedID is the highest update id confirmed by a getUpdates offset.
func (f *Server) ConfirmedID() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.confirmed
}

func DumpCalls(calls []Call) string {
	var b strings.Builder
	for _, c := range calls {
		if c.Method == "getUpdates" {
			continue
		}
		fmt.Fprintf(&b, "  %s %v err=%v\n", c.Method, c.Fields, c.Err)
	}
	return b.String()
}

// ServeHTTP handles one API call (a test may put a front before it; the
// request's multipart form may be parsed already).
func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.serveFile(w, r) {
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		writeAPI(w, nil, &Err{Code: 404, Description: "Not Found"})
		return
	}
	if token != f.Token {
		writeAPI(w, nil, &Err{Code: 401, Description: "Unauthorized"})
		return
	}
	if r.Method != http.MethodPost {
		writeAPI(w, nil, &Err{Code: 400, Description: "Bad Request: use POST"})
		return
	}
	call := Call{Method: method, Fields: map[string]string{}, Files: map[string]File{}, At: time.Now()}
	if r.MultipartForm == nil {
		// The library sends an empty body for methods without parameters.
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if len(body) == 0 {
			// no fields
		} else if err := r.ParseMultipartForm(32 << 20); err != nil && !errors.Is(err, http.ErrNotMultipart) {
			writeAPI(w, nil, &Err{Code: 400, Description: "Bad Request: " + err.Error()})
			return
		}
	}
	if r.MultipartForm != nil {
		for k, v := range r.MultipartForm.Value {
			call.Fields[k] = v[0]
		}
		for k, fhs := range r.MultipartForm.File {
			fh := fhs[0]
			rd, err := fh.Open()
			if err == nil {
				data, _ := io.ReadAll(rd)
				rd.Close()
				call.Files[k] = File{Name: fh.Filename, Data: data}
			}
		}
	}
	if method == "getUpdates" {
		f.getUpdates(w, r, call)
		return
	}
	f.mu.Lock()
	if f.hookedLocked(w, r, &call) {
		return
	}
	result, e := f.handleLocked(&call)
	f.record(call, e)
	f.mu.Unlock()
	if e == nil && call.Method == "sendMessage" && f.onSend != nil {
		f.onSend(Sent{Chat: call.ChatID(), MsgID: call.MsgID, ReplyTo: call.ReplyTo(), Text: call.Fields["text"], At: call.At})
	}
	writeAPI(w, result, e)
}

// hookedLocked runs the hook on call: when it scripts an error, the call is
// recorded, the lock released and the error answered (true).
func (f *Server) hookedLocked(w http.ResponseWriter, r *http.Request, call *Call) bool {
	if f.hook == nil {
		return false
	}
	e := f.hook(call)
	if e == nil {
		return false
	}
	f.record(*call, e)
	f.mu.Unlock()
	if e.Code == Hang {
		select { // until the client goes away or the server closes
		case <-r.Context().Done():
		case <-f.closed:
		}
	}
	writeAPI(w, nil, e)
	return true
}

// LastUpdateID is the id of the newest update pushed.
func (f *Server) LastUpdateID() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nextID
}

func (f *Server) record(c Call, e *Err) {
	c.Err = e
	f.calls = append(f.calls, c)
	if c.Method == "sendMessage" && e == nil {
		f.delivered++
	}
	f.notifyLocked()
}

// WaitDelivered blocks until n messages were delivered in all (benchmarks:
// it does not copy the calls); false after the timeout.
func (f *Server) WaitDelivered(n int, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		done, ch := f.delivered >= n, f.changed
		f.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

// Me is the bot's account as getMe answers it.
func (f *Server) Me() models.User {
	return models.User{ID: BotID, IsBot: true, FirstName: "Recall", Username: BotName}
}

func (f *Server) meLocked() models.User {
	me := f.Me()
	me.CanJoinGroups, me.CanReadAllGroupMessages = true, !f.privacy
	return me
}

func (f *Server) handleLocked(c *Call) (any, *Err) {
	if chat, err := strconv.ParseInt(c.Fields["chat_id"], 10, 64); err == nil {
		if to, ok := f.migrated[chat]; ok {
			return nil, &Err{Code: 400, Description: "Bad Request: group chat was upgraded to a supergroup chat", MigrateTo: to}
		}
	}
	switch c.Method {
	case "getMe":
		return f.meLocked(), nil
	case "getFile":
		return f.getFile(c)
	case "deleteWebhook":
		f.webhook, f.secret = "", ""
		return true, nil
	case "setWebhook":
		f.webhook, f.secret = c.Fields["url"], c.Fields["secret_token"]
		return true, nil
	case "sendChatAction", "answerCallbackQuery", "setMyCommands":
		return true, nil
	case "sendMessage", "sendDocument":
		chat, err := strconv.ParseInt(c.Fields["chat_id"], 10, 64)
		if err != nil || chat == 0 {
			return nil, &Err{Code: 400, Description: "Bad Request: chat not found"}
		}
		text := c.Fields["text"]
		if c.Method == "sendDocument" {
			if _, ok := c.Files["document"]; !ok {
				return nil, &Err{Code: 400, Description: "Bad Request: there is no document in the request"}
			}
			text = c.Fields["caption"]
			if len(utf16.Encode([]rune(text))) > 1024 {
				return nil, &Err{Code: 400, Description: "Bad Request: message caption is too long"}
			}
		} else if e := checkText(text, c.Fields["parse_mode"]); e != nil {
			return nil, e
		}
		if e := checkMarkup(c.Fields["reply_markup"]); e != nil {
			return nil, e
		}
		id := f.nextMsgLocked(chat)
		c.MsgID = id
		f.texts[[2]int64{chat, int64(id)}] = text
		f.markups[[2]int64{chat, int64(id)}] = c.Fields["reply_markup"]
		msg := models.Message{ID: id, Date: int(time.Now().Unix()), Chat: models.Chat{ID: chat, Type: chatType(chat)}, Text: text}
		me := f.Me()
		msg.From = &me
		if th, err := strconv.Atoi(c.Fields["message_thread_id"]); err == nil {
			msg.MessageThreadID, msg.IsTopicMessage = th, true
		}
		return msg, nil
	case "sendMessageDraft":
		chat, _ := strconv.ParseInt(c.Fields["chat_id"], 10, 64)
		if chat <= 0 {
			return nil, &Err{Code: 400, Description: "Bad Request: TEXTDRAFT_PEER_INVALID"}
		}
		if id, err := strconv.ParseInt(c.Fields["draft_id"], 10, 64); err != nil || id == 0 {
			return nil, &Err{Code: 400, Description: "Bad Request: draft_id must be non-zero"}
		}
		if e := checkText(c.Fields["text"], c.Fields["parse_mode"]); e != nil {
			return nil, e
		}
		return true, nil
	case "editMessageReplyMarkup":
		chat, _ := strconv.ParseInt(c.Fields["chat_id"], 10, 64)
		id, _ := strconv.Atoi(c.Fields["message_id"])
		k := [2]int64{chat, int64(id)}
		if _, ok := f.texts[k]; !ok {
			return nil, &Err{Code: 400, Description: "Bad Request: message to edit not found"}
		}
		if e := checkMarkup(c.Fields["reply_markup"]); e != nil {
			return nil, e
		}
		if f.markups[k] == c.Fields["reply_markup"] {
			return nil, &Err{Code: 400, Description: "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"}
		}
		f.markups[k] = c.Fields["reply_markup"]
		c.MsgID = id
		me := f.Me()
		return models.Message{ID: id, Date: int(time.Now().Unix()), Chat: models.Chat{ID: chat, Type: chatType(chat)}, Text: f.texts[k], From: &me}, nil
	case "deleteMessage":
		chat, _ := strconv.ParseInt(c.Fields["chat_id"], 10, 64)
		id, _ := strconv.Atoi(c.Fields["message_id"])
		if _, ok := f.texts[[2]int64{chat, int64(id)}]; !ok {
			return nil, &Err{Code: 400, Description: "Bad Request: message to delete not found"}
		}
		delete(f.texts, [2]int64{chat, int64(id)})
		c.MsgID = id
		return true, nil
	case "editMessageText":
		chat, _ := strconv.ParseInt(c.Fields["chat_id"], 10, 64)
		id, _ := strconv.Atoi(c.Fields["message_id"])
		old, ok := f.texts[[2]int64{chat, int64(id)}]
		if !ok {
			return nil, &Err{Code: 400, Description: "Bad Request: message to edit not found"}
		}
		if e := checkText(c.Fields["text"], c.Fields["parse_mode"]); e != nil {
			return nil, e
		}
		if old == c.Fields["text"] {
			return nil, &Err{Code: 400, Description: "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"}
		}
		f.texts[[2]int64{chat, int64(id)}] = c.Fields["text"]
		c.MsgID = id
		me := f.Me()
		return models.Message{ID: id, Date: int(time.Now().Unix()), Chat: models.Chat{ID: chat, Type: chatType(chat)}, Text: c.Fields["text"], From: &me}, nil
	}
	return nil, &Err{Code: 404, Description: "Not Found: method not found"}
}

func chatType(chat int64) models.ChatType {
	if chat > 0 {
		return models.ChatTypePrivate
	}
	return models.ChatTypeSupergroup
}

// getUpdates answers the unconfirmed updates from offset on, blocking up to
// timeout while there are none.
func (f *Server) getUpdates(w http.ResponseWriter, r *http.Request, call Call) {
	offset, _ := strconv.ParseInt(call.Fields["offset"], 10, 64)
	timeout, _ := strconv.Atoi(call.Fields["timeout"])
	limit, _ := strconv.Atoi(call.Fields["limit"])
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	f.mu.Lock()
	if f.hookedLocked(w, r, &call) {
		return
	}
	f.record(call, nil)
	if f.webhook != "" {
		f.mu.Unlock()
		writeAPI(w, nil, &Err{Code: 409, Description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"})
		return
	}
	f.pollGen++
	gen := f.pollGen
	if offset > 0 {
		if offset-1 > f.confirmed {
			f.confirmed = offset - 1
		}
		kept := f.queue[:0]
		for _, q := range f.queue {
			if q.id >= offset {
				kept = append(kept, q)
			}
		}
		f.queue = kept
	}
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	for {
		if f.pollGen != gen {
			f.mu.Unlock()
			writeAPI(w, nil, &Err{Code: 409, Description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"})
			return
		}
		if len(f.queue) > 0 {
			n := min(limit, len(f.queue))
			out := make([]json.RawMessage, n)
			for i := range n {
				out[i] = f.queue[i].raw
			}
			f.mu.Unlock()
			writeAPI(w, out, nil)
			return
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			writeAPI(w, []json.RawMessage{}, nil)
			return
		case <-r.Context().Done():
			return
		case <-f.closed:
			return
		}
		f.mu.Lock()
	}
}

func writeAPI(w http.ResponseWriter, result any, e *Err) {
	if e != nil && e.Code == Hang {
		return // hang has returned: nothing to answer
	}
	if e != nil && e.Code == DropConnection {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Content-Type", "application/json")
	if e != nil {
		body := map[string]any{"ok": false, "error_code": e.Code, "description": e.Description}
		params := map[string]any{}
		if e.RetryAfter > 0 {
			params["retry_after"] = e.RetryAfter
		}
		if e.MigrateTo != 0 {
			params["migrate_to_chat_id"] = e.MigrateTo
		}
		if len(params) > 0 {
			body["parameters"] = params
		}
		w.WriteHeader(e.Code)
		_ = json.NewEncoder(w).Encode(body)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

// checkText validates a message text as Telegram does: not empty, at most
// 4096 UTF-16 code units after entity parsing, and well-formed HTML with
// parse_mode HTML.
func checkText(text, parseMode string) *Err {
	shown := text
	if parseMode == "HTML" {
		var err error
		if shown, err = ParseHTML(text); err != nil {
			return &Err{Code: 400, Description: "Bad Request: can't parse entities: " + err.Error()}
		}
	}
	if strings.TrimSpace(shown) == "" {
		return &Err{Code: 400, Description: "Bad Request: message text is empty"}
	}
	if len(utf16.Encode([]rune(shown))) > 4096 {
		return &Err{Code: 400, Description: "Bad Request: message is too long"}
	}
	return nil
}

// checkMarkup validates an inline keyboard as Telegram does: every button
// has a label and callback_data of 1-64 bytes, and a copy_text, when
// present, has text (Telegram answers BUTTON_COPY_TEXT_INVALID; it checks
// callback_data first today, this fake checks both).
func checkMarkup(raw string) *Err {
	if raw == "" {
		return nil
	}
	var kb struct {
		InlineKeyboard [][]struct {
			Text         string `json:"text"`
			CallbackData string `json:"callback_data"`
			CopyText     *struct {
				Text string `json:"text"`
			} `json:"copy_text"`
		} `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(raw), &kb); err != nil {
		return &Err{Code: 400, Description: "Bad Request: can't parse reply keyboard markup JSON object"}
	}
	for _, row := range kb.InlineKeyboard {
		for _, b := range row {
			if b.Text == "" {
				return &Err{Code: 400, Description: "Bad Request: text buttons are unallowed in the inline keyboard"}
			}
			if b.CopyText != nil && b.CopyText.Text == "" {
				return &Err{Code: 400, Description: "Bad Request: BUTTON_COPY_TEXT_INVALID"}
			}
			if n := len(b.CallbackData); n == 0 || n > 64 {
				return &Err{Code: 400, Description: "Bad Request: BUTTON_DATA_INVALID"}
			}
		}
	}
	return nil
}

// telegramTags are the tags Telegram's HTML parse mode accepts.
var telegramTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true, "strike": true,
	"del": true, "a": true, "code": true, "pre": true, "tg-spoiler": true, "span": true,
	"blockquote": true, "tg-emoji": true,
}

// ParseHTML checks Telegram HTML and returns the text it shows.
func ParseHTML(s string) (string, error) {
	var text strings.Builder
	var stack []string
	for i := 0; i < len(s); {
		switch s[i] {
		case '<':
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				return "", fmt.Errorf("can't find end of the tag at byte offset %d", i)
			}
			tag := s[i+1 : i+j]
			i += j + 1
			if name, ok := strings.CutPrefix(tag, "/"); ok {
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return "", fmt.Errorf("unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", i, last(stack), name)
				}
				stack = stack[:len(stack)-1]
				continue
			}
			name, _, _ := strings.Cut(tag, " ")
			if !telegramTags[name] {
				return "", fmt.Errorf("unsupported start tag \"%s\" at byte offset %d", name, i)
			}
			stack = append(stack, name)
		case '&':
			j := strings.IndexByte(s[i:], ';')
			if j < 0 {
				return "", fmt.Errorf("can't find end of the entity at byte offset %d", i)
			}
			ent := s[i : i+j+1]
			switch {
			case ent == "&lt;" || ent == "&gt;" || ent == "&amp;" || ent == "&quot;" || strings.HasPrefix(ent, "&#"):
				text.WriteString(html.UnescapeString(ent))
			default:
				return "", fmt.Errorf("unsupported HTML entity %s at byte offset %d", ent, i)
			}
			i += j + 1
		default:
			text.WriteByte(s[i])
			i++
		}
	}
	if len(stack) > 0 {
		return "", fmt.Errorf("can't find end tag corresponding to start tag \"%s\"", last(stack))
	}
	return text.String(), nil
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

// ---- building updates ----

// TextMessage is a message from user in chat.
func (f *Server) TextMessage(chat models.Chat, from int64, text string) *models.Message {
	return &models.Message{
		ID: f.MsgID(chat.ID), Date: int(time.Now().Unix()), Chat: chat, Text: text,
		From: &models.User{ID: from, FirstName: "User" + strconv.FormatInt(from, 10)},
	}
}

// SendText queues a text message and returns its message id.
func (f *Server) SendText(chat models.Chat, from int64, text string) int {
	m := f.TextMessage(chat, from, text)
	f.Push(models.Update{Message: m})
	return m.ID
}

func PrivateChat(user int64) models.Chat {
	return models.Chat{ID: user, Type: models.ChatTypePrivate, FirstName: "User" + strconv.FormatInt(user, 10)}
}

func GroupChat(id int64, forum bool) models.Chat {
	return models.Chat{ID: id, Type: models.ChatTypeSupergroup, Title: "Group", IsForum: forum}
}

// Mention is a mention entity of the bot at the start of text.
func Mention() models.MessageEntity {
	return models.MessageEntity{Type: models.MessageEntityTypeMention, Offset: 0, Length: len(BotName) + 1}
}
