package telegram

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/pipeline"
)

// The schedule the pacer hands out keeps Telegram's flood limits exactly:
// in a group at least every apart, edits at least groupEdit apart, at most
// groupLimit calls in any window; in a private chat one call per every; a
// 429 holds the chat until its retry_after; chats don't hold up each other.
func TestPacerSchedule(t *testing.T) {
	p := newPacer()
	p.every, p.groupEdit, p.groupLimit, p.window = time.Second, 3*time.Second, 20, time.Minute
	const group, private = -100, 100
	var slots []time.Time
	var edits []time.Time
	for i := range 45 {
		edit := i%3 != 0
		at := p.reserve(group, edit)
		slots = append(slots, at)
		if edit {
			edits = append(edits, at)
		}
	}
	for i := 1; i < len(slots); i++ {
		if gap := slots[i].Sub(slots[i-1]); gap < time.Second {
			t.Errorf("group call %d came %s after the one before", i, gap)
		}
	}
	for i := 1; i < len(edits); i++ {
		if gap := edits[i].Sub(edits[i-1]); gap < 3*time.Second {
			t.Errorf("group edit %d came %s after the one before", i, gap)
		}
	}
	for i := range slots {
		n := 0
		for _, s := range slots[:i+1] {
			if slots[i].Sub(s) < time.Minute {
				n++
			}
		}
		if n > 20 {
			t.Errorf("%d calls in the minute up to call %d", n, i)
		}
	}
	if span := slots[len(slots)-1].Sub(slots[0]); span < 2*time.Minute {
		t.Errorf("45 group calls within %s: the 20-a-minute limit was not kept", span)
	}
	// Another chat is not held up by the busy group.
	if d := time.Until(p.reserve(private, false)); d > 0 {
		t.Errorf("a private chat waits %s behind a group", d)
	}
	if gap := time.Until(p.reserve(private, true)); gap < 900*time.Millisecond {
		t.Errorf("the second call in a private chat is %s away, want about a second", gap)
	}
	// A slot given back (a stream finished while waiting for it) is the
	// next one handed out.
	b := p.book(group, true)
	p.cancel(b)
	if again := p.reserve(group, true); !again.Equal(b.at) {
		t.Errorf("after giving slot %s back the next is %s", b.at, again)
	}
	// A 429 holds the chat.
	p.block(private, 240*time.Second)
	if at := p.reserve(private, false); time.Until(at) < 239*time.Second {
		t.Errorf("after a 429 of 240s the next call is %s away", time.Until(at))
	}
}

// One schedule per chat, shared by its topics, its streams and its sends:
// a reply streamed in one topic and messages sent into another topic of
// the same group keep the group's pace together, edits further apart.
func TestPaceSharedByTopicsStreamsAndSends(t *testing.T) {
	api := newFakeAPI(t)
	step := make(chan struct{})
	p := newPacer()
	const every, editEvery = 100 * time.Millisecond, 300 * time.Millisecond
	p.every, p.groupEdit, p.groupLimit, p.window = every, editEvery, 1000, time.Minute
	type slot struct {
		at   time.Time
		edit bool
	}
	var mu sync.Mutex
	var slots []slot
	p.granted = func(chat int64, at time.Time, edit bool) {
		if chat == -101100 {
			mu.Lock()
			slots = append(slots, slot{at, edit})
			mu.Unlock()
		}
	}
	st := newStack(t, api, stackOptions{stream: true, streamEvery: time.Millisecond, pace: p,
		llm: paced(step, "one", " two", " three", " four", " five")})
	forum := groupChat(-101100, true)

	topicMessage(api, forum, "stream please")
	step <- struct{}{}
	waitCall(api, "the first text", isCall("sendMessage", forum.ID, "one"))
	// Meanwhile another topic of the same group gets messages.
	sends := make(chan error, 1)
	go func() {
		var err error
		for i := range 3 {
			if _, e := st.ad.out.Send(t.Context(), sendTo(forum.ID, "9", "note "+itoa(i))); e != nil && err == nil {
				err = e
			}
		}
		sends <- err
	}()
	for range 4 {
		step <- struct{}{}
	}
	waitCall(api, "the final edit", isFinalEdit(forum.ID))
	if err := <-sends; err != nil {
		t.Fatal(err)
	}
	// Every call into the group went out in a slot of the one schedule,
	// and the slots keep the group's pace (the fake's clock would show
	// the machine's delays, not the pace).
	calls := filterCalls(api.Calls(), "sendMessage", "editMessageText")
	mu.Lock()
	defer mu.Unlock()
	if len(slots) != len(calls) {
		t.Errorf("%d calls into the group, %d paced:\n%s", len(calls), len(slots), dumpCalls(calls))
	}
	var lastEdit time.Time
	for i, s := range slots {
		if i > 0 && s.at.Sub(slots[i-1].at) < every {
			t.Errorf("slot %d came %s after the one before: the group's pace is %s", i, s.at.Sub(slots[i-1].at), every)
		}
		if s.edit {
			if !lastEdit.IsZero() && s.at.Sub(lastEdit) < editEvery {
				t.Errorf("edit slot %d came %s after the last edit, want %s in a group", i, s.at.Sub(lastEdit), editEvery)
			}
			lastEdit = s.at
		}
	}
	if n := len(filterCalls(calls, "sendMessage")); n != 4 {
		t.Errorf("%d messages, want the streamed one and 3 notes", n)
	}
}

// A 429 with a long retry_after (240 "seconds" of 5ms) met while a reply
// streams does not lose the reply: nothing is posted into the chat until
// retry_after passed, then the reply is delivered whole and stored.
func TestStreamSurvivesLong429(t *testing.T) {
	api := newFakeAPI(t)
	step := make(chan struct{})
	const unit = 5 * time.Millisecond
	st := newStack(t, api, stackOptions{stream: true, streamEvery: time.Millisecond, retryUnit: unit,
		llm: paced(step, "first", " second", " **third**")})
	// As Telegram does: from the first edit on, every call into the chat
	// is refused until 240 "seconds" passed.
	var until atomic.Pointer[time.Time]
	api.SetHook(func(c *fakeCall) *fakeErr {
		if c.Method != "editMessageText" && c.Method != "sendMessage" || c.ChatID() >= 0 {
			return nil
		}
		if c.Method == "editMessageText" && until.Load() == nil {
			end := time.Now().Add(240 * unit)
			until.Store(&end)
		}
		if u := until.Load(); u != nil && time.Now().Before(*u) {
			left := int(time.Until(*u)/unit) + 1
			return &fakeErr{Code: 429, Description: "Too Many Requests: retry after " + itoa(left), RetryAfter: left}
		}
		return nil
	})
	group := groupChat(-101200, false)
	m := api.TextMessage(group, 111, "@"+fakeBotName+" go")
	m.Entities = []models.MessageEntity{mention()}
	api.Push(models.Update{Message: m})
	step <- struct{}{}
	waitCall(api, "the first text", isCall("sendMessage", group.ID, "first"))
	step <- struct{}{}
	limit := waitCall(api, "the 429", func(c fakeCall) bool { return c.Err != nil && c.Err.Code == 429 })
	step <- struct{}{}
	final := waitCall(api, "the final edit", isFinalEdit(group.ID))
	if final.Fields["text"] != "first second <b>third</b>" {
		t.Errorf("final = %v", final.Fields)
	}
	for _, c := range updates(api.Calls(), group.ID, "sendMessage", "editMessageText") {
		if c.Err == nil && c.At.After(limit.At) && c.At.Sub(limit.At) < 240*unit {
			t.Errorf("%s %s after a 429 of 240s (%s)", c.Method, c.At.Sub(limit.At), 240*unit)
		}
	}
	if got := st.storedReply(key(group.ID, "")); !strings.Contains(got, "third") {
		t.Errorf("stored reply = %q", got)
	}
	if n := len(api.Sent(group.ID)); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
}

// sendTo is a message to a topic of chat.
func sendTo(chat int64, thread, text string) pipeline.Outbound {
	return pipeline.Outbound{Key: key(chat, thread), Text: text}
}
