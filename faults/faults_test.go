package faults

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallbot/recall/adapters/telegram/telegramtest"
	"github.com/recallbot/recall/llm/llmtest"
)

// The fault suite. Each case runs the whole bot, lets two users chat, breaks
// one thing while they write, heals it, and checks what the users would
// notice:
//
//   - every reply a user saw (every message the Bot API delivered) is in
//     the database, with the message it answers;
//   - no message got two answers, and every message got one: its reply, or,
//     while the fault lasted, one clear message saying what failed;
//   - messages that got a failure message are stored, and writing again once
//     the fault is over gets an answer;
//   - writes queued while the disk failed landed once it recovered, and the
//     database passes PRAGMA integrity_check;
//   - after a restart nothing is answered again.

// faultCase is one fault.
type faultCase struct {
	name string
	// inject breaks something; hits counts how often the fault struck (the
	// suite checks it did).
	inject func(s *stack, hits *atomic.Int64)
	// heal ends a fault that lasts until healed (nil: the fault heals by
	// itself, e.g. only the first calls fail).
	heal func(s *stack)
	// notice, for a lasting fault the bot cannot work around, is what the
	// user reads instead of an answer (a substring); "" when the bot still
	// answers during the fault.
	notice string
	// storage: the bot warns each conversation once that it cannot save.
	storage bool
	// check, when set, checks more once the bot stopped.
	check func(t *testing.T, s *stack)
}

// honoursRetryAfter checks that after the first 429 no request succeeded
// before its Retry-After had passed (the client's own backoff is far
// shorter).
func honoursRetryAfter(d time.Duration) func(t *testing.T, s *stack) {
	return func(t *testing.T, s *stack) {
		var first time.Time
		for _, c := range s.llmCalls() {
			switch {
			case c.fault && first.IsZero():
				first = c.at
			case !c.fault && !first.IsZero():
				if gap := c.at.Sub(first); gap < d {
					t.Errorf("the LLM was asked again %s after a 429 with Retry-After %s", gap, d)
				}
				return
			}
		}
	}
}

// llmFails makes the first n LLM requests (all while it lasts when n is 0)
// answer resp.
func llmFails(n int64, resp llmtest.Response) func(s *stack, hits *atomic.Int64) {
	return func(s *stack, hits *atomic.Int64) {
		s.setLLMFault(func(llmtest.Request) (llmtest.Response, bool) {
			if k := hits.Add(1); n > 0 && k > n {
				return llmtest.Response{}, false
			}
			return resp, true
		})
	}
}

func healLLM(s *stack) { s.setLLMFault(nil) }

// botFails makes the first n calls of method answer e.
func botFails(method string, n int64, e telegramtest.Err) func(s *stack, hits *atomic.Int64) {
	return func(s *stack, hits *atomic.Int64) {
		s.api.SetHook(func(c *telegramtest.Call) *telegramtest.Err {
			if c.Method != method || hits.Load() >= n {
				return nil
			}
			hits.Add(1)
			return &e
		})
	}
}

// diskFails makes the database's disk refuse writes until healed.
func diskFails(state diskState) func(s *stack, hits *atomic.Int64) {
	return func(s *stack, hits *atomic.Int64) {
		s.disk.set(state) // hits: the suite reads the disk's own count
	}
}

func healDisk(s *stack) { s.disk.set(diskOK) }

var faultCases = []faultCase{
	{name: "llm 429 with Retry-After, then ok",
		inject: llmFails(2, llmtest.Response{Status: http.StatusTooManyRequests, RetryAfter: "0.2"}),
		check:  honoursRetryAfter(200 * time.Millisecond)},
	{name: "llm 429 with Retry-After, lasting",
		inject: llmFails(0, llmtest.Response{Status: http.StatusTooManyRequests, RetryAfter: "0.05"}), heal: healLLM,
		notice: "busy right now"},
	{name: "llm 500, then ok",
		inject: llmFails(2, llmtest.Response{Status: http.StatusInternalServerError})},
	{name: "llm 500, lasting",
		inject: llmFails(0, llmtest.Response{Status: http.StatusInternalServerError}), heal: healLLM,
		notice: "model server failed"},
	{name: "llm garbage JSON, then ok",
		inject: llmFails(1, llmtest.Response{Garbage: true})},
	{name: "llm garbage JSON, lasting",
		inject: llmFails(0, llmtest.Response{Garbage: true}), heal: healLLM,
		notice: "couldn't read"},
	{name: "llm hangs past the timeout, then ok",
		inject: llmFails(1, llmtest.Response{Hang: true})},
	{name: "llm hangs past the timeout, lasting",
		inject: llmFails(0, llmtest.Response{Hang: true}), heal: healLLM,
		notice: "took too long"},
	{name: "llm closes the connection midway, then ok",
		inject: llmFails(1, llmtest.Response{Text: "a reply that is cut in the middle", StreamCut: true})},
	{name: "llm closes the connection midway, lasting",
		inject: llmFails(0, llmtest.Response{Text: "a reply that is cut in the middle", StreamCut: true}), heal: healLLM,
		notice: "model server failed"},
	{name: "bot api 429 retry_after on sendMessage",
		inject: botFails("sendMessage", 1, telegramtest.Err{Code: 429, Description: "Too Many Requests: retry after 1", RetryAfter: 1})},
	{name: "bot api 502 on sendMessage",
		inject: botFails("sendMessage", 2, telegramtest.Err{Code: 502, Description: "Bad Gateway"})},
	{name: "bot api hangs past the client timeout on sendMessage",
		inject: botFails("sendMessage", 1, telegramtest.Err{Code: telegramtest.Hang})},
	{name: "bot api 502 on getUpdates",
		inject: botFails("getUpdates", 2, telegramtest.Err{Code: 502, Description: "Bad Gateway"})},
	{name: "disk read-only for a while",
		inject: diskFails(diskReadOnly), heal: healDisk, storage: true},
	{name: "disk full for a while",
		inject: diskFails(diskFull), heal: healDisk, storage: true},
}

const (
	alice int64 = 111
	bob   int64 = 222
)

// storageWarning is the start of the message about failing storage.
const storageWarning = "I'm having trouble saving messages"

// concurrentCases is how many cases run at once. The cases mostly wait
// (timeouts, backoff, retry_after), so they run side by side whatever
// -parallel says (it defaults to the number of CPUs).
const concurrentCases = 6

func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the whole fault suite (12 s on a busy 2-core machine); go test without -short runs it")
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, concurrentCases)
	for _, fc := range faultCases {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			t.Run(fc.name, func(t *testing.T) { runFault(t, fc) })
		})
	}
	wg.Wait()
}

func runFault(t *testing.T, fc faultCase) {
	s := newStack(t)
	api := s.api
	var all []msgRef
	said := map[msgRef]string{}
	say := func(user int64, text string) msgRef {
		r := msgRef{user, api.SendText(telegramtest.PrivateChat(user), user, text)}
		all = append(all, r)
		said[r] = text
		return r
	}
	textOf := func(r msgRef) string { return fmt.Sprintf("%s (user %d)", said[r], r.chat) }
	answered := func(refs ...msgRef) func(calls []telegramtest.Call) bool {
		return func(calls []telegramtest.Call) bool {
			got := outcomes(calls)
			for _, r := range refs {
				if len(got[r]) == 0 {
					return false
				}
			}
			return true
		}
	}

	// Before the fault: the conversations exist and work.
	before := []msgRef{say(alice, "hello before"), say(bob, "hi before")}
	api.Wait("the answers before the fault", answered(before...))

	var hits atomic.Int64
	fc.inject(s, &hits)
	during := []msgRef{say(alice, "one"), say(bob, "two"), say(alice, "three")}
	api.Wait("an answer to every message sent during the fault", answered(during...))
	if fc.storage {
		hits.Store(s.disk.failed.Load())
	}
	var after []msgRef
	if fc.heal != nil {
		fc.heal(s)
		after = []msgRef{say(alice, "again after"), say(bob, "again after")}
		api.Wait("the answers once the fault is over", answered(after...))
	} else {
		// A fault that heals by itself: the next messages are answered as usual.
		after = []msgRef{say(alice, "after")}
		api.Wait("the answer after the fault", answered(after...))
	}
	if hits.Load() == 0 {
		t.Fatal("the fault never struck: the case tests nothing")
	}
	if err := s.store.Flush(context.Background()); err != nil {
		t.Fatalf("flushing the write queue once storage is back: %v", err)
	}
	s.stop()
	seen := api.Calls("sendMessage")
	db := s.readDB()

	if db.check != "ok" {
		t.Errorf("PRAGMA integrity_check = %q", db.check)
	}
	got := outcomes(seen)
	for _, r := range all {
		texts := got[r]
		if len(texts) != 1 {
			t.Errorf("message %q got %d answers, want 1: %q", textOf(r), len(texts), texts)
			continue
		}
		answer := texts[0]
		isReply := strings.HasPrefix(answer, "echo: ")
		if !db.users[r] {
			t.Errorf("message %q is not stored", textOf(r))
		}
		if isReply && !contains(db.replies[r], answer) {
			t.Errorf("the reply %q the user saw is not stored (stored: %q)", answer, db.replies[r])
		}
		if len(db.replies[r]) > 1 {
			t.Errorf("message %q has %d stored replies: %q", textOf(r), len(db.replies[r]), db.replies[r])
		}
		wantNotice := fc.notice != "" && containsRef(during, r)
		switch {
		case wantNotice && isReply:
			t.Errorf("message %q sent during a lasting fault was answered %q, want a message saying %q", textOf(r), answer, fc.notice)
		case wantNotice && !strings.Contains(answer, fc.notice):
			t.Errorf("message %q got %q, want a message saying %q", textOf(r), answer, fc.notice)
		case !wantNotice && !isReply:
			t.Errorf("message %q got %q, want its reply", textOf(r), answer)
		}
	}
	for _, user := range []int64{alice, bob} {
		n := 0
		for _, c := range seen {
			if c.Err == nil && c.ChatID() == user && strings.Contains(c.Fields["text"], storageWarning) {
				n++
			}
		}
		switch {
		case fc.storage && n != 1:
			t.Errorf("user %d was warned %d times about storage, want once", user, n)
		case !fc.storage && n != 0:
			t.Errorf("user %d was warned %d times about storage, which never failed", user, n)
		}
	}

	if fc.check != nil {
		fc.check(t, s)
	}

	// After a restart nothing is answered again: every message was handled.
	s.start()
	s.stop()
	if again := api.Calls("sendMessage"); len(again) != len(seen) {
		t.Errorf("after a restart the bot sent %d more messages: %s", len(again)-len(seen), telegramtest.DumpCalls(again[len(seen):]))
	}
}

// outcomes groups the delivered messages by the message they reply to.
func outcomes(calls []telegramtest.Call) map[msgRef][]string {
	out := map[msgRef][]string{}
	for _, c := range calls {
		if c.Method != "sendMessage" || c.Err != nil || c.ReplyTo() == 0 {
			continue
		}
		r := msgRef{c.ChatID(), c.ReplyTo()}
		out[r] = append(out[r], c.Fields["text"])
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsRef(list []msgRef, r msgRef) bool {
	for _, x := range list {
		if x == r {
			return true
		}
	}
	return false
}
