package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

func itoa(n int) string { return strconv.Itoa(n) }

func key(chat int64, thread string) pipeline.Key {
	return pipeline.Key{Channel: Channel, Chat: strconv.FormatInt(chat, 10), Thread: thread}
}

// promptHas reports whether some message of the prompt contains s.
func promptHas(msgs []llm.Message, s string) bool {
	for _, m := range msgs {
		if strings.Contains(m.Content, s) {
			return true
		}
	}
	return false
}

// repliesTo counts the delivered messages replying to message id in chat.
func repliesTo(calls []fakeCall, chat int64, id int) int {
	n := 0
	for _, c := range calls {
		if c.Method == "sendMessage" && c.Err == nil && c.ChatID() == chat && c.ReplyTo() == id {
			n++
		}
	}
	return n
}

// (a) A private conversation continues across a restart: the prompt after
// the restart holds the turns from before it, and nothing is answered twice.
func TestPrivateConversationSurvivesRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: restarts the bot on its data (4 s on a busy 2-core machine); go test without -short runs it")
	}
	api := newFakeAPI(t)
	st := newStack(t, api, stackOptions{})
	user := privateChat(111)

	m1 := api.SendText(user, 111, "My name is Ada.")
	got := api.WaitSent(111, 1)
	if got[0].Fields["text"] != "echo: My name is Ada." || got[0].ReplyTo() != m1 || got[0].Fields["parse_mode"] != "HTML" {
		t.Fatalf("first reply = %v", got[0].Fields)
	}
	api.SendText(user, 111, "I like green tea.")
	api.WaitSent(111, 2)

	// The command menu was registered and polling deleted the webhook.
	if cmds := api.Calls("setMyCommands"); len(cmds) == 0 || !strings.Contains(cmds[0].Fields["commands"], `"summary"`) {
		t.Errorf("setMyCommands calls = %v", cmds)
	}
	if len(api.Calls("deleteWebhook")) == 0 {
		t.Error("deleteWebhook was not called at start")
	}

	st.restart()

	m3 := api.SendText(user, 111, "What do I like to drink?")
	got = api.WaitSent(111, 3)
	if got[2].ReplyTo() != m3 {
		t.Fatalf("third reply = %v", got[2].Fields)
	}
	prompt := st.lastPrompt()
	for _, want := range []string{"My name is Ada.", "echo: My name is Ada.", "I like green tea.", "What do I like to drink?"} {
		if !promptHas(prompt, want) {
			t.Errorf("the prompt after the restart lacks %q: %v", want, prompt)
		}
	}
	if n := len(api.Sent(111)); n != 3 {
		t.Errorf("%d replies, want 3 (one per message)", n)
	}
	if len(api.Calls("sendChatAction")) == 0 {
		t.Error("no typing indicator was sent")
	}
}

// (b) /summary through inline buttons: the question comes with buttons, a
// press is answered (answerCallbackQuery) and goes to the flow, and the
// settings are stored.
func TestSummaryThroughButtons(t *testing.T) {
	api := newFakeAPI(t)
	st := newStack(t, api, stackOptions{})
	user := privateChat(111)

	api.SendText(user, 111, "/summary")
	q := api.WaitSent(111, 1)[0]
	kb := q.Keyboard()
	if len(kb) != 3 || kb[0][0].CallbackData != "sqlite" || kb[1][0].CallbackData != "json" || kb[1][0].Text != "JSON file" {
		t.Fatalf("keyboard = %+v (text %q)", kb, q.Fields["text"])
	}

	// Press "JSON file" on the bot's message.
	me := api.Me()
	api.Push(models.Update{CallbackQuery: &models.CallbackQuery{
		ID: "cbq-1", From: models.User{ID: 111, FirstName: "Ada"}, Data: "json",
		Message: models.MaybeInaccessibleMessage{Type: models.MaybeInaccessibleMessageTypeMessage, Message: &models.Message{
			ID: q.MsgID, Date: int(time.Now().Unix()), Chat: user, From: &me, Text: q.Fields["text"],
			ReplyMarkup: &models.InlineKeyboardMarkup{InlineKeyboard: kb},
		}},
	}})
	api.Wait("answerCallbackQuery", func(calls []fakeCall) bool {
		for _, c := range filterCalls(calls, "answerCallbackQuery") {
			if c.Fields["callback_query_id"] == "cbq-1" {
				return true
			}
		}
		return false
	})
	// The buttons are our own JSON: only text and callback_data (the
	// library's type adds "copy_text":{"text":""} to every button).
	if raw := q.Fields["reply_markup"]; strings.Contains(raw, "copy_text") || !strings.Contains(raw, `"callback_data":"json"`) {
		t.Errorf("reply_markup sent = %s", raw)
	}
	// After the press the buttons are taken off the question.
	api.Wait("the question's buttons removed", func(calls []fakeCall) bool {
		for _, c := range filterCalls(calls, "editMessageReplyMarkup") {
			if c.Err == nil && c.MsgID == q.MsgID {
				return true
			}
		}
		return false
	})
	if m := api.ShownMarkup(111, q.MsgID); m != "" {
		t.Errorf("the question still shows %s", m)
	}
	step2 := api.WaitSent(111, 2)[1]
	if !strings.Contains(step2.Fields["text"], "Step 2 of 2") || !strings.Contains(step2.Fields["text"], "JSON file") {
		t.Fatalf("step 2 = %q", step2.Fields["text"])
	}
	api.SendText(user, 111, "15")
	done := api.WaitSent(111, 3)[2]
	if !strings.Contains(done.Fields["text"], "configured") {
		t.Fatalf("last answer = %q", done.Fields["text"])
	}
	set, err := st.store.Settings(context.Background(), "telegram:111")
	if err != nil {
		t.Fatal(err)
	}
	if set.Storage != memory.StorageJSON || set.Threshold != 15 || !set.MemoryEnabled {
		t.Errorf("settings = %+v, want json, 15, on", set)
	}
	if n := len(st.llm.Requests()); n != 0 {
		t.Errorf("%d LLM calls for commands and buttons, want 0", n)
	}
}

// (c) A forum topic is its own conversation: its history stays apart from
// the main chat's, and replies go to the topic.
func TestForumTopicKeptApart(t *testing.T) {
	api := newFakeAPI(t)
	st := newStack(t, api, stackOptions{})
	forum := groupChat(-100500, true)

	inTopic := api.TextMessage(forum, 111, "@"+fakeBotName+" the topic secret is blue")
	inTopic.Entities = []models.MessageEntity{mention()}
	inTopic.IsTopicMessage, inTopic.MessageThreadID = true, 77
	inTopic.ReplyToMessage = &models.Message{ID: 77, Chat: forum, Date: 1, ForumTopicCreated: &models.ForumTopicCreated{Name: "Secrets"}}
	api.Push(models.Update{Message: inTopic})
	r1 := api.WaitSent(forum.ID, 1)[0]
	if r1.Fields["message_thread_id"] != "77" || r1.ReplyTo() != inTopic.ID || r1.Fields["text"] != "echo: the topic secret is blue" {
		t.Fatalf("topic reply = %v", r1.Fields)
	}

	inMain := api.TextMessage(forum, 111, "@"+fakeBotName+" what is the topic secret?")
	inMain.Entities = []models.MessageEntity{mention()}
	api.Push(models.Update{Message: inMain})
	r2 := api.WaitSent(forum.ID, 2)[1]
	if _, ok := r2.Fields["message_thread_id"]; ok || r2.ReplyTo() != inMain.ID {
		t.Fatalf("main chat reply = %v", r2.Fields)
	}
	if promptHas(st.lastPrompt(), "blue") {
		t.Errorf("the main chat's prompt holds the topic's history: %v", st.lastPrompt())
	}
	if stored, answered := st.lookup(key(forum.ID, "77"), inTopic.ID); !stored || !answered {
		t.Errorf("topic message stored=%v answered=%v under the topic key", stored, answered)
	}
	if stored, _ := st.lookup(key(forum.ID, ""), inTopic.ID); stored {
		t.Error("the topic message is stored under the main chat's key")
	}
	if stored, _ := st.lookup(key(forum.ID, ""), inMain.ID); !stored {
		t.Error("the main chat message is not stored under the main chat's key")
	}
}

// (d) In a group with groups.reply=mention only addressed messages are
// answered; with always every message is.
func TestGroupMentionGating(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: every group case through the fake Bot API (7 s on a busy 2-core machine); go test without -short runs it")
	}
	api := newFakeAPI(t)
	st := newStack(t, api, stackOptions{})
	group := groupChat(-100600, false)

	chatter := api.SendText(group, 111, "hello everyone")

	ment := api.TextMessage(group, 111, "@"+fakeBotName+", what time is it?")
	ment.Entities = []models.MessageEntity{mention()}
	api.Push(models.Update{Message: ment})
	r := api.WaitSent(group.ID, 1)
	if r[0].ReplyTo() != ment.ID || r[0].Fields["text"] != "echo: what time is it?" {
		t.Fatalf("reply to the mention = %v", r[0].Fields)
	}
	// The unaddressed message came first in the same conversation: had it
	// been answered, that answer would be here already.
	if n := repliesTo(api.Calls(), group.ID, chatter); n != 0 {
		t.Errorf("the unaddressed message got %d replies", n)
	}
	if stored, _ := st.lookup(key(group.ID, ""), chatter); stored {
		t.Error("the unaddressed message was stored")
	}

	reply := api.TextMessage(group, 111, "and tomorrow?")
	me := api.Me()
	reply.ReplyToMessage = &models.Message{ID: r[0].MsgID, Chat: group, Date: 1, From: &me, Text: r[0].Fields["text"]}
	api.Push(models.Update{Message: reply})
	r = api.WaitSent(group.ID, 2)
	if r[1].ReplyTo() != reply.ID || r[1].Fields["text"] != "echo: and tomorrow?" {
		t.Fatalf("reply to the reply = %v", r[1].Fields)
	}

	// Another bot's command is not ours; ours is.
	other := api.SendText(group, 111, "/help@OtherBot")
	ours := api.SendText(group, 111, "/help@"+fakeBotName)
	r = api.WaitSent(group.ID, 3)
	if r[2].ReplyTo() != ours || !strings.Contains(r[2].Fields["text"], "/summary") {
		t.Fatalf("reply to /help@%s = %v", fakeBotName, r[2].Fields)
	}
	if n := repliesTo(api.Calls(), group.ID, other); n != 0 {
		t.Errorf("/help@OtherBot got %d replies", n)
	}

	st.stop()
	st.opts.groupsReply = GroupsReplyAlways
	st.start()
	plain := api.SendText(group, 111, "nobody asked you")
	r = api.WaitSent(group.ID, 4)
	if r[3].ReplyTo() != plain || r[3].Fields["text"] != "echo: nobody asked you" {
		t.Fatalf("with groups.reply=always = %v", r[3].Fields)
	}
}

// (e) A 9,000-character reply arrives as several valid HTML messages of at
// most 4096 characters, in order, nothing lost.
func TestLongReplySplit(t *testing.T) {
	var long strings.Builder
	for i := 0; long.Len() < 9000; i++ {
		fmt.Fprintf(&long, "Paragraph %d has **bold words** and `code <tags>` & more text to read.\n\n", i)
	}
	api := newFakeAPI(t)
	newStack(t, api, stackOptions{llm: func(r llmtest.Request) llmtest.Response {
		if promptHas(r.Messages[len(r.Messages)-1:], "long please") {
			return llmtest.Response{Text: long.String()}
		}
		return llmtest.Echo("echo: ")(r)
	}})
	user := privateChat(111)
	m := api.SendText(user, 111, "long please")
	ping := api.SendText(user, 111, "ping")
	api.Wait("the reply to ping", func(calls []fakeCall) bool { return repliesTo(calls, 111, ping) == 1 })

	var parts []fakeCall
	for _, c := range api.Calls("sendMessage") {
		if c.ChatID() == 111 && c.ReplyTo() != ping {
			parts = append(parts, c)
		}
	}
	if len(parts) < 3 {
		t.Fatalf("%d parts, want at least 3", len(parts))
	}
	var shown strings.Builder
	for i, p := range parts {
		if p.Err != nil {
			t.Fatalf("part %d refused: %+v", i, p.Err)
		}
		if p.Fields["parse_mode"] != "HTML" {
			t.Errorf("part %d parse_mode = %q", i, p.Fields["parse_mode"])
		}
		text, err := parseHTML(p.Fields["text"])
		if err != nil {
			t.Errorf("part %d is not valid HTML: %v", i, err)
		}
		if n := len(utf16.Encode([]rune(text))); n > 4096 {
			t.Errorf("part %d has %d characters", i, n)
		}
		if (i == 0) != (p.ReplyTo() == m) {
			t.Errorf("part %d reply_to = %d", i, p.ReplyTo())
		}
		shown.WriteString(text + "\n")
	}
	last := -1
	for i := 0; strings.Contains(long.String(), fmt.Sprintf("Paragraph %d ", i)); i++ {
		at := strings.Index(shown.String(), fmt.Sprintf("Paragraph %d has bold words and code <tags> & more", i))
		if at < 0 || at < last {
			t.Fatalf("paragraph %d missing or out of order", i)
		}
		last = at
	}
}

// (f) When Telegram cannot parse the HTML, the reply is delivered as plain
// text.
func TestParseErrorFallsBackToPlainText(t *testing.T) {
	api := newFakeAPI(t)
	api.SetHook(func(c *fakeCall) *fakeErr {
		if c.Method == "sendMessage" && c.Fields["parse_mode"] == "HTML" {
			return &fakeErr{Code: 400, Description: "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0"}
		}
		return nil
	})
	newStack(t, api, stackOptions{llm: func(llmtest.Request) llmtest.Response {
		return llmtest.Response{Text: "**Hello** _there_, see [the docs](https://example.com)."}
	}})
	m := api.SendText(privateChat(111), 111, "hi")
	got := api.WaitSent(111, 1)[0]
	if _, ok := got.Fields["parse_mode"]; ok || got.ReplyTo() != m {
		t.Fatalf("fallback = %v", got.Fields)
	}
	text := got.Fields["text"]
	if !strings.Contains(text, "Hello") || strings.Contains(text, "**") || strings.Contains(text, "<b>") {
		t.Errorf("fallback text = %q, want plain text", text)
	}
}

// (g) 429 on sendMessage: the reply is sent again after retry_after, once.
func TestRateLimitedSendIsRetried(t *testing.T) {
	api := newFakeAPI(t)
	var limited atomic.Bool
	api.SetHook(func(c *fakeCall) *fakeErr {
		if c.Method == "sendMessage" && limited.CompareAndSwap(false, true) {
			return &fakeErr{Code: 429, Description: "Too Many Requests: retry after 1", RetryAfter: 1}
		}
		return nil
	})
	newStack(t, api, stackOptions{})
	m := api.SendText(privateChat(111), 111, "hello")
	ping := api.SendText(privateChat(111), 111, "ping")
	api.Wait("the second reply", func(calls []fakeCall) bool { return repliesTo(calls, 111, ping) == 1 })

	calls := api.Calls("sendMessage")
	if calls[0].Err == nil || calls[0].Err.Code != 429 {
		t.Fatalf("first sendMessage = %+v, want the scripted 429", calls[0])
	}
	if n := repliesTo(calls, 111, m); n != 1 {
		t.Fatalf("%d replies to the rate-limited message, want 1", n)
	}
	for _, c := range calls[1:] {
		if c.ReplyTo() == m {
			if wait := c.At.Sub(calls[0].At); wait < time.Second {
				t.Errorf("retried after %s, before retry_after (1s)", wait)
			}
		}
	}
}

// (h) Webhook: a wrong or missing secret gets 401 and nothing is processed;
// the right one is processed.
func TestWebhookSecret(t *testing.T) {
	api := newFakeAPI(t)
	st := newStack(t, api, stackOptions{webhook: &Webhook{URL: "https://bot.example.com/tg/hook", Listen: "127.0.0.1:0", Secret: "s3cret_token"}})
	hook := api.Wait("setWebhook", func(calls []fakeCall) bool { return len(filterCalls(calls, "setWebhook")) > 0 })
	set := filterCalls(hook, "setWebhook")[0]
	if set.Fields["url"] != "https://bot.example.com/tg/hook" || set.Fields["secret_token"] != "s3cret_token" || set.Fields["drop_pending_updates"] != "" {
		t.Fatalf("setWebhook = %v", set.Fields)
	}
	url := "http://" + st.addr + "/tg/hook"
	post := func(secret, body string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if secret != "" {
			req.Header.Set(secretHeader, secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	update := func(id, msgID int, text string) string {
		return fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"date":%d,"chat":{"id":111,"type":"private"},"from":{"id":111,"is_bot":false,"first_name":"Ada"},"text":%q}}`,
			id, msgID, time.Now().Unix(), text)
	}
	if code := post("wrong", update(1, 10, "not me")); code != http.StatusUnauthorized {
		t.Errorf("wrong secret: %d, want 401", code)
	}
	if code := post("", update(2, 11, "not me either")); code != http.StatusUnauthorized {
		t.Errorf("missing secret: %d, want 401", code)
	}
	// A body the bot cannot use is taken (200): a 400 would make Telegram
	// deliver it again and again, holding up the chat.
	if code := post("s3cret_token", `{"update_id": 3, "message": [`); code != http.StatusOK {
		t.Errorf("bad JSON: %d, want 200", code)
	}
	if code := post("s3cret_token", update(4, 12, "hello hook")); code != http.StatusOK {
		t.Errorf("right secret: %d, want 200", code)
	}
	got := api.WaitSent(111, 1)
	if len(got) != 1 || got[0].Fields["text"] != "echo: hello hook" || got[0].ReplyTo() != 12 {
		t.Fatalf("replies = %v", got)
	}
	// A message with a field variant newer than the library is answered.
	future := strings.Replace(update(5, 13, "from the future"), `"text"`, `"forward_origin":{"type":"hologram","date":1},"text"`, 1)
	if code := post("s3cret_token", future); code != http.StatusOK {
		t.Errorf("an update with an unknown variant: %d, want 200", code)
	}
	got = api.WaitSent(111, 2)
	if got[1].Fields["text"] != "echo: from the future" || got[1].ReplyTo() != 13 {
		t.Fatalf("reply to the unknown variant = %v", got[1].Fields)
	}
	for _, id := range []int{10, 11} {
		if stored, _ := st.lookup(key(111, ""), id); stored {
			t.Errorf("message %d with a bad secret was stored", id)
		}
	}
	if n := len(st.llm.Requests()); n != 2 {
		t.Errorf("%d LLM calls, want 2", n)
	}
	if n := len(api.Calls("getUpdates")); n != 0 {
		t.Errorf("%d getUpdates calls in webhook mode", n)
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %v %v", resp.StatusCode, err)
	}
}

// (h') Webhook: an update that cannot be stored gets 500, so Telegram
// delivers it again.
func TestWebhookAcceptFailureIs500(t *testing.T) {
	api := newFakeAPI(t)
	var fail atomic.Bool
	fail.Store(true)
	st := newStack(t, api, stackOptions{
		webhook: &Webhook{URL: "https://bot.example.com/", Listen: "127.0.0.1:0", Secret: "s"},
		accept: func(ctx context.Context, in pipeline.Inbound, next pipeline.AcceptFunc) error {
			if fail.Load() {
				return errors.New("disk full")
			}
			return next(ctx, in)
		},
	})
	body := fmt.Sprintf(`{"update_id":1,"message":{"message_id":5,"date":%d,"chat":{"id":111,"type":"private"},"from":{"id":111,"first_name":"Ada"},"text":"hi"}}`, time.Now().Unix())
	post := func() int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+st.addr+"/", strings.NewReader(body))
		req.Header.Set(secretHeader, "s")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(); code != http.StatusInternalServerError {
		t.Fatalf("accept failing: %d, want 500", code)
	}
	fail.Store(false)
	if code := post(); code != http.StatusOK {
		t.Fatalf("redelivery: %d, want 200", code)
	}
	if got := api.WaitSent(111, 1); len(got) != 1 {
		t.Fatalf("replies = %v", got)
	}
}

// (i) Crash safety: the adapter stops right after accepting a message and
// before answering it. After the restart the unconfirmed updates come again;
// nothing is answered twice and nothing is lost.
func TestCrashNoLossNoDouble(t *testing.T) {
	t.Run("unconfirmed batch redelivered", func(t *testing.T) {
		api := newFakeAPI(t)
		user := privateChat(111)
		m1 := api.SendText(user, 111, "first")
		m2 := api.SendText(user, 111, "second")
		u2 := api.ConfirmedID() // 0: nothing confirmed yet
		crashNow, crashed := make(chan struct{}), make(chan struct{})
		var restarted atomic.Bool
		st := newStack(t, api, stackOptions{submit: func(in pipeline.Inbound, out pipeline.Sender, next pipeline.SubmitFunc) error {
			if in.Text != "second" || restarted.Load() {
				return next(in, out)
			}
			// "second" is accepted (stored) but never reaches the pipeline:
			// the process dies here, after "first" was answered.
			api.Until(func(calls []fakeCall) bool { return repliesTo(calls, 111, m1) == 1 })
			close(crashNow)
			<-crashed
			return nil
		}})
		<-crashNow
		st.cancel()
		close(crashed)
		if err := <-st.runErr; err != nil {
			t.Fatalf("Run: %v", err)
		}
		st.runErr <- nil // for stop
		restarted.Store(true)
		if c := api.ConfirmedID(); c != u2 {
			t.Fatalf("updates confirmed up to %d before they were all handled", c)
		}
		if stored, answered := st.lookup(key(111, ""), m2); !stored || answered {
			t.Fatalf("second: stored=%v answered=%v, want stored and unanswered", stored, answered)
		}
		st.restart()
		m3 := api.SendText(user, 111, "third")
		calls := api.Wait("the reply to third", func(calls []fakeCall) bool { return repliesTo(calls, 111, m3) == 1 })
		for _, m := range []int{m1, m2} {
			if n := repliesTo(calls, 111, m); n != 1 {
				t.Errorf("message %d answered %d times, want once", m, n)
			}
		}
		if n := len(api.Sent(111)); n != 3 {
			t.Errorf("%d replies, want 3", n)
		}
	})
	t.Run("confirmed but unanswered picked up by Pending", func(t *testing.T) {
		api := newFakeAPI(t)
		user := privateChat(111)
		var drop atomic.Bool
		drop.Store(true)
		dropped := make(chan int, 1)
		st := newStack(t, api, stackOptions{submit: func(in pipeline.Inbound, out pipeline.Sender, next pipeline.SubmitFunc) error {
			if drop.Load() && in.Text == "lost in flight" {
				id, _ := strconv.Atoi(in.MessageID)
				dropped <- id
				return nil // accepted, then the turn died with the process
			}
			return next(in, out)
		}})
		api.SendText(user, 111, "lost in flight")
		m := <-dropped
		upd := api.LastUpdateID()
		api.Wait("the update to be confirmed", func([]fakeCall) bool { return api.ConfirmedID() >= upd })
		drop.Store(false)
		st.restart()
		calls := api.Wait("the pending reply", func(calls []fakeCall) bool { return repliesTo(calls, 111, m) == 1 })
		if got := api.Sent(111); len(got) != 1 || got[0].Fields["text"] != "echo: lost in flight" {
			t.Fatalf("replies = %v", calls)
		}
	})
}

// A message that cannot be stored stays unconfirmed and is retried; it is
// handed to the pipeline once, after it was stored.
func TestAcceptFailureIsRetriedWithoutConfirming(t *testing.T) {
	api := newFakeAPI(t)
	var failures atomic.Int32
	failures.Store(3)
	var mu sync.Mutex
	var confirmedWhileFailing []int64
	st := newStack(t, api, stackOptions{accept: func(ctx context.Context, in pipeline.Inbound, next pipeline.AcceptFunc) error {
		if failures.Add(-1) >= 0 {
			mu.Lock()
			confirmedWhileFailing = append(confirmedWhileFailing, api.ConfirmedID())
			mu.Unlock()
			return errors.New("database is locked")
		}
		return next(ctx, in)
	}})
	m := api.SendText(privateChat(111), 111, "store me")
	api.WaitSent(111, 1)
	mu.Lock()
	defer mu.Unlock()
	for _, c := range confirmedWhileFailing {
		if c != 0 {
			t.Errorf("an update was confirmed while its accept failed (%d)", c)
		}
	}
	if stored, answered := st.lookup(key(111, ""), m); !stored || !answered {
		t.Errorf("stored=%v answered=%v", stored, answered)
	}
	if n := len(api.Sent(111)); n != 1 {
		t.Errorf("%d replies, want 1", n)
	}
}

// (j) A sticker in a private chat gets the fixed text-only answer, not the
// LLM; a photo in a group not addressed to the bot is ignored; a captioned
// photo is answered.
func TestMediaInPrivateChat(t *testing.T) {
	api := newFakeAPI(t)
	st := newStack(t, api, stackOptions{})
	user := privateChat(111)
	sticker := &models.Message{ID: api.MsgID(111), Date: int(time.Now().Unix()), Chat: user,
		From: &models.User{ID: 111, FirstName: "Ada"}, Sticker: &models.Sticker{FileID: "stk"}}
	api.Push(models.Update{Message: sticker})
	got := api.WaitSent(111, 1)[0]
	if got.Fields["text"] != TextOnlyReply || got.ReplyTo() != sticker.ID || got.Fields["parse_mode"] != "" {
		t.Fatalf("answer to a sticker = %v", got.Fields)
	}
	if stored, _ := st.lookup(key(111, ""), sticker.ID); stored {
		t.Error("the sticker was stored")
	}

	group := groupChat(-100700, false)
	photo := &models.Message{ID: api.MsgID(group.ID), Date: int(time.Now().Unix()), Chat: group,
		From: &models.User{ID: 111, FirstName: "Ada"}, Photo: []models.PhotoSize{{FileID: "p"}}}
	api.Push(models.Update{Message: photo})

	captioned := &models.Message{ID: api.MsgID(111), Date: int(time.Now().Unix()), Chat: user,
		From: &models.User{ID: 111, FirstName: "Ada"}, Photo: []models.PhotoSize{{FileID: "p"}}, Caption: "what is this?"}
	api.Push(models.Update{Message: captioned})
	// The photo could not be downloaded (the fake hosts no such file): its
	// caption is still answered, and the model is told of the photo.
	if got := api.WaitSent(111, 2); got[1].Fields["text"] != "echo: 📷 [the user sent a photo you cannot see]\nwhat is this?" {
		t.Fatalf("answer to a captioned photo = %v", got[1].Fields)
	}
	if n := len(api.Sent(group.ID)); n != 0 {
		t.Errorf("a photo in a group got %d answers", n)
	}
	if n := len(st.llm.Requests()); n != 1 {
		t.Errorf("%d LLM calls, want 1 (the caption only)", n)
	}
}

// (j') 403 (the user blocked the bot) is quiet: ErrBlocked, logged at info,
// and the bot goes on serving others.
func TestBlockedUserIsQuiet(t *testing.T) {
	api := newFakeAPI(t)
	api.SetHook(func(c *fakeCall) *fakeErr {
		if c.Method == "sendMessage" && c.ChatID() == 222 {
			return &fakeErr{Code: 403, Description: "Forbidden: bot was blocked by the user"}
		}
		return nil
	})
	st := newStack(t, api, stackOptions{})
	_, err := st.ad.Sender().Send(context.Background(), pipeline.Outbound{Key: key(222, ""), Text: "hi"})
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("Send to a blocked user: %v, want ErrBlocked", err)
	}
	api.SendText(privateChat(222), 222, "hello?")
	api.Wait("the attempt to answer 222", func(calls []fakeCall) bool {
		n := 0
		for _, c := range filterCalls(calls, "sendMessage") {
			if c.ChatID() == 222 {
				n++
			}
		}
		return n >= 2
	})
	api.SendText(privateChat(111), 111, "still there?")
	api.WaitSent(111, 1)
	logs := st.logs.String()
	if !strings.Contains(logs, "level=INFO msg=\"cannot send: the user blocked the bot") {
		t.Errorf("no info log for the blocked user:\n%s", logs)
	}
	if strings.Contains(logs, fakeToken) {
		t.Error("the token appears in the logs")
	}
}
