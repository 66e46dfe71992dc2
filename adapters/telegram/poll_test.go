package telegram

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallbot/recall/adapters/telegram/telegramtest"
	"github.com/recallbot/recall/pipeline"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// A getUpdates the server holds open without answering is cancelled after
// the long-poll timeout plus a margin and sent again; meanwhile /healthz
// reports polling stale once no poll completed for three poll timeouts.
func TestHungPollIsCancelledAndHealthGoesStale(t *testing.T) {
	api := newFakeAPI(t)
	var hang atomic.Bool
	hang.Store(true)
	hung := make(chan struct{}, 10)
	api.SetHook(func(c *fakeCall) *fakeErr {
		if c.Method == "getUpdates" && hang.Load() {
			hung <- struct{}{}
			return &fakeErr{Code: telegramtest.Hang}
		}
		return nil
	})
	b := newBare(t, api, Options{PollTimeout: time.Second})
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	b.ad.now = clock.Now
	b.ad.callTimeout = 200 * time.Millisecond // the margin past the poll timeout
	b.run()
	<-hung
	if err := b.ad.Health(); err != nil {
		t.Fatalf("Health at start = %v", err)
	}
	clock.Add(3*time.Second + time.Millisecond)
	if err := b.ad.Health(); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("Health with a poll hanging for 3 poll timeouts = %v, want stale", err)
	}
	<-hung // the hung call was given up and a new one sent
	hang.Store(false)
	m := api.SendText(privateChat(111), 111, "still there?")
	if in := b.next(t); in.MessageID != itoa(m) {
		t.Fatalf("got %+v", in)
	}
	if err := b.ad.Health(); err != nil {
		t.Errorf("Health after a poll completed = %v", err)
	}
}

// A storm of 502s, connections reset, and a 409 conflict each end without
// a restart; the 409 is named in the log, and Health reports the trouble
// while it lasts.
func TestPollingRecoversFrom502StormResetAnd409(t *testing.T) {
	api := newFakeAPI(t)
	var polls atomic.Int32
	api.SetHook(func(c *fakeCall) *fakeErr {
		if c.Method != "getUpdates" {
			return nil
		}
		switch n := polls.Add(1); {
		case n <= 30:
			return &fakeErr{Code: 502, Description: "Bad Gateway"}
		case n <= 33:
			return &fakeErr{Code: dropConnection}
		case n == 34:
			return &fakeErr{Code: 409, Description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}
		}
		return nil
	})
	b := newBare(t, api, Options{})
	b.ad.retryMax = 20 * time.Millisecond
	b.run()
	api.Wait("the 409", func(calls []fakeCall) bool { return polls.Load() >= 35 })
	m := api.SendText(privateChat(111), 111, "back?")
	if in := b.next(t); in.MessageID != itoa(m) {
		t.Fatalf("got %+v", in)
	}
	logs := b.logs.String()
	if !strings.Contains(logs, "another instance is polling with this token, or a webhook is set") {
		t.Errorf("the 409 is not explained in the log:\n%s", logs)
	}
	if err := b.ad.Health(); err != nil {
		t.Errorf("Health after recovery = %v", err)
	}
}

// While the store keeps refusing incoming messages, polling cannot go on
// (nothing is confirmed) and Health says so; once it takes them, Health is
// fine again.
func TestHealthWhileTheStoreFails(t *testing.T) {
	api := newFakeAPI(t)
	var fail atomic.Bool
	fail.Store(true)
	calls := make(chan struct{}, 100)
	got := make(chan pipeline.Inbound, 10)
	ad, err := New(Options{Token: fakeToken, APIURL: api.URL, PollTimeout: time.Second},
		func(in pipeline.Inbound, _ pipeline.Sender) error { got <- in; return nil },
		func(ctx context.Context, in pipeline.Inbound) error {
			calls <- struct{}{}
			if fail.Load() {
				return errors.New("disk I/O error")
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	ad.retryBase, ad.retryMax = 5*time.Millisecond, 20*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ad.Run(ctx) }()
	defer func() { cancel(); <-done }()

	api.SendText(privateChat(111), 111, "hello")
	<-calls
	<-calls // the first failure was recorded before the second attempt
	if err := ad.Health(); err == nil || !strings.Contains(err.Error(), "disk I/O error") {
		t.Fatalf("Health while the store fails = %v", err)
	}
	fail.Store(false)
	<-got
	if err := ad.Health(); err != nil {
		t.Errorf("Health once the store works = %v", err)
	}
}

// A setWebhook Telegram refuses (400: a URL it will not take) ends Run with
// an error naming it, at once, instead of being retried forever.
func TestSetWebhookRefusedIsFatal(t *testing.T) {
	api := newFakeAPI(t)
	api.SetHook(func(c *fakeCall) *fakeErr {
		if c.Method == "setWebhook" {
			return &fakeErr{Code: 400, Description: "Bad Request: bad webhook: An HTTPS URL must be provided for webhook"}
		}
		return nil
	})
	b := newBare(t, api, Options{Webhook: Webhook{URL: "https://bot.example.com/hook", Listen: "127.0.0.1:0", Secret: "s"}})
	err := b.ad.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "setting the webhook") || !strings.Contains(err.Error(), "HTTPS URL must be provided") {
		t.Fatalf("Run = %v, want the refusal", err)
	}
	if n := len(api.Calls("setWebhook")); n != 1 {
		t.Errorf("setWebhook called %d times, want 1", n)
	}
	if err := b.ad.Health(); err == nil {
		t.Error("Health is fine after the webhook was refused")
	}
}
