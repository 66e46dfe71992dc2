package telegram

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-telegram/bot"

	"github.com/recallbot/recall/pipeline"
)

// IsChatAdmin asks getChatAdministrators: the owner and the administrators
// of the group are admins, a member is not, and a private chat has none.
func TestIsChatAdmin(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if !strings.HasSuffix(r.URL.Path, "/getChatAdministrators") {
			http.Error(w, `{"ok":false,"error_code":404,"description":"Not Found"}`, http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), "-100500") {
			t.Errorf("getChatAdministrators for the wrong chat: %s", body)
		}
		io.WriteString(w, `{"ok":true,"result":[
			{"status":"creator","user":{"id":7,"is_bot":false,"first_name":"Owner"},"is_anonymous":false},
			{"status":"administrator","user":{"id":8,"is_bot":false,"first_name":"Admin"},"can_be_edited":false,"is_anonymous":false}]}`)
	}))
	defer srv.Close()
	api, err := bot.New("123:abc", bot.WithServerURL(srv.URL), bot.WithSkipGetMe())
	if err != nil {
		t.Fatal(err)
	}
	s := &sender{api: api, log: slog.New(slog.DiscardHandler), sendTimeout: 5 * time.Second}
	group := pipeline.Key{Channel: Channel, Chat: "-100500", Thread: "3"}
	for user, want := range map[string]bool{"7": true, "8": true, "9": false} {
		got, err := s.IsChatAdmin(context.Background(), group, user)
		if err != nil || got != want {
			t.Errorf("user %s: IsChatAdmin = %v, %v; want %v", user, got, err, want)
		}
	}
	before := calls.Load()
	if got, err := s.IsChatAdmin(context.Background(), pipeline.Key{Channel: Channel, Chat: "42"}, "42"); got || err != nil || calls.Load() != before {
		t.Errorf("private chat: %v, %v, %d calls", got, err, calls.Load()-before)
	}
	// The stream sender answers too.
	var _ pipeline.ChatAdmins = streamSender{s}
}
