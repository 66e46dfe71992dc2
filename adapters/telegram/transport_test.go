package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/adapters/adaptertest"
	"github.com/recallbot/recall/adapters/telegram/telegramtest"
	"github.com/recallbot/recall/pipeline"
)

// bare is an adapter without a pipeline: submitted messages are collected.
type bare struct {
	ad     *Adapter
	logs   *adaptertest.SyncBuffer
	cancel context.CancelFunc
	runErr chan error

	mu  sync.Mutex
	got []pipeline.Inbound
	in  chan pipeline.Inbound
}

func newBare(t *testing.T, api *fakeAPI, opts Options) *bare {
	t.Helper()
	b := &bare{logs: &adaptertest.SyncBuffer{}, in: make(chan pipeline.Inbound, 100), runErr: make(chan error, 1)}
	if opts.Token == "" {
		opts.Token = fakeToken
	}
	opts.APIURL = api.URL
	opts.Log = slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opts.PollTimeout == 0 {
		opts.PollTimeout = time.Second
	}
	ad, err := New(opts, func(in pipeline.Inbound, _ pipeline.Sender) error {
		b.mu.Lock()
		b.got = append(b.got, in)
		b.mu.Unlock()
		b.in <- in
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ad.retryBase, ad.retryMax = 5*time.Millisecond, 50*time.Millisecond
	ad.out.pace = unpaced()
	b.ad = ad
	t.Cleanup(func() {
		if b.cancel != nil {
			b.cancel()
			<-b.runErr
		}
		if t.Failed() {
			t.Logf("logs:\n%s", b.logs.String())
		}
	})
	return b
}

func (b *bare) run() {
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() { b.runErr <- b.ad.Run(ctx) }()
}

func (b *bare) next(t *testing.T) pipeline.Inbound {
	t.Helper()
	select {
	case in := <-b.in:
		return in
	case err := <-b.runErr:
		t.Fatalf("Run returned: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("no message reached the pipeline")
	}
	return pipeline.Inbound{}
}

// A rejected token stops Run with ErrBadToken, naming the setting and never
// showing the token.
func TestBadToken(t *testing.T) {
	for _, code := range []int{401, 404} {
		api := newFakeAPI(t)
		api.SetHook(func(c *fakeCall) *fakeErr {
			if code == 404 {
				return &fakeErr{Code: 404, Description: "Not Found"}
			}
			return nil
		})
		secret := "999:WRONG-very-secret"
		if code == 404 {
			secret = fakeToken // known to the fake, which answers 404 like an unknown token
		}
		b := newBare(t, api, Options{Token: secret})
		err := b.ad.Run(context.Background())
		if !errors.Is(err, ErrBadToken) {
			t.Fatalf("%d: Run = %v, want ErrBadToken", code, err)
		}
		if !strings.Contains(err.Error(), "telegram.token") || strings.Contains(err.Error(), secret) || strings.Contains(b.logs.String(), secret) {
			t.Errorf("%d: error %q (or the logs) must name telegram.token and hide the token", code, err)
		}
	}
}

// While Telegram cannot be reached at start (getMe) or later (getUpdates),
// the adapter retries with backoff and then works; 429 waits retry_after.
func TestRetriesWhileTelegramIsDown(t *testing.T) {
	api := newFakeAPI(t)
	var getMe, polls atomic.Int32
	api.SetHook(func(c *fakeCall) *fakeErr {
		switch c.Method {
		case "getMe":
			switch getMe.Add(1) {
			case 1:
				return &fakeErr{Code: dropConnection}
			case 2:
				return &fakeErr{Code: 502, Description: "Bad Gateway"}
			}
		case "getUpdates":
			switch polls.Add(1) {
			case 1:
				return &fakeErr{Code: dropConnection}
			case 2:
				return &fakeErr{Code: 500, Description: "Internal Server Error"}
			case 3:
				return &fakeErr{Code: 429, Description: "Too Many Requests: retry after 1", RetryAfter: 1}
			case 4:
				return &fakeErr{Code: 409, Description: "Conflict: terminated by other getUpdates request"}
			}
		}
		return nil
	})
	b := newBare(t, api, Options{})
	start := time.Now()
	b.run()
	m := api.SendText(privateChat(111), 111, "anyone?")
	in := b.next(t)
	if in.MessageID != itoa(m) || in.Text != "anyone?" {
		t.Fatalf("got %+v", in)
	}
	if getMe.Load() < 3 || polls.Load() < 5 {
		t.Errorf("getMe %d calls, getUpdates %d calls", getMe.Load(), polls.Load())
	}
	if time.Since(start) < time.Second {
		t.Error("retry_after of the 429 was not waited")
	}
	if strings.Contains(b.logs.String(), fakeToken) {
		t.Errorf("the token appears in the logs:\n%s", b.logs.String())
	}
}

// Updates come in order, each once, and a restarted adapter gets what was
// not confirmed.
func TestPollingOrderAndConfirmation(t *testing.T) {
	api := newFakeAPI(t)
	b := newBare(t, api, Options{})
	var ids []int
	for i := range 150 { // more than one batch
		ids = append(ids, api.SendText(privateChat(int64(111+i%3)), int64(111+i%3), "m"+itoa(i)))
	}
	b.run()
	for i := range 150 {
		in := b.next(t)
		if in.Text != "m"+itoa(i) || in.MessageID != itoa(ids[i]) {
			t.Fatalf("message %d = %+v", i, in)
		}
	}
	last := api.LastUpdateID()
	api.Wait("the last update to be confirmed", func([]fakeCall) bool { return api.ConfirmedID() >= last })
	polls := api.Calls("getUpdates")
	p := polls[len(polls)-1]
	if p.Fields["allowed_updates"] != `["message","edited_message","callback_query"]` || p.Fields["timeout"] != "1" {
		t.Errorf("getUpdates fields = %v", p.Fields)
	}
}

// Buttons: long data is sent as a short id and comes back whole; the press
// is answered; the label is the text.
func TestButtonsWithLongData(t *testing.T) {
	api := newFakeAPI(t)
	b := newBare(t, api, Options{})
	long := "purge:" + strings.Repeat("conversation-", 10)
	_, err := b.ad.Sender().Send(context.Background(), pipeline.Outbound{
		Key: key(111, ""), Text: "Sure?", Choices: []pipeline.Choice{{Label: "Yes, delete", Data: long}, {Label: "No", Data: "no"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sent := api.Sent(111)[0]
	kb := sent.Keyboard()
	if len(kb) != 2 || len(kb[0][0].CallbackData) > 64 || kb[1][0].CallbackData != "no" {
		t.Fatalf("keyboard = %+v", kb)
	}
	b.run()
	me := api.Me()
	api.Push(models.Update{CallbackQuery: &models.CallbackQuery{ID: "q9", From: models.User{ID: 111}, Data: kb[0][0].CallbackData,
		Message: models.MaybeInaccessibleMessage{Message: &models.Message{ID: sent.MsgID, Date: 1, Chat: privateChat(111), From: &me,
			ReplyMarkup: &models.InlineKeyboardMarkup{InlineKeyboard: kb}}}}})
	in := b.next(t)
	if in.Choice != long || in.Text != "Yes, delete" || in.MessageID != "cb:q9" {
		t.Fatalf("press = %+v", in)
	}
	api.Wait("answerCallbackQuery", func(calls []fakeCall) bool { return len(filterCalls(calls, "answerCallbackQuery")) == 1 })
}

// Edit, typing in a topic, and files.
func TestEditTypingAndFiles(t *testing.T) {
	api := newFakeAPI(t)
	b := newBare(t, api, Options{})
	ctx := context.Background()
	s := b.ad.Sender()
	topic := key(-100500, "77")

	id, err := s.Send(ctx, pipeline.Outbound{Key: topic, Text: "draft"})
	if err != nil || id == "" {
		t.Fatalf("Send = %q, %v", id, err)
	}
	ed := s.(pipeline.Editor)
	if err := ed.Edit(ctx, topic, id, "**final**"); err != nil {
		t.Fatal(err)
	}
	if err := ed.Edit(ctx, topic, id, "**final**"); err != nil {
		t.Errorf("an edit that changes nothing: %v", err)
	}
	edits := api.Calls("editMessageText")
	if edits[0].Fields["text"] != "<b>final</b>" || edits[0].Fields["parse_mode"] != "HTML" || edits[0].Fields["message_id"] != id {
		t.Errorf("edit = %v", edits[0].Fields)
	}

	if err := s.(pipeline.Typer).Typing(ctx, topic); err != nil {
		t.Fatal(err)
	}
	act := api.Calls("sendChatAction")[0]
	if act.Fields["action"] != "typing" || act.Fields["message_thread_id"] != "77" || act.Fields["chat_id"] != "-100500" {
		t.Errorf("sendChatAction = %v", act.Fields)
	}

	f := pipeline.File{Name: "export.json", MIME: "application/json", Data: []byte(`{"a":1}`)}
	if err := s.(pipeline.FileSender).SendFile(ctx, topic, f, "Your **export**"); err != nil {
		t.Fatal(err)
	}
	doc := api.Calls("sendDocument")[0]
	if doc.Files["document"].Name != "export.json" || string(doc.Files["document"].Data) != `{"a":1}` ||
		doc.Fields["caption"] != "Your export" || doc.Fields["message_thread_id"] != "77" {
		t.Errorf("sendDocument = %v %v", doc.Fields, doc.Files)
	}
	// A caption past Telegram's 1024 UTF-16 units is cut to fit, "…"
	// included (1,022 letters and an emoji make 1,024 units but 1,023
	// characters: counting characters sent 1,025 units).
	long := strings.Repeat("a", 1022) + strings.Repeat("😀", 10)
	if err := s.(pipeline.FileSender).SendFile(ctx, topic, f, long); err != nil {
		t.Fatalf("a long caption: %v", err)
	}
	doc = api.Calls("sendDocument")[1]
	if c := doc.Fields["caption"]; len(utf16.Encode([]rune(c))) > 1024 || !strings.HasSuffix(c, "a…") {
		t.Errorf("long caption = %d UTF-16 units, ends %q", len(utf16.Encode([]rune(c))), c[len(c)-12:])
	}
	if _, err := s.Send(ctx, pipeline.Outbound{Key: pipeline.Key{Channel: "whatsapp", Chat: "1"}, Text: "x"}); err == nil {
		t.Error("sending to a non-Telegram key worked")
	}
	if id, err := s.Send(ctx, pipeline.Outbound{Key: topic, Text: "  "}); err != nil || id != "" {
		t.Errorf("empty text: %q, %v", id, err)
	}
}

// When one part of a long reply cannot be parsed, only that part is sent
// as plain text; the others keep their formatting.
func TestParseErrorInOnePart(t *testing.T) {
	api := newFakeAPI(t)
	var n atomic.Int32
	api.SetHook(func(c *fakeCall) *fakeErr {
		if c.Method == "sendMessage" && c.Fields["parse_mode"] == "HTML" && n.Add(1) == 2 {
			return &fakeErr{Code: 400, Description: "Bad Request: can't parse entities: unexpected end tag"}
		}
		return nil
	})
	b := newBare(t, api, Options{})
	var md strings.Builder
	for i := 0; md.Len() < 30000; i++ {
		md.WriteString("Some **bold** text and a [link](https://example.com/" + itoa(i) + ").\n\n")
	}
	if _, err := b.ad.Sender().Send(context.Background(), pipeline.Outbound{Key: key(111, ""), Text: md.String()}); err != nil {
		t.Fatal(err)
	}
	sent := api.Sent(111)
	if len(sent) < 3 {
		t.Fatalf("%d parts", len(sent))
	}
	// The refused part may need two plain messages (link addresses are
	// written out), and the parts after it are formatted again.
	var modes []string
	for _, c := range sent {
		modes = append(modes, c.Fields["parse_mode"])
	}
	if modes[0] != "HTML" || modes[1] != "" || modes[len(modes)-1] != "HTML" {
		t.Errorf("parse modes: %q", modes)
	}
	plain := sent[1].Fields["text"]
	if strings.Contains(plain, "<b>") || !strings.Contains(plain, "link (https://example.com/") {
		t.Errorf("plain part = %.200q", plain)
	}
}

// A 429 is waited out however long its retry_after (here 240 "seconds" of
// 5ms): the message is sent when Telegram allows, never given up; only a
// cancelled ctx ends the wait.
func TestRateLimitIsWaitedOut(t *testing.T) {
	api := newFakeAPI(t)
	var limited atomic.Int32
	api.SetHook(func(c *fakeCall) *fakeErr {
		if c.Method == "sendMessage" && limited.Add(1) == 1 {
			return &fakeErr{Code: 429, Description: "Too Many Requests: retry after 240", RetryAfter: 240}
		}
		return nil
	})
	b := newBare(t, api, Options{})
	b.ad.out.retryUnit = 5 * time.Millisecond
	if _, err := b.ad.Sender().Send(context.Background(), pipeline.Outbound{Key: key(111, ""), Text: "hi"}); err != nil {
		t.Fatalf("Send = %v, want the message sent after the wait", err)
	}
	calls := api.Calls("sendMessage")
	if len(calls) != 2 || calls[1].Err != nil || calls[1].At.Sub(calls[0].At) < 240*5*time.Millisecond {
		t.Fatalf("calls: %s", dumpCalls(calls))
	}

	api.SetHook(func(c *fakeCall) *fakeErr {
		if c.Method == "sendMessage" {
			return &fakeErr{Code: 429, Description: "Too Many Requests: retry after 30", RetryAfter: 30}
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		api.Until(func(calls []fakeCall) bool { return len(filterCalls(calls, "sendMessage")) >= 3 })
		cancel()
	}()
	if _, err := b.ad.Sender().Send(ctx, pipeline.Outbound{Key: key(111, ""), Text: "hi"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send with a cancelled ctx = %v", err)
	}
}

// A send that fails transiently — a 5xx answer (JSON or an HTML page from
// the front end), a dropped connection, no answer before the client's
// timeout — is sent again, and delivered once; a 4xx is not retried.
func TestTransientSendFailuresAreRetried(t *testing.T) {
	for _, tt := range []struct {
		name      string
		fail      fakeErr
		n         int64
		delivered int
	}{
		{"502 twice", fakeErr{Code: 502, Description: "Bad Gateway"}, 2, 1},
		{"500", fakeErr{Code: 500, Description: "Internal Server Error"}, 1, 1},
		{"dropped connection", fakeErr{Code: dropConnection}, 1, 1},
		{"no answer before the timeout", fakeErr{Code: telegramtest.Hang}, 1, 1},
		{"502 for good", fakeErr{Code: 502, Description: "Bad Gateway"}, 100, 0},
		{"400 is not retried", fakeErr{Code: 400, Description: "Bad Request: chat not found"}, 1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t)
			var hits atomic.Int64
			api.SetHook(func(c *fakeCall) *fakeErr {
				if c.Method == "sendMessage" && hits.Add(1) <= tt.n {
					return &tt.fail
				}
				return nil
			})
			b := newBare(t, api, Options{HTTPClient: &http.Client{Timeout: 200 * time.Millisecond}})
			b.ad.out.retryBase, b.ad.out.retryMax = time.Millisecond, 5*time.Millisecond
			_, err := b.ad.Sender().Send(context.Background(), pipeline.Outbound{Key: key(111, ""), Text: "hi"})
			if got := len(api.Sent(111)); got != tt.delivered {
				t.Fatalf("delivered %d times, want %d (Send: %v)", got, tt.delivered, err)
			}
			if (err == nil) != (tt.delivered == 1) {
				t.Fatalf("Send = %v with %d delivered", err, tt.delivered)
			}
			attempts := len(api.Calls("sendMessage"))
			switch {
			case tt.fail.Code == 400 && attempts != 1:
				t.Errorf("a 400 was sent %d times, want once", attempts)
			case tt.n == 100 && attempts != 4:
				t.Errorf("a lasting 502 was tried %d times, want 4 (3 retries)", attempts)
			}
		})
	}
	// An HTML error page, as Telegram's front end answers when the Bot API
	// is down: the library cannot decode it; the status still tells.
	var hits atomic.Int64
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprint(w, "<html><body><h1>502 Bad Gateway</h1></body></html>")
	}))
	defer html.Close()
	ad, err := New(Options{Token: fakeToken, APIURL: html.URL}, func(pipeline.Inbound, pipeline.Sender) error { return nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	ad.out.retryBase, ad.out.retryMax = time.Millisecond, 5*time.Millisecond
	if _, err := ad.Sender().Send(context.Background(), pipeline.Outbound{Key: key(111, ""), Text: "hi"}); err == nil || !strings.Contains(err.Error(), "502") {
		t.Errorf("Send to an HTML 502 = %v, want an error naming 502", err)
	}
	if n := hits.Load(); n != 4 {
		t.Errorf("an HTML 502 was tried %d times, want 4", n)
	}
}

func TestNewValidates(t *testing.T) {
	submit := func(pipeline.Inbound, pipeline.Sender) error { return nil }
	for _, tt := range []struct {
		opts Options
		want string
	}{
		{Options{}, "telegram.token"},
		{Options{Token: "1:a", GroupsReply: "sometimes"}, "telegram.groups.reply"},
		{Options{Token: "1:a", Webhook: Webhook{URL: "https://x.example/hook", Listen: ":0"}}, "telegram.webhook.secret"},
		{Options{Token: "1:a", Webhook: Webhook{URL: "https://x.example/hook", Secret: "s"}}, "telegram.webhook.listen"},
		{Options{Token: "1:a", Webhook: Webhook{URL: "ftp://x", Listen: ":0", Secret: "s"}}, "telegram.webhook.url"},
	} {
		if _, err := New(tt.opts, submit, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want an error naming %s", tt.opts, err, tt.want)
		}
	}
	if _, err := New(Options{Token: "1:a"}, nil, nil); err == nil {
		t.Error("New without submit worked")
	}
}

// Link previews are off by default on every message and edit, streamed ones
// included (a preview jumps while the message grows); telegram.link_previews
// turns them on.
func TestLinkPreviewsOffByDefault(t *testing.T) {
	for _, on := range []bool{false, true} {
		api := newFakeAPI(t)
		b := newBare(t, api, Options{LinkPreviews: on})
		b.ad.out.streamEvery = time.Millisecond
		ctx := context.Background()
		k := key(-100500, "")
		id, err := b.ad.out.Send(ctx, pipeline.Outbound{Key: k, Text: "see https://example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.ad.out.Edit(ctx, k, id, "see https://example.org"); err != nil {
			t.Fatal(err)
		}
		st := streamSender{b.ad.out}.Stream(ctx, k, "")
		st.Append("growing https://example.net")
		api.Wait("the streamed message", func(calls []fakeCall) bool { return len(filterCalls(calls, "sendMessage")) >= 2 })
		if _, err := st.Finish(ctx, pipeline.Outbound{Text: "done https://example.net"}); err != nil {
			t.Fatal(err)
		}
		calls := api.Calls("sendMessage", "editMessageText")
		if len(calls) < 4 {
			t.Fatalf("calls: %s", dumpCalls(calls))
		}
		for _, c := range calls {
			got := c.Fields["link_preview_options"]
			if want := `{"is_disabled":true}`; !on && got != want || on && got != "" {
				t.Errorf("previews %v: %s has link_preview_options %q", on, c.Method, got)
			}
		}
	}
}
