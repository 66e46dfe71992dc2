package access

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/pipeline/pipelinetest"
)

func TestAccessAllowed(t *testing.T) {
	tests := []struct {
		name    string
		open    bool
		allowed []string
		admins  []string
		user    string
		want    bool
	}{
		{"listed", false, []string{"telegram:123"}, nil, "telegram:123", true},
		{"not listed", false, []string{"telegram:123"}, nil, "telegram:456", false},
		{"other channel same id", false, []string{"telegram:123"}, nil, "whatsapp:123", false},
		{"console always", false, nil, nil, "console:local", true},
		{"empty list", false, nil, nil, "telegram:1", false},
		{"open", true, nil, nil, "whatsapp:4915112345678", true},
		{"entry trimmed and channel lowercased", false, []string{" Telegram:123 "}, nil, "telegram:123", true},
		{"query normalized", false, []string{"telegram:123"}, nil, "TELEGRAM:123", true},
		{"blank entry ignored", false, []string{"", "  "}, nil, "", false},
		{"admin is allowed", false, nil, []string{"Telegram:9"}, "telegram:9", true},
	}
	for _, tt := range tests {
		a := New(tt.open, tt.allowed, WithAdmins(tt.admins...))
		if got := a.Allowed(tt.user); got != tt.want {
			t.Errorf("%s: Allowed(%q) = %v, want %v", tt.name, tt.user, got, tt.want)
		}
	}
}

func TestAccessAllowDeny(t *testing.T) {
	ctx := context.Background()
	a := New(false, []string{"telegram:1", "telegram:2"}, WithAdmins("telegram:9"))
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			u := fmt.Sprintf("whatsapp:%d", i)
			if err := a.Allow(ctx, u, "telegram:9"); err != nil {
				t.Error(err)
			}
			_ = a.Allowed(u)
			if i%2 == 0 {
				if err := a.Deny(ctx, u, "telegram:9"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got := len(a.Users()); got != 27 {
		t.Errorf("%d users after concurrent Allow/Deny, want 27 (25 + 2 from the config)", got)
	}
	if err := a.Deny(ctx, "telegram:1", "telegram:9"); err != nil {
		t.Fatal(err)
	}
	for _, admin := range []string{pipeline.ConsoleUser, "telegram:9", " TELEGRAM:9 "} {
		if err := a.Deny(ctx, admin, "telegram:9"); !errors.Is(err, ErrCannotDeny) {
			t.Errorf("Deny(%q) = %v, want ErrCannotDeny", admin, err)
		}
	}
	tests := []struct {
		user string
		want bool
	}{
		{"telegram:1", false}, // denied wins over the config
		{"telegram:2", true},
		{"whatsapp:1", true},
		{"whatsapp:2", false},
		{pipeline.ConsoleUser, true},
		{"telegram:9", true},
	}
	for _, tt := range tests {
		if got := a.Allowed(tt.user); got != tt.want {
			t.Errorf("Allowed(%q) = %v, want %v", tt.user, got, tt.want)
		}
	}
	if users := a.Users(); !slices.IsSorted(users) || slices.Contains(users, pipeline.ConsoleUser) || slices.Contains(users, "telegram:1") {
		t.Errorf("Users() = %v", users)
	}
	if d := a.Denied(); !slices.Contains(d, "telegram:1") || !slices.IsSorted(d) {
		t.Errorf("Denied() = %v", d)
	}
	// /allow lifts the denial of a config entry.
	if err := a.Allow(ctx, "telegram:1", "telegram:9"); err != nil || !a.Allowed("telegram:1") {
		t.Errorf("Allow after Deny: err %v, allowed %v", err, a.Allowed("telegram:1"))
	}
	if !a.IsAdmin("telegram:9") || !a.IsAdmin(pipeline.ConsoleUser) || a.IsAdmin("telegram:1") {
		t.Error("IsAdmin wrong")
	}
}

func TestAccessDenyWhenOpen(t *testing.T) {
	a := New(true, nil)
	if err := a.Deny(context.Background(), "telegram:5", "console:local"); err != nil {
		t.Fatal(err)
	}
	if a.Allowed("telegram:5") || !a.Allowed("telegram:6") {
		t.Errorf("open bot: denied allowed=%v, other allowed=%v; want false, true", a.Allowed("telegram:5"), a.Allowed("telegram:6"))
	}
}

var codeRE = regexp.MustCompile(`the code ([A-Z0-9]{6}) \(an admin sends /allow ([A-Z0-9]{6})\)`)

// codeIn returns the pairing code a refusal carries, "" when none.
func codeIn(t *testing.T, text string) string {
	t.Helper()
	m := codeRE.FindStringSubmatch(text)
	if m == nil {
		return ""
	}
	if m[1] != m[2] {
		t.Errorf("refusal names two codes: %q", text)
	}
	return m[1]
}

func TestAccessMiddleware(t *testing.T) {
	private := pipeline.Inbound{Key: pipeline.Key{Channel: "telegram", Chat: "999"}, SenderID: "999", MessageID: "1", Text: "hi"}
	allowed := pipeline.Inbound{Key: tgKey, SenderID: "123", MessageID: "2", Text: "hi"}
	groupChatter := pipeline.Inbound{Key: grpKey, SenderID: "999", MessageID: "3", Text: "lunch?", IsGroup: true}
	groupMention := pipeline.Inbound{Key: grpKey, SenderID: "999", MessageID: "4", Text: "@RecallBot hi", IsGroup: true, MentionsBot: true}
	groupAllowed := pipeline.Inbound{Key: grpKey, SenderID: "123", MessageID: "5", Text: "@RecallBot hi", IsGroup: true, MentionsBot: true}

	type step struct {
		in       pipeline.Inbound
		wantNext bool
		wantSent bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"unknown told once, then silent", []step{
			{private, false, true},
			{private, false, false},
			{private, false, false},
		}},
		{"allowed goes on", []step{{allowed, true, false}, {allowed, true, false}}},
		{"group checks the sender", []step{{groupAllowed, true, false}, {groupMention, false, true}}},
		{"group chatter draws no refusal", []step{{groupChatter, false, false}, {groupMention, false, true}, {groupMention, false, false}}},
		{"told once across chats", []step{{groupMention, false, true}, {private, false, false}}},
	}
	for _, tt := range tests {
		a := New(false, []string{"telegram:123"})
		h := pipeline.Chain(pipeline.HandlerFunc(func(context.Context, *pipeline.Turn) error {
			return errors.New("next reached")
		}), a.Middleware())
		for i, s := range tt.steps {
			r := &pipelinetest.Recorder{}
			err := h.Handle(context.Background(), &pipeline.Turn{In: s.in, Out: r})
			if reached := err != nil; reached != s.wantNext {
				t.Errorf("%s step %d: next called = %v, want %v", tt.name, i, reached, s.wantNext)
			}
			sent := r.Sent()
			if (len(sent) == 1) != s.wantSent || len(sent) > 1 {
				t.Errorf("%s step %d: sent %d messages, want sent=%v", tt.name, i, len(sent), s.wantSent)
				continue
			}
			if len(sent) == 0 {
				continue
			}
			out := sent[0]
			id := s.in.UserID()
			if !out.Plain || out.Key != s.in.Key || !strings.Contains(out.Text, "Your id is "+id+".") ||
				!strings.Contains(out.Text, "access.allowed_users") || codeIn(t, out.Text) == "" {
				t.Errorf("%s step %d: refusal %+v", tt.name, i, out)
			}
			if wantReply := map[bool]string{true: s.in.MessageID}[s.in.IsGroup]; out.ReplyTo != wantReply {
				t.Errorf("%s step %d: ReplyTo %q, want %q", tt.name, i, out.ReplyTo, wantReply)
			}
		}
	}
}

func TestAccessMiddlewareSendFailureRetries(t *testing.T) {
	a := New(false, nil)
	h := pipeline.Chain(pipeline.HandlerFunc(func(context.Context, *pipeline.Turn) error {
		t.Error("next reached")
		return nil
	}), a.Middleware())
	in := pipeline.Inbound{Key: pipeline.Key{Channel: "whatsapp", Chat: "4915112345678@s.whatsapp.net"}, SenderID: "4915112345678", Text: "hi"}
	r := &pipelinetest.Recorder{}
	r.SetErr(errors.New("offline"))
	if err := h.Handle(context.Background(), &pipeline.Turn{In: in, Out: r}); err == nil || !strings.Contains(err.Error(), "whatsapp:4915112345678") {
		t.Errorf("err = %v, want the failed send naming the user", err)
	}
	r.SetErr(nil)
	if err := h.Handle(context.Background(), &pipeline.Turn{In: in, Out: r}); err != nil {
		t.Fatal(err)
	}
	if n := len(r.Sent()); n != 1 {
		t.Errorf("sent %d after a failed first try, want 1", n)
	}
}

func TestAccessAllowThenDenyTellsAgain(t *testing.T) {
	ctx := context.Background()
	a := New(false, nil)
	h := pipeline.Chain(pipeline.HandlerFunc(func(context.Context, *pipeline.Turn) error { return nil }), a.Middleware())
	in := pipeline.Inbound{Key: pipeline.Key{Channel: "telegram", Chat: "7"}, SenderID: "7", Text: "hi"}
	r := &pipelinetest.Recorder{}
	run := func() { _ = h.Handle(ctx, &pipeline.Turn{In: in, Out: r}) }
	run()
	if err := a.Allow(ctx, "telegram:7", ""); err != nil {
		t.Fatal(err)
	}
	run()
	if err := a.Deny(ctx, "telegram:7", ""); err != nil {
		t.Fatal(err)
	}
	run()
	run()
	sent := r.Sent()
	if len(sent) != 2 {
		t.Fatalf("sent %d refusals, want 2 (before Allow and after Deny)", len(sent))
	}
	if codeIn(t, sent[0].Text) == "" || codeIn(t, sent[1].Text) != "" || !strings.Contains(sent[1].Text, "/allow telegram:7") {
		t.Errorf("want a code before Allow and none after Deny: %q, %q", sent[0].Text, sent[1].Text)
	}
	if p := a.Pending(); len(p) != 0 {
		t.Errorf("a denied user left a pending request: %+v", p)
	}
}

// memAccessStore is a stateful in-memory Store.
type memAccessStore struct {
	mu    sync.Mutex
	rules map[string]Rule
	reqs  map[string]PairingRequest
	err   error // returned by every write when set
}

func newMemAccessStore() *memAccessStore {
	return &memAccessStore{rules: map[string]Rule{}, reqs: map[string]PairingRequest{}}
}

func (m *memAccessStore) AccessRules(context.Context) ([]Rule, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Rule
	for _, r := range m.rules {
		out = append(out, r)
	}
	return out, nil
}

func (m *memAccessStore) PutAccessRule(_ context.Context, r Rule) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	m.rules[r.UserID] = r
	return nil
}

func (m *memAccessStore) PairingRequests(context.Context) ([]PairingRequest, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []PairingRequest
	for _, r := range m.reqs {
		out = append(out, r)
	}
	return out, nil
}

func (m *memAccessStore) PutPairingRequest(_ context.Context, r PairingRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	m.reqs[r.UserID] = r
	return nil
}

func (m *memAccessStore) DeletePairingRequest(_ context.Context, u string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	delete(m.reqs, u)
	return nil
}

func (m *memAccessStore) setErr(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.err = err
}

func (m *memAccessStore) requests() map[string]PairingRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]PairingRequest{}
	for k, v := range m.reqs {
		out[k] = v
	}
	return out
}

// fakeClock is an injectable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// accessRun is a List over a store, as one process of the bot sees it.
type accessRun struct {
	t    *testing.T
	a    *List
	h    pipeline.Handler
	next int // turns that got through
	mu   sync.Mutex
}

func startAccess(t *testing.T, store Store, clk *fakeClock, allowed ...string) *accessRun {
	t.Helper()
	a := New(false, allowed, WithAdmins("telegram:1"), WithStore(store), WithClock(clk.Now))
	if err := a.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	run := &accessRun{t: t, a: a}
	run.h = pipeline.Chain(pipeline.HandlerFunc(func(context.Context, *pipeline.Turn) error {
		run.mu.Lock()
		run.next++
		run.mu.Unlock()
		return nil
	}), a.Middleware())
	return run
}

// send runs a private message from user id through the stage and returns
// whether it went on and the refusal sent, if any.
func (r *accessRun) send(id string) (passed bool, refusal string) {
	r.t.Helper()
	rec := &pipelinetest.Recorder{}
	in := pipeline.Inbound{Key: pipeline.Key{Channel: "telegram", Chat: id}, SenderID: id, SenderName: "User " + id, MessageID: "m", Text: "hello"}
	r.mu.Lock()
	before := r.next
	r.mu.Unlock()
	if err := r.h.Handle(context.Background(), &pipeline.Turn{In: in, Out: rec}); err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	passed = r.next > before
	r.mu.Unlock()
	if sent := rec.Sent(); len(sent) > 0 {
		refusal = sent[0].Text
	}
	return passed, refusal
}

func TestAccessPairing(t *testing.T) {
	ctx := context.Background()
	store := newMemAccessStore()
	clk := &fakeClock{now: time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)}
	run := startAccess(t, store, clk)

	passed, refusal := run.send("555")
	code := codeIn(t, refusal)
	if passed || code == "" || !LooksLikeCode(code) {
		t.Fatalf("unknown user: passed=%v refusal=%q", passed, refusal)
	}
	if _, again := run.send("555"); again != "" {
		t.Errorf("told twice in one process: %q", again)
	}
	p := run.a.Pending()
	if len(p) != 1 || p[0].UserID != "telegram:555" || p[0].Code != code || p[0].Name != "User 555" ||
		p[0].Key != (pipeline.Key{Channel: "telegram", Chat: "555"}) || !p[0].Created.Equal(clk.Now()) || !p[0].Expires.Equal(clk.Now().Add(24*time.Hour)) {
		t.Fatalf("Pending() = %+v", p)
	}
	if r, ok := run.a.Request(strings.ToLower(code[:3]) + "-" + code[3:]); !ok || r.UserID != "telegram:555" {
		t.Errorf("Request(%q) = %+v, %v", code, r, ok)
	}
	if _, ok := store.requests()["telegram:555"]; !ok {
		t.Error("the request was not stored")
	}

	// A restart: the same code, told once more.
	clk.Advance(time.Hour)
	run = startAccess(t, store, clk)
	if _, refusal := run.send("555"); codeIn(t, refusal) != code {
		t.Errorf("after a restart the code changed or was not told: %q, want %s", refusal, code)
	}
	if _, again := run.send("555"); again != "" {
		t.Errorf("told twice after the restart: %q", again)
	}

	// Approving the code lets them in; the request is gone, also from the store.
	r, ok := run.a.Request(code)
	if !ok {
		t.Fatal("code not found")
	}
	if err := run.a.Allow(ctx, r.UserID, "telegram:1"); err != nil {
		t.Fatal(err)
	}
	if passed, refusal := run.send("555"); !passed || refusal != "" {
		t.Errorf("after /allow: passed=%v refusal=%q", passed, refusal)
	}
	if _, ok := run.a.Request(code); ok || len(run.a.Pending()) != 0 || len(store.requests()) != 0 {
		t.Errorf("the request outlived its approval: %+v %+v", run.a.Pending(), store.requests())
	}

	// Decisions survive a restart; a denied user gets no new code.
	if err := run.a.Deny(ctx, "telegram:777", "telegram:1"); err != nil {
		t.Fatal(err)
	}
	run = startAccess(t, store, clk)
	if passed, _ := run.send("555"); !passed {
		t.Error("the allowed user was shut out after a restart")
	}
	if passed, refusal := run.send("777"); passed || refusal == "" || codeIn(t, refusal) != "" {
		t.Errorf("denied user after a restart: passed=%v refusal=%q (want told, no code)", passed, refusal)
	}
	if len(run.a.Pending()) != 0 {
		t.Errorf("a denied user got a pairing request: %+v", run.a.Pending())
	}
}

func TestAccessPairingExpires(t *testing.T) {
	store := newMemAccessStore()
	clk := &fakeClock{now: time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)}
	run := startAccess(t, store, clk)
	_, refusal := run.send("42")
	first := codeIn(t, refusal)
	clk.Advance(PairingTTL - time.Second)
	if _, ok := run.a.Request(first); !ok {
		t.Fatal("the code expired early")
	}
	clk.Advance(time.Second)
	if _, ok := run.a.Request(first); ok || len(run.a.Pending()) != 0 {
		t.Fatal("an expired code still works")
	}
	_, refusal = run.send("42")
	second := codeIn(t, refusal)
	if second == "" || second == first {
		t.Errorf("after expiry: code %q, first was %q; want a new code, told", second, first)
	}
	// Expired requests are dropped from the store at start.
	clk.Advance(PairingTTL)
	startAccess(t, store, clk)
	if n := len(store.requests()); n != 0 {
		t.Errorf("%d expired requests left in the store after Load", n)
	}
}

func TestAccessLoadConfigAndStaleRules(t *testing.T) {
	ctx := context.Background()
	store := newMemAccessStore()
	clk := &fakeClock{now: time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)}
	_ = store.PutAccessRule(ctx, Rule{UserID: "telegram:2", Allowed: false, By: "telegram:1"})
	_ = store.PutAccessRule(ctx, Rule{UserID: "telegram:1", Allowed: false}) // an admin: ignored
	_ = store.PutAccessRule(ctx, Rule{UserID: "Telegram:3", Allowed: true})
	_ = store.PutPairingRequest(ctx, PairingRequest{UserID: "telegram:3", Code: "ABC234", Expires: clk.Now().Add(time.Hour)})
	run := startAccess(t, store, clk, "telegram:2")
	tests := []struct {
		user string
		want bool
	}{
		{"telegram:1", true},  // admin
		{"telegram:2", false}, // in the config, denied by an admin
		{"telegram:3", true},  // allowed by an admin
	}
	for _, tt := range tests {
		if got := run.a.Allowed(tt.user); got != tt.want {
			t.Errorf("Allowed(%s) = %v, want %v", tt.user, got, tt.want)
		}
	}
	if len(run.a.Pending()) != 0 || len(store.requests()) != 0 {
		t.Error("the request of a user allowed meanwhile was kept")
	}
}

func TestAccessStoreFailure(t *testing.T) {
	ctx := context.Background()
	store := newMemAccessStore()
	clk := &fakeClock{now: time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)}
	run := startAccess(t, store, clk)
	store.setErr(errors.New("disk full"))
	if err := run.a.Allow(ctx, "telegram:8", "telegram:1"); err == nil || run.a.Allowed("telegram:8") {
		t.Errorf("Allow with a failing store: err %v, allowed %v; want an error and no change", err, run.a.Allowed("telegram:8"))
	}
	// A stranger still gets a code; it lives in memory.
	if _, refusal := run.send("8"); codeIn(t, refusal) == "" {
		t.Errorf("no code while the store fails: %q", refusal)
	}
}

func TestAccessPendingCap(t *testing.T) {
	clk := &fakeClock{now: time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)}
	run := startAccess(t, newMemAccessStore(), clk)
	codes := map[string]bool{}
	for i := range maxPending {
		_, refusal := run.send(fmt.Sprint(1000 + i))
		c := codeIn(t, refusal)
		if c == "" || codes[c] {
			t.Fatalf("user %d: code %q (empty or taken)", i, c)
		}
		codes[c] = true
	}
	if _, refusal := run.send("99"); refusal == "" || codeIn(t, refusal) != "" {
		t.Errorf("past the cap: %q; want a refusal without a code", refusal)
	}
	clk.Advance(PairingTTL)
	if _, refusal := run.send("98"); codeIn(t, refusal) == "" {
		t.Errorf("expired requests were not pruned: %q", refusal)
	}
}

func TestParseUserIDAndCodes(t *testing.T) {
	ids := []struct {
		in, want string
		ok       bool
	}{
		{"telegram:123", "telegram:123", true},
		{" Telegram:123 ", "telegram:123", true},
		{"whatsapp:4915112345678", "whatsapp:4915112345678", true},
		{"telegram:", "", false},
		{":123", "", false},
		{"123", "", false},
		{"tele gram:1", "", false},
		{"telegram:1 2", "", false},
		{"tg2:1", "", false},
	}
	for _, tt := range ids {
		got, err := ParseUserID(tt.in)
		if (err == nil) != tt.ok || got != tt.want || (err != nil && !errors.Is(err, ErrBadUserID)) {
			t.Errorf("ParseUserID(%q) = %q, %v", tt.in, got, err)
		}
	}
	codes := []struct {
		in   string
		want bool
	}{
		{"ABC234", true}, {"abc234", true}, {"abc-234", true}, {"234567", false}, {"ABC23", false},
		{"ABC2345", false}, {"ABC10O", false}, {"telegram:1", false}, {"", false},
	}
	for _, tt := range codes {
		if got := LooksLikeCode(tt.in); got != tt.want {
			t.Errorf("LooksLikeCode(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// A decision stored by another process (`bot allow CODE`, `bot deny ID`
// beside the running bot) takes effect in the running bot within the
// refresh interval, without a restart.
func TestAccessDecisionsFromBesideTheBot(t *testing.T) {
	ctx := context.Background()
	store := newMemAccessStore()
	clk := &fakeClock{now: time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)}
	var logBuf strings.Builder
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logBuf.Write(p)
	}), nil))
	bot := New(false, nil, WithStore(store), WithClock(clk.Now), WithRefresh(2*time.Second), WithLog(log))
	if err := bot.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if !bot.Nobody() {
		t.Error("nobody is allowed, but Nobody() is false")
	}
	run := &accessRun{t: t, a: bot}
	run.h = pipeline.Chain(pipeline.HandlerFunc(func(context.Context, *pipeline.Turn) error {
		run.mu.Lock()
		run.next++
		run.mu.Unlock()
		return nil
	}), bot.Middleware())

	_, refusal := run.send("555")
	code := codeIn(t, refusal)
	logMu.Lock()
	logged := logBuf.String()
	logMu.Unlock()
	if !strings.Contains(logged, "bot allow "+code) || !strings.Contains(logged, "code="+code) {
		t.Errorf("the new pairing request's code is not in the log:\n%s", logged)
	}

	// `bot allow CODE`: another List on the same store.
	cli := New(false, nil, WithStore(store), WithClock(clk.Now))
	if err := cli.Load(ctx); err != nil {
		t.Fatal(err)
	}
	r, ok := cli.Request(code)
	if !ok {
		t.Fatal("the CLI does not find the code")
	}
	if err := cli.Allow(ctx, r.UserID, "operator"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Second)
	if passed, refusal := run.send("555"); !passed || refusal != "" {
		t.Fatalf("allowed beside the bot, still refused: %q", refusal)
	}
	if len(bot.Pending()) != 0 {
		t.Errorf("the request outlived the approval: %+v", bot.Pending())
	}
	if bot.Nobody() {
		t.Error("someone is allowed now, but Nobody() is true")
	}

	// `bot deny ID`.
	if err := cli.Deny(ctx, "telegram:555", "operator"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Second)
	if passed, refusal := run.send("555"); passed || refusal == "" {
		t.Errorf("denied beside the bot, still let in (passed=%v refusal=%q)", passed, refusal)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
