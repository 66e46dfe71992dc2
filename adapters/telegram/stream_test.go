package telegram

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/adapters/telegram/format"
	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// Streaming (telegram.stream) on the whole stack: the llmtest server streams
// the answer piece by piece as the test releases it (Step), the fake Bot API
// records every call with its arrival time. Updates are 100ms apart instead
// of a second (streamEvery), so the tests stay fast while the throttle is
// checked on the recorded times.

const testEvery = 100 * time.Millisecond

// paced answers every request with pieces, released one per receive from
// step (a closed step releases everything).
func paced(step <-chan struct{}, pieces ...string) llmtest.Handler {
	return func(llmtest.Request) llmtest.Response {
		return llmtest.Response{Pieces: pieces, Text: strings.Join(pieces, ""), Step: step}
	}
}

// topicMessage queues a message mentioning the bot in topic 77 of forum.
func topicMessage(api *fakeAPI, forum models.Chat, text string) *models.Message {
	m := api.TextMessage(forum, 111, "@"+fakeBotName+" "+text)
	m.Entities = []models.MessageEntity{mention()}
	m.IsTopicMessage, m.MessageThreadID = true, 77
	m.ReplyToMessage = &models.Message{ID: 77, Chat: forum, Date: 1, ForumTopicCreated: &models.ForumTopicCreated{Name: "Topic"}}
	api.Push(models.Update{Message: m})
	return m
}

// waitCall waits for a call matching ok and returns the first one.
func waitCall(api *fakeAPI, what string, ok func(c fakeCall) bool) fakeCall {
	calls := api.Wait(what, func(calls []fakeCall) bool {
		for _, c := range calls {
			if ok(c) {
				return true
			}
		}
		return false
	})
	for _, c := range calls {
		if ok(c) {
			return c
		}
	}
	panic("unreachable")
}

// isCall matches a successful call of method to chat, with text if not "".
func isCall(method string, chat int64, text string) func(c fakeCall) bool {
	return func(c fakeCall) bool {
		return c.Method == method && c.Err == nil && c.ChatID() == chat && (text == "" || c.Fields["text"] == text)
	}
}

// isFinalEdit matches a successful formatted edit in chat.
func isFinalEdit(chat int64) func(c fakeCall) bool {
	return func(c fakeCall) bool {
		return c.Method == "editMessageText" && c.Err == nil && c.ChatID() == chat && c.Fields["parse_mode"] == "HTML"
	}
}

// updates are the calls that changed what chat shows, in order.
func updates(calls []fakeCall, chat int64, methods ...string) []fakeCall {
	var out []fakeCall
	for _, c := range filterCalls(calls, methods...) {
		if c.Err == nil && c.ChatID() == chat {
			out = append(out, c)
		}
	}
	return out
}

// checkPace fails when two of calls are less than every apart.
func checkPace(t *testing.T, calls []fakeCall, every time.Duration) {
	t.Helper()
	for i := 1; i < len(calls); i++ {
		if gap := calls[i].At.Sub(calls[i-1].At); gap < every {
			t.Errorf("%s %q came %s after %s %q, less than %s", calls[i].Method, calls[i].Fields["text"],
				gap, calls[i-1].Method, calls[i-1].Fields["text"], every)
		}
	}
}

// storedReply is the newest assistant message stored for key.
func (s *stack) storedReply(key pipeline.Key) string {
	s.t.Helper()
	msgs, err := s.store.Recent(context.Background(), key, 0, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == memory.RoleAssistant {
			return msgs[i].Text
		}
	}
	return ""
}

// In a forum topic the reply is a message that grows by edits, in plain
// text, at most one update per interval; the typing indicator stops at the
// first text; the reply is stored before the final edit turns the message
// into the formatted reply.
func TestStreamGrowsByEditsInTopic(t *testing.T) {
	api := newFakeAPI(t)
	step := make(chan struct{})
	pieces := []string{"Hello", " there,", " this is", " **bold**", " and", " done."}
	st := newStack(t, api, stackOptions{stream: true, streamEvery: testEvery, typingEvery: 10 * time.Millisecond, llm: paced(step, pieces...)})
	forum := groupChat(-100500, true)
	k := key(forum.ID, "77")
	full := strings.Join(pieces, "")

	var storedFirst atomic.Int32 // 1: stored before the final edit, 2: not
	api.SetHook(func(c *fakeCall) *fakeErr {
		if c.Method == "editMessageText" && c.Fields["parse_mode"] == "HTML" {
			if msgs, err := st.store.Recent(context.Background(), k, 0, 0); err == nil && len(msgs) > 0 && msgs[len(msgs)-1].Text == full {
				storedFirst.CompareAndSwap(0, 1)
			} else {
				storedFirst.CompareAndSwap(0, 2)
			}
		}
		return nil
	})

	in := topicMessage(api, forum, "say hello")
	waitCall(api, "the typing indicator", isCall("sendChatAction", forum.ID, ""))
	step <- struct{}{}
	first := waitCall(api, "the first text", isCall("sendMessage", forum.ID, ""))
	if first.Fields["text"] != "Hello" || first.Fields["parse_mode"] != "" || first.Fields["message_thread_id"] != "77" || first.ReplyTo() != in.ID {
		t.Fatalf("first message = %v", first.Fields)
	}
	typing := len(api.Calls("sendChatAction"))
	step <- struct{}{}
	waitCall(api, "the first edit", isCall("editMessageText", forum.ID, "Hello there,"))
	step <- struct{}{}
	step <- struct{}{}
	waitCall(api, "the second edit", isCall("editMessageText", forum.ID, "Hello there, this is bold"))
	step <- struct{}{}
	step <- struct{}{}
	final := waitCall(api, "the final edit", isFinalEdit(forum.ID))

	if final.Fields["text"] != "Hello there, this is <b>bold</b> and done." || final.Fields["message_id"] != itoa(first.MsgID) {
		t.Errorf("final edit = %v", final.Fields)
	}
	if got := api.ShownText(forum.ID, first.MsgID); got != final.Fields["text"] {
		t.Errorf("the message shows %q", got)
	}
	if got := st.storedReply(k); got != full {
		t.Errorf("stored reply = %q, want %q", got, full)
	}
	if storedFirst.Load() != 1 {
		t.Error("the reply was not stored before the final edit")
	}
	calls := api.Calls()
	if n := len(updates(calls, forum.ID, "sendMessage")); n != 1 {
		t.Errorf("%d messages sent, want 1 (the streamed one)", n)
	}
	shown := updates(calls, forum.ID, "sendMessage", "editMessageText")
	checkPace(t, shown, testEvery)
	for _, c := range shown {
		if c.Method == "editMessageText" && c.Fields["parse_mode"] == "" && strings.Contains(c.Fields["text"], "*") {
			t.Errorf("a streamed edit shows Markdown: %q", c.Fields["text"])
		}
	}
	// One indicator may have been in flight at the first text; a running
	// one (every 10ms) would have sent many more.
	if extra := len(api.Calls("sendChatAction")) - typing; extra > 1 {
		t.Errorf("%d typing indicators after the first text", extra)
	}
	if reqs := st.llm.Requests(); len(reqs) != 1 || !reqs[0].Stream {
		t.Errorf("LLM requests = %+v, want one streamed", reqs)
	}
	if len(api.Calls("sendMessageDraft")) != 0 {
		t.Error("drafts used in a group")
	}
}

// In a private chat the reply grows as a draft; the formatted reply is then
// sent as a message, replying to the user's; nothing is edited.
func TestStreamDraftsInPrivateChat(t *testing.T) {
	api := newFakeAPI(t)
	step := make(chan struct{})
	st := newStack(t, api, stackOptions{stream: true, streamEvery: testEvery, llm: paced(step, "One", " two", " *three*")})
	user := privateChat(111)

	m := api.SendText(user, 111, "count")
	step <- struct{}{}
	d1 := waitCall(api, "the first draft", isCall("sendMessageDraft", 111, "One"))
	step <- struct{}{}
	d2 := waitCall(api, "the second draft", isCall("sendMessageDraft", 111, "One two"))
	close(step)
	got := api.WaitSent(111, 1)[0]

	if got.Fields["text"] != "One two <i>three</i>" || got.Fields["parse_mode"] != "HTML" || got.ReplyTo() != m {
		t.Errorf("reply = %v", got.Fields)
	}
	if d1.Fields["draft_id"] == "" || d1.Fields["draft_id"] == "0" || d1.Fields["draft_id"] != d2.Fields["draft_id"] {
		t.Errorf("draft ids %q and %q: want one non-zero id per reply", d1.Fields["draft_id"], d2.Fields["draft_id"])
	}
	calls := api.Calls()
	checkPace(t, updates(calls, 111, "sendMessageDraft"), testEvery)
	if n := len(filterCalls(calls, "editMessageText")); n != 0 {
		t.Errorf("%d edits, want none", n)
	}
	if got := st.storedReply(key(111, "")); got != "One two *three*" {
		t.Errorf("stored reply = %q", got)
	}
}

// When Telegram refuses drafts, the reply is streamed by edits instead, and
// later replies do not try drafts again.
func TestStreamDraftsRefusedFallsBackToEdits(t *testing.T) {
	api := newFakeAPI(t)
	steps := []chan struct{}{make(chan struct{}), make(chan struct{})}
	newStack(t, api, stackOptions{stream: true, streamEvery: testEvery, llm: func(r llmtest.Request) llmtest.Response {
		return paced(steps[(r.N-1)%2], "Alpha", " *beta*", " gamma")(r)
	}})
	api.SetHook(func(c *fakeCall) *fakeErr {
		if c.Method == "sendMessageDraft" {
			return &fakeErr{Code: 400, Description: "Bad Request: method is available only for bots with forum topic mode enabled"}
		}
		return nil
	})
	user := privateChat(111)

	api.SendText(user, 111, "first")
	steps[0] <- struct{}{}
	first := waitCall(api, "the first text as a message", isCall("sendMessage", 111, "Alpha"))
	close(steps[0])
	final := waitCall(api, "the final edit", isFinalEdit(111))
	if final.Fields["text"] != "Alpha <i>beta</i> gamma" || final.Fields["message_id"] != itoa(first.MsgID) {
		t.Errorf("final edit = %v", final.Fields)
	}

	api.SendText(user, 111, "second")
	steps[1] <- struct{}{}
	waitCall(api, "the second reply's first text", func(c fakeCall) bool {
		return isCall("sendMessage", 111, "Alpha")(c) && c.MsgID != first.MsgID
	})
	close(steps[1])
	api.Wait("the second final edit", func(calls []fakeCall) bool {
		n := 0
		for _, c := range calls {
			if isFinalEdit(111)(c) {
				n++
			}
		}
		return n == 2
	})
	if n := len(api.Calls("sendMessageDraft")); n != 1 {
		t.Errorf("%d draft attempts, want 1 (refused drafts are not tried again)", n)
	}
	if n := len(api.Sent(111)); n != 2 {
		t.Errorf("%d messages, want 2", n)
	}
}

// A stream that breaks after the user saw part of the answer leaves one
// message: what was shown, and a note that it was cut off. That is the
// reply stored, so the message counts as answered.
func TestStreamBrokenKeepsShownTextWithNote(t *testing.T) {
	api := newFakeAPI(t)
	step := make(chan struct{})
	st := newStack(t, api, stackOptions{stream: true, streamEvery: testEvery, llm: func(llmtest.Request) llmtest.Response {
		return llmtest.Response{Pieces: []string{"The answer", " starts here", " and goes", " on."}, StreamCut: true, Step: step}
	}})
	forum := groupChat(-100500, true)
	k := key(forum.ID, "77")

	in := topicMessage(api, forum, "explain")
	step <- struct{}{}
	first := waitCall(api, "the first text", isCall("sendMessage", forum.ID, "The answer"))
	step <- struct{}{} // the second piece, then the connection drops
	final := waitCall(api, "the final edit", isFinalEdit(forum.ID))

	note := llm.UserMessage(&llm.StreamError{Partial: "x", Err: llm.ErrUnavailable})
	want := "The answer starts here\n\n⚠️ " + note
	if final.Fields["message_id"] != itoa(first.MsgID) || final.Fields["text"] != format.Render(want) {
		t.Errorf("final edit = %v, want the text shown and %q", final.Fields, note)
	}
	if n := len(api.Sent(forum.ID)); n != 1 {
		t.Errorf("%d messages, want 1: %s", n, dumpCalls(api.Calls()))
	}
	if got := st.storedReply(k); got != want {
		t.Errorf("stored reply = %q, want %q", got, want)
	}
	if _, answered := st.lookup(k, in.ID); !answered {
		t.Error("the message is not answered: it would be answered again after a restart")
	}
}

// The bot dies while a reply is streaming in a group: the message left
// showing its first words is replaced at the next start by a note saying
// the answer was cut off, and the user's message is answered again, in a
// new message; a second restart changes nothing.
func TestStreamCutByACrashIsReplacedAtTheNextStart(t *testing.T) {
	api := newFakeAPI(t)
	step := make(chan struct{})
	var calls atomic.Int32
	st := newStack(t, api, stackOptions{stream: true, streamEvery: testEvery, llm: func(r llmtest.Request) llmtest.Response {
		if calls.Add(1) == 1 {
			return llmtest.Response{Pieces: []string{"The answer", " is"}, Step: step}
		}
		return llmtest.Response{Text: "The answer is 42."}
	}})
	forum := groupChat(-100500, true)
	k := key(forum.ID, "77")

	in := topicMessage(api, forum, "what is it?")
	step <- struct{}{}
	first := waitCall(api, "the first text", isCall("sendMessage", forum.ID, "The answer"))
	// The journal names the message before the next step of the turn.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		data, _ := os.ReadFile(filepath.Join(st.dir, "outbox.jsonl"))
		if strings.Contains(string(data), `"op":"shown"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no shown record in the outbox:\n%s", data)
		}
	}
	thaw := st.freeze()
	defer thaw()
	if got := api.ShownText(forum.ID, first.MsgID); got != "The answer" {
		t.Fatalf("before the restart the message shows %q", got)
	}

	st.start()
	waitCall(api, "the note", func(c fakeCall) bool {
		return c.Method == "editMessageText" && c.Err == nil && c.Fields["message_id"] == itoa(first.MsgID)
	})
	if got, want := api.ShownText(forum.ID, first.MsgID), format.Render(chat.CutReplyFollows); got != want {
		t.Errorf("the cut message shows %q, want %q", got, want)
	}
	// The final edit (stored before it) of a new message.
	final := waitCall(api, "the answer again", func(c fakeCall) bool {
		return c.Method == "editMessageText" && c.Fields["parse_mode"] == "HTML" && c.Fields["message_id"] != itoa(first.MsgID)
	})
	again := waitCall(api, "the new message", func(c fakeCall) bool {
		return c.Method == "sendMessage" && c.Err == nil && itoa(c.MsgID) == final.Fields["message_id"]
	})
	if got, want := api.ShownText(forum.ID, again.MsgID), format.Render("The answer is 42."); got != want || again.ReplyTo() != in.ID {
		t.Errorf("the new answer shows %q replying to %d, want %q replying to %d", got, again.ReplyTo(), want, in.ID)
	}
	if _, answered := st.lookup(k, in.ID); !answered {
		t.Error("the message is not answered after the restart")
	}

	st.restart()
	if _, answered := st.lookup(k, in.ID); !answered {
		t.Error("the message is not answered after the second restart")
	}
	notes := 0
	for _, c := range api.Calls("editMessageText") {
		if c.Fields["message_id"] == itoa(first.MsgID) {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("the cut message was edited %d times, want once: %s", notes, dumpCalls(api.Calls()))
	}
	if n := len(updates(api.Calls(), forum.ID, "sendMessage")); n != 2 {
		t.Errorf("%d messages sent, want the cut one and the answer: %s", n, dumpCalls(api.Calls()))
	}
}

// When the streamed message cannot be edited (deleted, say), the reply is
// sent whole as a new message; nothing is lost.
func TestStreamEditFailureStillDelivers(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(c *fakeCall) bool
	}{
		{"every edit", func(c *fakeCall) bool { return true }},
		{"the final edit", func(c *fakeCall) bool { return c.Fields["parse_mode"] == "HTML" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t)
			step := make(chan struct{})
			st := newStack(t, api, stackOptions{stream: true, streamEvery: testEvery, llm: paced(step, "Keep", " **all**", " of it")})
			api.SetHook(func(c *fakeCall) *fakeErr {
				if c.Method == "editMessageText" && tc.fail(c) {
					return &fakeErr{Code: 400, Description: "Bad Request: message to edit not found"}
				}
				return nil
			})
			forum := groupChat(-100500, true)
			in := topicMessage(api, forum, "go")
			step <- struct{}{}
			waitCall(api, "the first text", isCall("sendMessage", forum.ID, "Keep"))
			step <- struct{}{}
			api.Wait("an edit", func(calls []fakeCall) bool { return len(filterCalls(calls, "editMessageText")) > 0 })
			close(step)
			got := api.WaitSent(forum.ID, 2)[1]
			if got.Fields["text"] != "Keep <b>all</b> of it" || got.Fields["parse_mode"] != "HTML" ||
				got.Fields["message_thread_id"] != "77" || got.ReplyTo() != in.ID {
				t.Errorf("reply = %v", got.Fields)
			}
			if got := st.storedReply(key(forum.ID, "77")); got != "Keep **all** of it" {
				t.Errorf("stored reply = %q", got)
			}
		})
	}
}

// When Telegram cannot parse the final formatted edit, the message is
// edited into the plain text of the reply instead; still one message.
func TestStreamFinalEditFallsBackToPlain(t *testing.T) {
	api := newFakeAPI(t)
	step := make(chan struct{})
	newStack(t, api, stackOptions{stream: true, streamEvery: testEvery, llm: paced(step, "Some", " **bold**", " words")})
	api.SetHook(func(c *fakeCall) *fakeErr {
		if c.Method == "editMessageText" && c.Fields["parse_mode"] == "HTML" {
			return &fakeErr{Code: 400, Description: "Bad Request: can't parse entities: unsupported start tag"}
		}
		return nil
	})
	forum := groupChat(-100500, true)
	topicMessage(api, forum, "go")
	step <- struct{}{}
	first := waitCall(api, "the first text", isCall("sendMessage", forum.ID, "Some"))
	close(step)
	api.Wait("a plain edit after the refused formatted one", func(calls []fakeCall) bool {
		refused := false
		for _, c := range filterCalls(calls, "editMessageText") {
			switch {
			case c.Fields["parse_mode"] == "HTML":
				refused = true
			case refused && c.Fields["text"] == "Some bold words" && (c.Err == nil || strings.Contains(c.Err.Description, "not modified")):
				return true
			}
		}
		return false
	})
	if got := api.ShownText(forum.ID, first.MsgID); got != "Some bold words" {
		t.Errorf("the message shows %q", got)
	}
	if n := len(api.Sent(forum.ID)); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
}

// A streamed reply longer than one message ends as valid parts: the
// streamed message becomes the first, the others follow in the topic.
func TestStreamLongReplySplits(t *testing.T) {
	api := newFakeAPI(t)
	step := make(chan struct{})
	pieces := []string{"Start."}
	for i := range 80 {
		pieces = append(pieces, " Sentence number "+strconv.Itoa(i)+" of a long **answer** that goes on and on and on for a while.\n")
	}
	st := newStack(t, api, stackOptions{stream: true, streamEvery: 20 * time.Millisecond, llm: paced(step, pieces...)})
	forum := groupChat(-100500, true)
	full := strings.Join(pieces, "")
	if len(full) < 5000 {
		t.Fatalf("the answer is %d bytes, want more than one message", len(full))
	}

	topicMessage(api, forum, "write a lot")
	step <- struct{}{}
	first := waitCall(api, "the first text", isCall("sendMessage", forum.ID, "Start."))
	close(step)
	waitCall(api, "the final edit", isFinalEdit(forum.ID))
	sent := api.WaitSent(forum.ID, 2)

	want := format.Split(format.Render(full), format.Limit)
	if len(want) != 2 || len(sent) != 2 {
		t.Fatalf("%d messages sent, %d parts expected (want 2 of each)", len(sent), len(want))
	}
	if got := api.ShownText(forum.ID, first.MsgID); got != want[0] {
		t.Errorf("the streamed message shows %.80q…, want the first part", got)
	}
	if sent[1].Fields["text"] != want[1] || sent[1].Fields["parse_mode"] != "HTML" || sent[1].Fields["message_thread_id"] != "77" {
		t.Errorf("second part = %.80q… %v", sent[1].Fields["text"], sent[1].Fields["message_thread_id"])
	}
	var shown []string
	for _, p := range []string{api.ShownText(forum.ID, first.MsgID), sent[1].Fields["text"]} {
		text, err := parseHTML(p)
		if err != nil {
			t.Fatal(err)
		}
		shown = append(shown, strings.Fields(text)...)
	}
	if got, want := strings.Join(shown, " "), strings.Join(strings.Fields(strings.ReplaceAll(full, "**", "")), " "); got != want {
		t.Errorf("the parts do not add up to the reply:\n got %.200q…\nwant %.200q…", got, want)
	}
	if got := st.storedReply(key(forum.ID, "77")); got != full {
		t.Errorf("stored reply differs from the answer")
	}
}

// 429 on an update skips updates until retry_after instead of waiting;
// the final edit is still made, after its own 429 is waited out.
func TestStreamRateLimitedEdits(t *testing.T) {
	api := newFakeAPI(t)
	step := make(chan struct{})
	st := newStack(t, api, stackOptions{stream: true, streamEvery: 20 * time.Millisecond, llm: paced(step, "a1", " b2", " c3", " d4", " **e5**")})
	var plain429, final429 atomic.Bool
	api.SetHook(func(c *fakeCall) *fakeErr {
		if c.Method != "editMessageText" {
			return nil
		}
		if c.Fields["parse_mode"] == "" && plain429.CompareAndSwap(false, true) ||
			c.Fields["parse_mode"] == "HTML" && final429.CompareAndSwap(false, true) {
			return &fakeErr{Code: 429, Description: "Too Many Requests: retry after 1", RetryAfter: 1}
		}
		return nil
	})
	forum := groupChat(-100500, true)

	topicMessage(api, forum, "go")
	step <- struct{}{}
	waitCall(api, "the first text", isCall("sendMessage", forum.ID, "a1"))
	step <- struct{}{}
	limited := waitCall(api, "the rate-limited edit", func(c fakeCall) bool { return c.Method == "editMessageText" && c.Err != nil })
	// The adapter has the 429 answer (the fake recorded it before sending
	// it; a reply finished meanwhile would cancel the call and never learn
	// of it).
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(st.logs.String(), "rate limited by Telegram while streaming"); {
		if time.Now().After(deadline) {
			t.Fatal("the adapter never saw the 429")
		}
		time.Sleep(time.Millisecond)
	}
	step <- struct{}{}
	step <- struct{}{}
	step <- struct{}{}
	final := waitCall(api, "the final edit", isFinalEdit(forum.ID))

	if final.Fields["text"] != "a1 b2 c3 d4 <b>e5</b>" {
		t.Errorf("final edit = %v", final.Fields)
	}
	edits := filterCalls(api.Calls(), "editMessageText")
	for _, c := range edits {
		if c.At.After(limited.At) && c.At.Sub(limited.At) < time.Second {
			t.Errorf("an edit %s after a 429 with retry_after 1s: %v", c.At.Sub(limited.At), c.Fields)
		}
	}
	if n := len(api.Sent(forum.ID)); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
}

// With telegram.stream off nothing changes: one formatted message, no edits
// and no drafts, and the model is not asked to stream.
func TestStreamOffSendsWhole(t *testing.T) {
	api := newFakeAPI(t)
	step := make(chan struct{})
	close(step)
	st := newStack(t, api, stackOptions{streamEvery: testEvery, llm: paced(step, "Plain", " **old**", " way")})
	if _, ok := st.ad.Sender().(pipeline.Streamer); ok {
		t.Fatal("the sender streams with telegram.stream off")
	}
	forum := groupChat(-100500, true)
	in := topicMessage(api, forum, "hi")
	got := api.WaitSent(forum.ID, 1)[0]
	if got.Fields["text"] != "Plain <b>old</b> way" || got.Fields["parse_mode"] != "HTML" || got.ReplyTo() != in.ID {
		t.Errorf("reply = %v", got.Fields)
	}
	st.stop()
	if n := len(api.Calls("editMessageText", "sendMessageDraft")); n != 0 {
		t.Errorf("%d edits or drafts with streaming off", n)
	}
	if reqs := st.llm.Requests(); len(reqs) != 1 || reqs[0].Stream {
		t.Errorf("LLM requests = %+v, want one not streamed", reqs)
	}
}
