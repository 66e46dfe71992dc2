package commands_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/access"
	"github.com/recallbot/recall/commands"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// adminBot is the front of the chain — access, then the commands with the
// admin commands enabled — over a store of its own, as one run of the bot.
// Turns that get through both are recorded as reaching the LLM.
type adminBot struct {
	t      *testing.T
	dir    string
	clk    *clock
	store  *memory.Store
	access *access.List
	cmds   *commands.Commands
	chain  pipeline.Handler
	out    *recorder

	mu      sync.Mutex
	reached []pipeline.Inbound
}

const (
	adminID  = "1"   // telegram:1, in access.admins
	memberID = "2"   // telegram:2, in access.allowed_users
	strangID = "555" // telegram:555, unknown
)

func startAdminBot(t *testing.T, dir string, clk *clock) *adminBot {
	t.Helper()
	ctx := context.Background()
	store, err := memory.Open(ctx, memory.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	b := &adminBot{t: t, dir: dir, clk: clk, store: store, out: &recorder{}}
	t.Cleanup(b.stop)
	b.access = access.New(false, []string{"telegram:" + memberID},
		access.WithAdmins("telegram:"+adminID), access.WithStore(store), access.WithClock(clk.Now))
	if err := b.access.Load(ctx); err != nil {
		t.Fatal(err)
	}
	b.cmds = commands.New(store, nil, nil, commands.Options{BotName: "RecallBot", Now: clk.Now,
		Admin: &commands.AdminOptions{Access: b.access, Stats: store, MessagesPerMinute: 20, TokensPerDay: 50000}})
	b.chain = pipeline.Chain(pipeline.HandlerFunc(func(_ context.Context, t *pipeline.Turn) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.reached = append(b.reached, t.In)
		return nil
	}), b.access.Middleware(), b.cmds.Middleware())
	return b
}

// stop closes the store (a restart, or the end of the test).
func (b *adminBot) stop() {
	if b.store == nil {
		return
	}
	if err := b.store.Close(context.Background()); err != nil {
		b.t.Errorf("closing the store: %v", err)
	}
	b.store = nil
}

// restart stops this run and starts the next over the same data.
func (b *adminBot) restart() *adminBot {
	b.stop()
	return startAdminBot(b.t, b.dir, b.clk)
}

// say sends text from a private chat with sender id and returns whether it
// reached the LLM and the messages the bot sent.
func (b *adminBot) say(id, text string) (bool, []pipeline.Outbound) {
	b.t.Helper()
	return b.sayIn(pipeline.Inbound{Key: pipeline.Key{Channel: "telegram", Chat: id}, SenderID: id, Text: text})
}

func (b *adminBot) sayIn(in pipeline.Inbound) (bool, []pipeline.Outbound) {
	b.t.Helper()
	in.MessageID = strconv.FormatInt(msgSeq.Add(1), 10)
	if in.SenderName == "" {
		in.SenderName = "User " + in.SenderID
	}
	in.Time = b.clk.Now()
	before := len(b.out.Sent())
	b.mu.Lock()
	reachedBefore := len(b.reached)
	b.mu.Unlock()
	if err := b.chain.Handle(context.Background(), &pipeline.Turn{In: in, Out: b.out}); err != nil {
		b.t.Fatalf("%q: %v", in.Text, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.reached) > reachedBefore, b.out.Sent()[before:]
}

// reply sends text as the admin and returns the one answer.
func (b *adminBot) reply(id, text string) string {
	b.t.Helper()
	_, outs := b.say(id, text)
	if len(outs) != 1 {
		b.t.Fatalf("%s %q: %d replies, want 1: %+v", id, text, len(outs), outs)
	}
	return outs[0].Text
}

var pairingCode = regexp.MustCompile(`with the code ([A-Z0-9]{6}) `)

func TestPairingFlow(t *testing.T) {
	clk := &clock{now: time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)}
	b := startAdminBot(t, t.TempDir(), clk)

	// A stranger gets a code, once.
	reached, outs := b.say(strangID, "hello?")
	if reached || len(outs) != 1 {
		t.Fatalf("stranger: reached=%v replies=%+v", reached, outs)
	}
	m := pairingCode.FindStringSubmatch(outs[0].Text)
	if m == nil {
		t.Fatalf("no code in %q", outs[0].Text)
	}
	code := m[1]
	want := "Sorry, this bot is private. Your id is telegram:555. Ask the operator to let you in with the code " + code +
		" (an admin sends /allow " + code + "), or add your id to access.allowed_users."
	if outs[0].Text != want {
		t.Errorf("refusal\n got %q\nwant %q", outs[0].Text, want)
	}
	if reached, outs := b.say(strangID, "anyone?"); reached || len(outs) != 0 {
		t.Errorf("second message: reached=%v replies=%+v; want dropped silently", reached, outs)
	}

	// The admin sees the request; a member may not.
	clk.Advance(2*time.Hour + 5*time.Minute)
	got := b.reply(adminID, "/pending")
	mustContain(t, "/pending", got, "Waiting to be let in (1)", "• "+code+" — telegram:555 (User 555)", "asked 2030-06-01 10:00 UTC (2 h 5 min ago)",
		"valid 21 h 55 min more", "/allow CODE")
	if got := b.reply(memberID, "/pending"); got != "This command is for the bot's admins." {
		t.Errorf("member /pending: %q", got)
	}

	// The code survives a restart, and /allow CODE (any case) lets them in.
	b = b.restart()
	_, outs = b.say(adminID, "/allow "+strings.ToLower(code))
	if len(outs) != 2 {
		t.Fatalf("/allow CODE: %d messages, want the welcome and the confirmation: %+v", len(outs), outs)
	}
	if outs[0].Key != (pipeline.Key{Channel: "telegram", Chat: strangID}) || !strings.Contains(outs[0].Text, "You're in") {
		t.Errorf("welcome %+v", outs[0])
	}
	if outs[1].Text != "Done: telegram:555 (User 555) can talk to me now. I told them." {
		t.Errorf("confirmation %q", outs[1].Text)
	}
	if reached, outs := b.say(strangID, "thanks!"); !reached || len(outs) != 0 {
		t.Errorf("after /allow: reached=%v replies=%+v; want through to the LLM", reached, outs)
	}
	if got := b.reply(adminID, "/pending"); got != "Nobody is waiting to be let in." {
		t.Errorf("/pending after /allow: %q", got)
	}
	if got := b.reply(adminID, "/allow "+code); !strings.Contains(got, "No one is waiting with the code "+code) {
		t.Errorf("a used code: %q", got)
	}

	// Allowed across a restart; then /deny with a bare number (this channel).
	b = b.restart()
	if reached, _ := b.say(strangID, "still here"); !reached {
		t.Fatal("the allowed user was shut out after a restart")
	}
	if got := b.reply(adminID, "/deny 555"); got != "Done: telegram:555 can no longer talk to me. /allow telegram:555 undoes it." {
		t.Errorf("/deny: %q", got)
	}
	reached, outs = b.say(strangID, "hello again")
	if reached || len(outs) != 1 || pairingCode.MatchString(outs[0].Text) || !strings.Contains(outs[0].Text, "Your id is telegram:555.") {
		t.Errorf("denied user: reached=%v replies=%+v; want one refusal without a code", reached, outs)
	}

	// Denied across a restart; a denied config entry too.
	if got := b.reply(adminID, "/deny telegram:2"); !strings.Contains(got, "access.allowed_users lists them; this overrides it.") {
		t.Errorf("/deny of a config entry: %q", got)
	}
	b = b.restart()
	if reached, _ := b.say(strangID, "?"); reached {
		t.Error("the denied user got in after a restart")
	}
	if reached, _ := b.say(memberID, "?"); reached {
		t.Error("the denied config entry got in after a restart")
	}
	if got := b.reply(adminID, "/allow TELEGRAM:2"); got != "Done: telegram:2 can talk to me now." {
		t.Errorf("/allow of a denied config entry: %q", got)
	}
	if reached, _ := b.say(memberID, "back"); !reached {
		t.Error("/allow did not lift the denial")
	}
}

func TestDenyCodeTurnsDownTheRequest(t *testing.T) {
	clk := &clock{now: time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)}
	b := startAdminBot(t, t.TempDir(), clk)
	_, outs := b.say("777", "let me in")
	code := pairingCode.FindStringSubmatch(outs[0].Text)[1]
	if got := b.reply(adminID, "/deny "+code); got != "Done: I turned down telegram:777 (User 777); they can no longer talk to me. /allow telegram:777 undoes it." {
		t.Errorf("/deny CODE: %q", got)
	}
	if got := b.reply(adminID, "/pending"); got != "Nobody is waiting to be let in." {
		t.Errorf("/pending: %q", got)
	}
	if reached, _ := b.say("777", "please"); reached {
		t.Error("turned-down user got in")
	}
}

func TestAdminCommandsRefuseOthers(t *testing.T) {
	clk := &clock{now: time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)}
	b := startAdminBot(t, t.TempDir(), clk)
	for _, cmd := range []string{"/allow telegram:9", "/deny telegram:1", "/pending", "/stats", "/STATS@RecallBot"} {
		if got := b.reply(memberID, cmd); got != "This command is for the bot's admins." {
			t.Errorf("member %s: %q", cmd, got)
		}
	}
	if b.access.Allowed("telegram:9") {
		t.Error("a member's /allow let someone in")
	}
	group := pipeline.Inbound{Key: pipeline.Key{Channel: "telegram", Chat: "-100"}, SenderID: adminID, IsGroup: true, Text: "/pending"}
	if _, outs := b.sayIn(group); len(outs) != 1 || outs[0].Text != "Send admin commands to me in a private chat." {
		t.Errorf("admin in a group: %+v", outs)
	}
	// /help: the admin section is for admins.
	mustContain(t, "admin /help", b.reply(adminID, "/help"), "/summary_status", "For admins", "/allow <id|code>", "/pending —", "/stats —")
	mustNotContain(t, "member /help", b.reply(memberID, "/help"), "For admins", "/pending")
	// Not in the platforms' menus.
	for _, c := range b.cmds.List() {
		if c.Name == "allow" || c.Name == "stats" {
			t.Errorf("/%s is in the menu", c.Name)
		}
	}
}

func TestAllowDenyArguments(t *testing.T) {
	clk := &clock{now: time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)}
	b := startAdminBot(t, t.TempDir(), clk)
	tests := []struct {
		text  string
		wants []string
	}{
		{"/allow", []string{"Use /allow <id|code>", "/allow telegram:123456789"}},
		{"/deny", []string{"Use /deny <id|code>"}},
		{"/allow two words", []string{"Use /allow <id|code>"}},
		{"/allow telegram:", []string{`"telegram:" is not a user id`}},
		{"/allow Tele gram:1", []string{"Use /allow"}},
		{"/allow ZZZ999", []string{"No one is waiting with the code ZZZ999", "/pending"}},
		{"/allow what?", []string{"Use /allow"}},
		{"/allow 1", []string{"telegram:1 is an admin; admins can always talk to me."}},
		{"/allow telegram:2", []string{"telegram:2 can already talk to me."}},
		{"/deny 1", []string{"telegram:1 is an admin and cannot be shut out", "access.admins"}},
		{"/deny console:local", []string{"console:local is an admin and cannot be shut out"}},
		{"/allow +4915112345678", []string{"Done: telegram:4915112345678 can talk to me now."}},
		{"/pending now", []string{"/pending takes no arguments"}},
		{"/stats x", []string{"/stats takes no arguments"}},
	}
	for _, tt := range tests {
		mustContain(t, tt.text, b.reply(adminID, tt.text), tt.wants...)
	}
	// On the terminal a bare number has no channel.
	console := pipeline.Inbound{Key: pipeline.Key{Channel: "console", Chat: "local"}, SenderID: "local", Text: "/allow 123"}
	if _, outs := b.sayIn(console); len(outs) != 1 || !strings.Contains(outs[0].Text, "/allow telegram:123") {
		t.Errorf("console /allow 123: %+v", outs)
	}
}

func TestStats(t *testing.T) {
	ctx := context.Background()
	clk := &clock{now: time.Now().UTC()}
	b := startAdminBot(t, t.TempDir(), clk)
	a := pipeline.Key{Channel: "telegram", Chat: "2"}
	now := clk.Now()
	if err := b.store.Append(ctx,
		memory.Message{Key: a, Role: memory.RoleUser, SenderID: "2", PlatformID: "x1", Text: "hello", Time: now},
		memory.Message{Key: a, Role: memory.RoleAssistant, ReplyTo: "x1", Text: "hi", Time: now},
		memory.Message{Key: a, Role: memory.RoleUser, SenderID: "2", PlatformID: "x0", Text: "older", Time: now.Add(-48 * time.Hour)},
	); err != nil {
		t.Fatal(err)
	}
	if err := b.store.AddUsage(ctx, "telegram:2", now, 12345); err != nil {
		t.Fatal(err)
	}
	b.say("555", "a stranger") // one waiting
	got := b.reply(adminID, "/stats")
	schema, err := b.store.SQLite().SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + got)
	lines := strings.Split(got, "\n")
	wantPrefixes := []string{"Users: ", "Access: ", "Messages: ", "Tokens today: ", "Limits: ", "Database: ", "Write queue: "}
	if len(lines) != len(wantPrefixes) {
		t.Fatalf("/stats has %d lines, want %d:\n%s", len(lines), len(wantPrefixes), got)
	}
	for i, p := range wantPrefixes {
		if !strings.HasPrefix(lines[i], p) {
			t.Errorf("line %d = %q, want it to start with %q", i, lines[i], p)
		}
	}
	mustContain(t, "/stats", got,
		"Users: 1 person wrote to me, in 1 chat.",
		"Access: 1 allowed, 0 denied, 1 waiting (/pending), open: no",
		"Messages: 3 stored, 2 today (UTC).",
		"Tokens today: 12,345, by 1 user.",
		"Limits: 20 messages per minute, 50,000 tokens per day per user (admins exempt).",
		"(recall.db ", " KB", "WAL ", fmt.Sprintf("schema %d.", schema),
		"Write queue: 0 waiting, 3 written since start, 0 failed attempts.")
}

// TestGroupPurgeIsForAdmins: a group's memory holds what all its members
// said, so a member cannot delete it; an admin can.
func TestGroupPurgeIsForAdmins(t *testing.T) {
	clk := &clock{now: time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)}
	b := startAdminBot(t, t.TempDir(), clk)
	ctx := context.Background()
	groupKey := pipeline.Key{Channel: "telegram", Chat: "-100"}
	in := func(sender, text string) pipeline.Inbound {
		return pipeline.Inbound{Key: groupKey, SenderID: sender, IsGroup: true, Text: text}
	}
	if err := b.store.Append(ctx, memory.Message{Key: groupKey, Role: memory.RoleUser, SenderID: adminID, Text: "the group's plan", Time: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"/purge", "/purge all", "/purge chat", "/purge older 1"} {
		_, outs := b.sayIn(in(memberID, cmd))
		if len(outs) != 1 || !strings.Contains(outs[0].Text, "only the bot's admins") {
			t.Errorf("member %s in a group: %+v", cmd, outs)
		}
	}
	_, _ = b.sayIn(in(memberID, "yes"))
	if st, err := b.store.Status(ctx, groupKey); err != nil || st.Total != 1 {
		t.Fatalf("after the member's tries the group has %d messages (%v), want 1", st.Total, err)
	}
	// The admin is asked to confirm, and the group's memory goes.
	if _, outs := b.sayIn(in(adminID, "/purge chat")); len(outs) != 1 || strings.Contains(outs[0].Text, "only the bot's admins") {
		t.Fatalf("admin /purge chat in a group: %+v", outs)
	}
	yes := in(adminID, "yes")
	yes.ReplyToBot = true // in a group an answer is addressed to the bot
	b.sayIn(yes)
	if st, err := b.store.Status(ctx, groupKey); err != nil || st.Total != 0 {
		t.Errorf("after the admin's purge the group has %d messages (%v), want 0", st.Total, err)
	}
	// In a private chat, a member still purges their own data.
	if got := b.reply(memberID, "/purge chat"); strings.Contains(got, "only the bot's admins") {
		t.Errorf("member's own /purge: %q", got)
	}
}

// groupAdmins is a Sender that knows a group's administrators, as the
// Telegram adapter does (pipeline.ChatAdmins).
type groupAdmins struct {
	recorder
	admins map[string]bool
}

func (g *groupAdmins) IsChatAdmin(_ context.Context, _ pipeline.Key, userID string) (bool, error) {
	return g.admins[userID], nil
}

// TestGroupExportIsForAdmins: a group's history holds what every member
// said, from before some joined too. A member's /export there is refused;
// the bot's admins and the group's own administrators get it.
func TestGroupExportIsForAdmins(t *testing.T) {
	clk := &clock{now: time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)}
	b := startAdminBot(t, t.TempDir(), clk)
	ctx := context.Background()
	groupKey := pipeline.Key{Channel: "telegram", Chat: "-100", Thread: "5"}
	if err := b.store.Append(ctx, memory.Message{Key: groupKey, Role: memory.RoleUser, SenderID: adminID, Text: "before you joined", Time: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sender string
		out    pipeline.Sender
		ok     bool
	}{
		{memberID, &groupAdmins{admins: map[string]bool{"3": true}}, false},     // a member
		{memberID, &recorder{}, false},                                          // the platform cannot tell: bot admins only
		{memberID, &groupAdmins{admins: map[string]bool{memberID: true}}, true}, // the group's administrator
		{adminID, &recorder{}, true},                                            // the bot's admin
	} {
		in := pipeline.Inbound{Key: groupKey, SenderID: tc.sender, SenderName: "U", IsGroup: true, Text: "/export",
			MessageID: strconv.FormatInt(msgSeq.Add(1), 10), Time: clk.Now()}
		if err := b.chain.Handle(ctx, &pipeline.Turn{In: in, Out: tc.out}); err != nil {
			t.Fatal(err)
		}
		var sent []pipeline.Outbound
		switch o := tc.out.(type) {
		case *recorder:
			sent = o.Sent()
		case *groupAdmins:
			sent = o.Sent()
		}
		if len(sent) != 1 {
			t.Fatalf("%s: %d replies: %+v", tc.sender, len(sent), sent)
		}
		exported := strings.Contains(sent[0].Text, "before you joined")
		if exported != tc.ok || !tc.ok && !strings.Contains(sent[0].Text, "only the bot's admins or the group's admins") {
			t.Errorf("%s (%T): exported=%v, want %v: %q", tc.sender, tc.out, exported, tc.ok, sent[0].Text)
		}
	}
}

// TestGroupNotesAreTheirAuthors: in a group, a member cannot delete or
// replace a note another member wrote (nor one whose author is unknown);
// its author and the bot's admins can. In a private chat nothing changes.
func TestGroupNotesAreTheirAuthors(t *testing.T) {
	clk := &clock{now: time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)}
	b := startAdminBot(t, t.TempDir(), clk)
	ctx := context.Background()
	groupKey := pipeline.Key{Channel: "telegram", Chat: "-100"}
	const other = "3" // another allowed member
	if err := b.access.Allow(ctx, "telegram:"+other, "test"); err != nil {
		t.Fatal(err)
	}
	say := func(sender, text string) string {
		t.Helper()
		_, outs := b.sayIn(pipeline.Inbound{Key: groupKey, SenderID: sender, IsGroup: true, Text: text})
		if len(outs) != 1 {
			t.Fatalf("%s from %s: %+v", text, sender, outs)
		}
		return outs[0].Text
	}
	note := func(key string) (memory.UserMemory, bool) {
		t.Helper()
		mems, err := b.store.Memories(ctx, groupKey.Owner())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mems {
			if m.Key == key {
				return m, true
			}
		}
		return memory.UserMemory{}, false
	}
	mustContain(t, "member's note", say(memberID, "/remember rule no spoilers"), `Noted under "rule"`)
	if m, ok := note("rule"); !ok || m.Author != "telegram:"+memberID {
		t.Fatalf("the note records its author: %+v", m)
	}
	got := say(other, "/forget rule")
	mustContain(t, "another's /forget", got, "written by another member", "only its author or the bot's admins can delete it")
	got = say(other, "/remember rule spoilers welcome")
	mustContain(t, "another's /remember", got, "only its author or the bot's admins can replace it", "Pick another key")
	if m, ok := note("rule"); !ok || m.Content != "no spoilers" {
		t.Fatalf("another member changed the note: %+v %v", m, ok)
	}
	// A note from before authors were recorded: an admin's.
	if err := b.store.Remember(ctx, groupKey.Owner(), "old", "from before"); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "unknown author", say(memberID, "/forget old"), "someone before notes recorded their author")
	// The author and an admin can.
	mustContain(t, "author's replace", say(memberID, "/remember rule spoilers after a week"), `Noted under "rule"`)
	mustContain(t, "admin's /forget", say(adminID, "/forget rule"), `Forgotten: "rule"`)
	mustContain(t, "admin's /forget of the old note", say(adminID, "/forget old"), `Forgotten: "old"`)
	if _, ok := note("rule"); ok {
		t.Fatal("the admin's /forget left the note")
	}
	// Nobody's note: /forget says there is none, as before.
	mustContain(t, "no such note", say(other, "/forget rule"), `no note called "rule"`)
	// In a private chat the owner is the only one there.
	if err := b.store.Remember(ctx, "telegram:"+memberID, "city", "Porto"); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "private /forget", b.reply(memberID, "/forget city"), `Forgotten: "city"`)
}
