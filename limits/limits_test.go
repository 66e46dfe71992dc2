package limits

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// clock is an injectable Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// recorder is a fake Sender that keeps what was sent.
type recorder struct {
	mu   sync.Mutex
	sent []pipeline.Outbound
	err  error
}

func (r *recorder) Send(_ context.Context, out pipeline.Outbound) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return "", r.err
	}
	r.sent = append(r.sent, out)
	return strconv.Itoa(len(r.sent)), nil
}

func (r *recorder) Sent() []pipeline.Outbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pipeline.Outbound(nil), r.sent...)
}

// discards records what the stage asked to remove.
type discards struct {
	mu  sync.Mutex
	ids []string
}

func (d *discards) Discard(_ context.Context, key pipeline.Key, id string) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ids = append(d.ids, key.String()+"/"+id)
	return true, nil
}

func (d *discards) IDs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.ids...)
}

// stage runs turns through one middleware and counts those that got through.
type stage struct {
	t      *testing.T
	h      pipeline.Handler
	out    *recorder
	mu     sync.Mutex
	passed int
	msgID  int
}

func newStage(t *testing.T, mw pipeline.Middleware) *stage {
	s := &stage{t: t, out: &recorder{}}
	s.h = pipeline.Chain(pipeline.HandlerFunc(func(context.Context, *pipeline.Turn) error {
		s.mu.Lock()
		s.passed++
		s.mu.Unlock()
		return nil
	}), mw)
	return s
}

// send runs in and reports whether it got through and what was sent.
func (s *stage) send(in pipeline.Inbound) (bool, []pipeline.Outbound) {
	s.t.Helper()
	s.msgID++
	if in.MessageID == "" {
		in.MessageID = strconv.Itoa(s.msgID)
	}
	before := len(s.out.Sent())
	s.mu.Lock()
	passedBefore := s.passed
	s.mu.Unlock()
	if err := s.h.Handle(context.Background(), &pipeline.Turn{In: in, Out: s.out}); err != nil {
		s.t.Fatalf("Handle: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.passed > passedBefore, s.out.Sent()[before:]
}

func private(user, text string) pipeline.Inbound {
	return pipeline.Inbound{Key: pipeline.Key{Channel: "telegram", Chat: user}, SenderID: user, Text: text}
}

var t0 = time.Date(2030, 6, 1, 20, 47, 25, 0, time.UTC)

func TestRateTake(t *testing.T) {
	type step struct {
		at        time.Duration // since t0
		user      string
		ok        bool
		retry     time.Duration
		wantFirst bool
	}
	tests := []struct {
		name  string
		limit int
		steps []step
	}{
		{"unlimited", 0, []step{{0, "a", true, 0, false}, {0, "a", true, 0, false}, {0, "a", true, 0, false}}},
		{"three per minute, sliding", 3, []step{
			{0, "a", true, 0, false},
			{10 * time.Second, "a", true, 0, false},
			{20 * time.Second, "a", true, 0, false},
			{25 * time.Second, "a", false, 35 * time.Second, true},  // the first one leaves at 60 s
			{30 * time.Second, "a", false, 30 * time.Second, false}, // refusals are not counted, told once
			{30 * time.Second, "b", true, 0, false},                 // per user
			{60 * time.Second, "a", true, 0, false},                 // the first left the window
			{61 * time.Second, "a", false, 9 * time.Second, true},   // next to leave: the one at 10 s; told again
			{70 * time.Second, "a", true, 0, false},
		}},
		{"one per minute", 1, []step{
			{0, "a", true, 0, false},
			{59*time.Second + 500*time.Millisecond, "a", false, 500 * time.Millisecond, true},
			{time.Minute, "a", true, 0, false},
		}},
		{"idle users are forgotten", 2, []step{
			{0, "a", true, 0, false},
			{0, "a", true, 0, false},
			{5 * time.Minute, "a", true, 0, false},
			{5 * time.Minute, "a", true, 0, false},
			{5 * time.Minute, "a", false, time.Minute, true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &clock{now: t0}
			r := NewRate(tt.limit, Options{Now: clk.Now})
			for i, s := range tt.steps {
				clk.now = t0.Add(s.at)
				ok, retry, first := r.take(context.Background(), s.user)
				if ok != s.ok || retry != s.retry || first != s.wantFirst {
					t.Errorf("step %d (%v, %s): take = %v, %v, first %v; want %v, %v, first %v", i, s.at, s.user, ok, retry, first, s.ok, s.retry, s.wantFirst)
				}
			}
		})
	}
}

func TestRateForgetsIdleUsers(t *testing.T) {
	clk := &clock{now: t0}
	r := NewRate(5, Options{Now: clk.Now})
	for i := range 100 {
		r.Take("telegram:" + strconv.Itoa(i))
	}
	clk.Advance(2 * time.Minute)
	r.Take("telegram:x")
	if n := r.tracked(); n != 1 {
		t.Errorf("%d users remembered after they all went idle, want 1", n)
	}
}

func TestMessages(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{RateText(20, 35*time.Second), "You're sending messages too fast — at most 20 per minute. Try again in 35 seconds."},
		{RateText(20, 34*time.Second+time.Millisecond), "You're sending messages too fast — at most 20 per minute. Try again in 35 seconds."},
		{RateText(1, 200*time.Millisecond), "You're sending messages too fast — at most 1 per minute. Try again in 1 second."},
		{RateText(2000, time.Minute), "You're sending messages too fast — at most 2,000 per minute. Try again in 60 seconds."},
		{QuotaText(50000, 3*time.Hour+11*time.Minute+20*time.Second),
			"You've used today's 50,000 tokens. The quota resets at 00:00 UTC, in 3 h 12 min. Commands such as /search and /export still work."},
		{durationText(3 * time.Hour), "3 h"},
		{durationText(45 * time.Minute), "45 min"},
		{durationText(44*time.Minute + time.Second), "45 min"},
		{durationText(59 * time.Second), "less than a minute"},
		{durationText(24 * time.Hour), "24 h"},
		{thousands(0), "0"},
		{thousands(999), "999"},
		{thousands(1000), "1,000"},
		{thousands(1234567), "1,234,567"},
		{thousands(-1234), "-1,234"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got  %q\nwant %q", tt.got, tt.want)
		}
	}
	if got := NextReset(time.Date(2030, 6, 1, 23, 59, 59, 0, time.FixedZone("X", 5*3600))); !got.Equal(time.Date(2030, 6, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("NextReset in +05:00 = %v", got)
	}
}

func TestRateMiddleware(t *testing.T) {
	clk := &clock{now: t0}
	d := &discards{}
	admin := "telegram:1"
	r := NewRate(2, Options{Now: clk.Now, Discard: d, Exempt: func(u string) bool { return u == admin }})
	s := newStage(t, r.Middleware())
	user := private("5", "hello")

	for i := range 2 {
		if ok, outs := s.send(user); !ok || len(outs) != 0 {
			t.Fatalf("message %d within the limit: passed=%v replies=%+v", i, ok, outs)
		}
	}
	clk.Advance(25 * time.Second)
	ok, outs := s.send(user)
	if ok || len(outs) != 1 {
		t.Fatalf("over the limit: passed=%v replies=%+v", ok, outs)
	}
	if want := RateText(2, 35*time.Second); outs[0].Text != want || !outs[0].Plain || outs[0].Key != user.Key || outs[0].ReplyTo != "3" {
		t.Errorf("notice %+v, want %q replying to 3", outs[0], want)
	}
	// Commands count too, and the next refusals are silent.
	if ok, outs := s.send(private("5", "/help")); ok || len(outs) != 0 {
		t.Errorf("command over the limit: passed=%v replies=%+v; want dropped silently", ok, outs)
	}
	if got := d.IDs(); len(got) != 1 || got[0] != "telegram:5:/3" {
		t.Errorf("discarded %v; want only the refused message (commands are never stored)", got)
	}
	// Others are not limited by 5's messages; admins never; chatter is not counted.
	if ok, _ := s.send(private("6", "hi")); !ok {
		t.Error("another user was refused")
	}
	for range 5 {
		if ok, _ := s.send(private("1", "admin")); !ok {
			t.Error("an admin was refused")
		}
	}
	chatter := pipeline.Inbound{Key: pipeline.Key{Channel: "telegram", Chat: "-100"}, SenderID: "6", IsGroup: true, Text: "lunch?"}
	for range 5 {
		if ok, _ := s.send(chatter); !ok {
			t.Error("group chatter was stopped")
		}
	}
	if ok, _ := s.send(private("6", "still counted once")); !ok {
		t.Error("group chatter counted toward the limit")
	}
	// The window moves on.
	clk.Advance(35 * time.Second)
	if ok, outs := s.send(user); !ok || len(outs) != 0 {
		t.Errorf("after the wait: passed=%v replies=%+v", ok, outs)
	}
}

func TestRateMiddlewareSendFailure(t *testing.T) {
	clk := &clock{now: t0}
	r := NewRate(1, Options{Now: clk.Now})
	out := &recorder{err: errors.New("offline")}
	h := r.Middleware()(pipeline.HandlerFunc(func(context.Context, *pipeline.Turn) error { return nil }))
	in := private("5", "hi")
	if err := h.Handle(context.Background(), &pipeline.Turn{In: in, Out: out}); err != nil {
		t.Fatal(err)
	}
	if err := h.Handle(context.Background(), &pipeline.Turn{In: in, Out: out}); err == nil {
		t.Error("a notice that could not be sent is not reported")
	}
}

func TestUnlimitedPassesEverything(t *testing.T) {
	next := pipeline.HandlerFunc(func(context.Context, *pipeline.Turn) error { return nil })
	for _, mw := range []pipeline.Middleware{NewRate(0, Options{}).Middleware(), NewQuota(0, nil, Options{}).Middleware()} {
		if h := mw(next); h == nil {
			t.Error("nil handler")
		}
	}
	s := newStage(t, NewRate(0, Options{}).Middleware())
	for range 100 {
		if ok, _ := s.send(private("5", "hi")); !ok {
			t.Fatal("refused without a limit")
		}
	}
}
