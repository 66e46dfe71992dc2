package main

// A minimal fake Telegram Bot API for the end-to-end tests of the real
// binary in Telegram mode (adapters/telegram/fake_test.go has the complete
// one): POSTs to /bot<token>/<method> with multipart fields; getUpdates
// blocks while there is nothing to deliver and an update is dropped once a
// getUpdates offset confirms it; sendMessage is recorded.

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const fakeTGToken = "123456:TEST-token_secret"

// tgSent is one delivered message.
type tgSent struct {
	Chat int64
	Text string
}

type fakeTelegram struct {
	URL string

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
	closed  chan struct{}
	updates []tgUpdate
	nextID  int64
	nextMsg int
	sent    []tgSent
}

type tgUpdate struct {
	id  int64
	raw json.RawMessage
}

func newFakeTelegram(t *testing.T) *fakeTelegram {
	t.Helper()
	f := &fakeTelegram{changed: make(chan struct{}), closed: make(chan struct{}), nextID: 1000}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = srv.URL
	t.Cleanup(func() {
		close(f.closed) // release blocked getUpdates before Close waits for them
		srv.Close()
	})
	return f
}

func (f *fakeTelegram) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// sendText queues a private text message from user.
func (f *fakeTelegram) sendText(user int64, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	f.nextMsg++
	from := map[string]any{"id": user, "is_bot": false, "first_name": "User"}
	raw, _ := json.Marshal(map[string]any{
		"update_id": f.nextID,
		"message": map[string]any{
			"message_id": f.nextMsg, "date": time.Now().Unix(), "text": text, "from": from,
			"chat": map[string]any{"id": user, "type": "private", "first_name": "User"},
		},
	})
	f.updates = append(f.updates, tgUpdate{id: f.nextID, raw: raw})
	f.notifyLocked()
}

// waitSent waits until a message containing text was delivered.
func (f *fakeTelegram) waitSent(text string, timeout time.Duration) (tgSent, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		for _, s := range f.sent {
			if strings.Contains(s.Text, text) {
				f.mu.Unlock()
				return s, true
			}
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return tgSent{}, false
		}
	}
}

func (f *fakeTelegram) serve(w http.ResponseWriter, r *http.Request) {
	rest, _ := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, _ := strings.Cut(rest, "/")
	if token != fakeTGToken {
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
		f.mu.Lock()
		f.nextMsg++
		id := f.nextMsg
		f.sent = append(f.sent, tgSent{Chat: chat, Text: field("text")})
		f.notifyLocked()
		f.mu.Unlock()
		writeTG(w, 200, map[string]any{
			"message_id": id, "date": time.Now().Unix(), "text": field("text"),
			"chat": map[string]any{"id": chat, "type": "private"},
			"from": map[string]any{"id": 123456, "is_bot": true, "first_name": "Recall", "username": "RecallBot"},
		})
	default: // deleteWebhook, setMyCommands, sendChatAction, …
		writeTG(w, 200, true)
	}
}

func (f *fakeTelegram) getUpdates(w http.ResponseWriter, r *http.Request, field func(string) string) {
	offset, _ := strconv.ParseInt(field("offset"), 10, 64)
	timeout, _ := strconv.Atoi(field("timeout"))
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		kept := f.updates[:0]
		for _, u := range f.updates {
			if u.id >= offset {
				kept = append(kept, u)
			}
		}
		f.updates = kept
		if len(kept) > 0 {
			out := make([]json.RawMessage, len(kept))
			for i, u := range kept {
				out[i] = u.raw
			}
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

// telegram.stream reaches the adapter and the responder: the model is asked
// to stream, and the reply arrives whole in the end.
func TestTelegramStreamSetting(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(strconv.FormatBool(stream), func(t *testing.T) {
			tg := newFakeTelegram(t)
			model := newFakeLLM(t)
			env := telegramEnv(t, tg, model.URL, "RECALL_TELEGRAM_STREAM="+strconv.FormatBool(stream))
			bot := env.startDaemon(t)
			bot.waitLog("running", 30*time.Second)
			tg.sendText(42, "hello stream")
			if _, ok := tg.waitSent("echo: hello stream", 30*time.Second); !ok {
				t.Fatalf("no reply:\n%s", bot.output())
			}
			reqs := model.chatRequests()
			if len(reqs) != 1 || reqs[0].Stream != stream {
				t.Errorf("chat requests %+v, want one with stream=%v", reqs, stream)
			}
			if strings.Contains(bot.output(), "not supported") {
				t.Errorf("a warning about streaming was logged:\n%s", bot.output())
			}
			bot.signal(syscall.SIGTERM)
			if code := bot.wait(30 * time.Second); code != 0 {
				t.Fatalf("exit code %d:\n%s", code, bot.output())
			}
		})
	}
}
