package commands_test

import (
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/commands"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// seedPurge stores two pairs in A, one in another topic of A's chat, one in B,
// and a note for A.
func seedPurge(h *harness) {
	h.t.Helper()
	h.seed(h.A, h.clock.Now(), "alpha one", "alpha two")
	h.seed(h.A2, h.clock.Now(), "topic two")
	h.seed(h.B, h.clock.Now(), "bravo")
	h.reply(h.A, "/remember city Lisbon")
}

func (h *harness) totals() (a, a2, b int64, notes int) {
	h.t.Helper()
	mems, err := h.store.Memories(h.ctx, h.A.Owner())
	if err != nil {
		h.t.Fatalf("Memories: %v", err)
	}
	return h.status(h.A).Total, h.status(h.A2).Total, h.status(h.B).Total, len(mems)
}

func TestPurgeConversation(t *testing.T) {
	tests := []struct {
		name    string
		buttons bool
		start   string
		answers []answer
	}{
		{"numbered: choose then yes", false, "/purge", []answer{{text: "1"}, {text: "yes"}}},
		{"numbered: label then y", false, "/purge", []answer{{text: "This conversation"}, {text: "Y"}}},
		{"numbered: data then 1", false, "/purge", []answer{{text: "chat"}, {text: "1"}}},
		{"buttons", true, "/purge", []answer{{text: "This conversation", button: "chat"}, {text: "Yes, delete", button: "yes"}}},
		{"one shot", false, "/purge chat", []answer{{text: "yes"}}},
		{"one shot, upper case", false, "/PURGE CHAT", []answer{{text: "YES"}}},
		{"after an unclear answer", false, "/purge chat", []answer{{text: "maybe"}, {text: "yes"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out sentLog = &recorder{}
			if tt.buttons {
				out = &buttonSender{}
			}
			h := newHarness(t, out)
			seedPurge(h)

			handled, outs := h.send(h.A, tt.start)
			if !handled || len(outs) != 1 {
				t.Fatalf("%s: handled=%v replies=%+v", tt.start, handled, outs)
			}
			if tt.start == "/purge" {
				if tt.buttons {
					if len(outs[0].Choices) != 4 || outs[0].Choices[0].Data != "chat" || outs[0].Choices[2].Data != "older" {
						t.Errorf("purge buttons: %+v", outs[0].Choices)
					}
				} else {
					mustContain(t, "choices", outs[0].Text, "1. This conversation", "2. All my data", "3. Messages older than N days", "4. Cancel")
				}
			}
			all := outs
			for _, a := range tt.answers {
				handled, outs := h.answer(h.A, a)
				if !handled || len(outs) != 1 {
					t.Fatalf("answer %q: handled=%v replies=%+v", a.text, handled, outs)
				}
				if a.text == "maybe" {
					mustContain(t, "unclear", outs[0].Text, "yes or no")
				}
				all = append(all, outs...)
			}
			var confirm *pipeline.Outbound
			for i := range all {
				if strings.HasPrefix(all[i].Text, "Delete everything in this conversation") {
					confirm = &all[i]
				}
			}
			if confirm == nil {
				t.Fatalf("no confirmation asked: %+v", all)
			}
			mustContain(t, "confirmation", confirm.Text, "cannot be undone")
			if tt.buttons {
				if len(confirm.Choices) != 2 || confirm.Choices[0].Data != "yes" || confirm.Choices[1].Data != "no" {
					t.Errorf("yes/no buttons: %+v", confirm.Choices)
				}
			} else {
				mustContain(t, "confirmation", confirm.Text, "1. Yes, delete", "2. No")
			}
			last := all[len(all)-1].Text
			mustContain(t, "done", last, "Deleted 4 messages", "0 notes")
			a, a2, b, notes := h.totals()
			if a != 0 || a2 != 2 || b != 2 || notes != 1 {
				t.Errorf("after purging A: A %d, A's other topic %d, B %d, notes %d; want 0 2 2 1", a, a2, b, notes)
			}
			if handled, _ := h.send(h.A, "yes"); handled {
				t.Error("a second yes was taken")
			}
		})
	}
}

func TestPurgeDeclined(t *testing.T) {
	for _, tc := range []struct {
		name    string
		start   string
		answers []answer
		want    string
	}{
		{"no", "/purge chat", []answer{{text: "no"}}, "nothing was deleted"},
		{"n", "/purge all", []answer{{text: "n"}}, "nothing was deleted"},
		{"2", "/purge chat", []answer{{text: "2"}}, "nothing was deleted"},
		{"No button", "/purge all", []answer{{text: "No", button: "no"}}, "nothing was deleted"},
		{"cancel at the confirmation", "/purge older 1", []answer{{text: "cancel"}}, "nothing was deleted"},
		{"cancel at the choice", "/purge", []answer{{text: "cancel"}}, "nothing was deleted"},
		{"4 at the choice", "/purge", []answer{{text: "4"}}, "nothing was deleted"},
		{"cancel at the days", "/purge", []answer{{text: "3"}, {text: "cancel"}}, "nothing was deleted"},
		{"choice then no", "/purge", []answer{{text: "2"}, {text: "no"}}, "nothing was deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, &buttonSender{})
			h.seed(h.A, h.clock.Now().Add(-72*time.Hour), "alpha")
			h.seed(h.A2, h.clock.Now(), "topic two")
			h.seed(h.B, h.clock.Now(), "bravo")
			h.reply(h.A, "/remember city Lisbon")
			h.reply(h.A, tc.start)
			var last string
			for _, a := range tc.answers {
				handled, outs := h.answer(h.A, a)
				if !handled || len(outs) != 1 {
					t.Fatalf("answer %q: handled=%v replies=%+v", a.text, handled, outs)
				}
				last = outs[0].Text
			}
			mustContain(t, "declined", last, tc.want)
			a, a2, b, notes := h.totals()
			if a != 2 || a2 != 2 || b != 2 || notes != 1 {
				t.Errorf("after declining: A %d, A2 %d, B %d, notes %d; want 2 2 2 1", a, a2, b, notes)
			}
			if handled, _ := h.send(h.A, "yes"); handled {
				t.Error("yes after declining was taken")
			}
		})
	}
}

func TestPurgeConfirmationExpires(t *testing.T) {
	for _, late := range []answer{{text: "yes"}, {text: "Yes, delete", button: "yes"}} {
		t.Run(late.text, func(t *testing.T) {
			h := newHarness(t, &buttonSender{})
			seedPurge(h)
			h.reply(h.A, "/purge all")
			h.clock.Advance(ttl + time.Second)
			// A typed yes as a button: told the question expired (not
			// taken for chat, and deleting nothing).
			handled, outs := h.answer(h.A, late)
			if !handled || len(outs) != 1 {
				t.Fatalf("late %q: handled=%v replies=%+v", late.text, handled, outs)
			}
			mustContain(t, "late "+late.text, outs[0].Text, "expired")
			if late.button == "" {
				mustContain(t, "late yes", outs[0].Text, "send /purge again")
			}
			a, a2, b, notes := h.totals()
			if a != 4 || a2 != 2 || b != 2 || notes != 1 {
				t.Errorf("a late yes deleted: A %d, A2 %d, B %d, notes %d", a, a2, b, notes)
			}
		})
	}
	t.Run("just in time", func(t *testing.T) {
		h := newHarness(t, &recorder{})
		seedPurge(h)
		h.reply(h.A, "/purge chat")
		h.clock.Advance(ttl - time.Second)
		mustContain(t, "in time", h.reply(h.A, "yes"), "Deleted 4 messages")
	})
}

func TestPurgeOlder(t *testing.T) {
	tests := []struct {
		name    string
		start   string
		answers []string
	}{
		{"one shot", "/purge older 30", []string{"yes"}},
		{"with d", "/purge older 30d", []string{"yes"}},
		{"through the questions", "/purge", []string{"3", "abc", "0", "30", "yes"}},
		{"through the questions by label", "/purge", []string{"older", "30", "y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &recorder{})
			now := h.clock.Now()
			h.seed(h.A, now.Add(-40*24*time.Hour), "ancient history", "old news")
			h.seed(h.A, now.Add(-5*24*time.Hour), "recent events")
			h.seed(h.A2, now.Add(-60*24*time.Hour), "old topic")
			h.seed(h.B, now.Add(-90*24*time.Hour), "other owner's old message")
			h.reply(h.A, "/remember city Lisbon")

			got := h.reply(h.A, tt.start)
			for _, a := range tt.answers {
				got = h.reply(h.A, a)
				switch a {
				case "3", "older":
					mustContain(t, "days question", got, "how many days")
				case "abc", "0":
					mustContain(t, "bad days", got, "1 to 36500")
				case "30":
					mustContain(t, "confirmation", got, "older than 30 days")
				}
			}
			// A's two chats lose their old messages; the recent ones, the
			// note and the other owner stay.
			mustContain(t, "done", got, "Deleted 6 messages", "0 notes")
			if s := h.status(h.A); s.Total != 2 {
				t.Errorf("A: %d messages, want 2", s.Total)
			}
			if s := h.status(h.A2); s.Total != 0 {
				t.Errorf("A2: %d messages, want 0", s.Total)
			}
			if s := h.status(h.B); s.Total != 2 {
				t.Errorf("B: %d messages, want 2", s.Total)
			}
			mustContain(t, "recent", h.reply(h.A, "/search recent"), "recent events")
			mustContain(t, "ancient", h.reply(h.A, "/search ancient"), "Nothing in this conversation")
			if mems, _ := h.store.Memories(h.ctx, h.A.Owner()); len(mems) != 1 {
				t.Errorf("notes: %+v", mems)
			}
		})
	}
}

func TestPurgeAll(t *testing.T) {
	for _, start := range []string{"/purge all", "/purge"} {
		t.Run(start, func(t *testing.T) {
			h := newHarness(t, &recorder{})
			seedPurge(h)
			h.reply(h.A, "/summary json 15")
			h.reply(h.A, "/remember food pasta")
			h.reply(h.B, "/remember city Porto")
			h.reply(h.A, start)
			if start == "/purge" {
				mustContain(t, "choice", h.reply(h.A, "2"), "ALL your data")
			}
			got := h.reply(h.A, "yes")
			mustContain(t, "done", got, "Deleted 6 messages", "2 notes")
			a, a2, b, notes := h.totals()
			if a != 0 || a2 != 0 || b != 2 || notes != 0 {
				t.Errorf("after purging all: A %d, A2 %d, B %d, notes %d; want 0 0 2 0", a, a2, b, notes)
			}
			mustContain(t, "memories", h.reply(h.A2, "/memories"), "no notes yet")
			mustContain(t, "B's notes", h.reply(h.B, "/memories"), "city: Porto")
			if st := h.settings(h.A.Owner()); st.MemoryEnabled || st.Threshold != 10 {
				t.Errorf("settings survived /purge all: %+v", st)
			}
		})
	}
}

// A button of a finished /purge question does not act on a new one.
func TestPurgeOldButtonAfterAnswer(t *testing.T) {
	h := newHarness(t, &buttonSender{})
	seedPurge(h)
	h.reply(h.A, "/purge chat")
	h.press(h.A, "No", "no")
	handled, outs := h.press(h.A, "Yes, delete", "yes")
	if !handled || len(outs) != 1 {
		t.Fatalf("old button: handled=%v replies=%+v", handled, outs)
	}
	mustContain(t, "old button", outs[0].Text, "expired")
	if a, _, _, _ := h.totals(); a != 4 {
		t.Errorf("A: %d messages, want 4", a)
	}
}

// TestPurgeAllOffersTheGroups: "/purge all" in a private chat asks whether
// what the person said in groups goes too. "1" deletes it there, with the
// bot's answers to it; "2" leaves the groups alone. Others' messages stay.
func TestPurgeAllOffersTheGroups(t *testing.T) {
	for _, tc := range []struct {
		answer     string
		groupsGone bool
	}{{"1", true}, {"2", false}, {"yes", false}} {
		t.Run(tc.answer, func(t *testing.T) {
			h := newHarness(t, &recorder{}, withMaxMemories(50)) // a store of its own
			me := h.A.Chat
			g1 := pipeline.Key{Channel: "telegram", Chat: "-100" + me}
			g2 := pipeline.Key{Channel: "telegram", Chat: "-200" + me, Thread: "4"}
			at := h.clock.Now()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			for _, m := range []memory.Message{
				{Key: g1, Role: memory.RoleUser, SenderID: me, PlatformID: "1", Text: "my words in group one", Time: at},
				{Key: g1, Role: memory.RoleAssistant, ReplyTo: "1", Text: "answer to me in group one", Time: at},
				{Key: g1, Role: memory.RoleUser, SenderID: "99", PlatformID: "2", Text: "someone else's words", Time: at},
				{Key: g2, Role: memory.RoleUser, SenderID: me, PlatformID: "1", Text: "my words in group two", Time: at},
				{Key: h.A, Role: memory.RoleUser, SenderID: me, PlatformID: "1", Text: "my private words", Time: at},
			} {
				must(h.store.Append(h.ctx, m))
			}
			// Notes in group one: the person's own, and someone else's.
			must(h.store.RememberBy(h.ctx, g1.Owner(), "telegram:"+me, "mine", "my note in group one"))
			must(h.store.RememberBy(h.ctx, g1.Owner(), "telegram:99", "theirs", "someone else's note"))
			say := func(text string) string {
				t.Helper()
				before := len(h.out.Sent())
				if _, err := h.turn(pipeline.Inbound{Key: h.A, SenderID: me, Text: text}); err != nil {
					t.Fatal(err)
				}
				sent := h.out.Sent()[before:]
				if len(sent) != 1 {
					t.Fatalf("%q: %d replies", text, len(sent))
				}
				return sent[0].Text
			}
			mustContain(t, "question", say("/purge all"), "ALL your data", "Also your 2 messages in 2 groups", "1. Yes, and in the groups too")
			got := say(tc.answer)
			mustContain(t, "done", got, "Deleted 1 message,")
			count := func(k pipeline.Key) int64 {
				st, err := h.store.Status(h.ctx, k)
				must(err)
				return st.Total
			}
			if tc.groupsGone {
				mustContain(t, "groups done", got, "In the groups: deleted 3 messages", "and 1 note you wrote there")
				if count(g1) != 1 || count(g2) != 0 {
					t.Errorf("groups after the purge: %d and %d messages, want 1 (someone else's) and 0", count(g1), count(g2))
				}
				if notes, err := h.store.Memories(h.ctx, g1.Owner()); err != nil || len(notes) != 1 || notes[0].Key != "theirs" {
					t.Errorf("group one's notes after the purge: %+v %v, want someone else's alone", notes, err)
				}
			} else {
				mustNotContain(t, "groups kept", got, "In the groups")
				if count(g1) != 3 || count(g2) != 1 {
					t.Errorf("groups after a purge of my own chats: %d and %d messages, want 3 and 1", count(g1), count(g2))
				}
			}
		})
	}
}

// Every /purge tells AfterPurge its scope (the delivery journal forgets
// the undelivered replies, kept photos are removed), /purge older too.
func TestPurgeTellsAfterPurge(t *testing.T) {
	var got []memory.PurgeScope
	h := newHarness(t, &recorder{}, func(_ *memory.Options, c *commands.Options) {
		c.AfterPurge = func(s memory.PurgeScope) error { got = append(got, s); return nil }
	})
	h.seed(h.A, h.clock.Now(), "a secret")
	h.reply(h.A, "/purge chat")
	h.reply(h.A, "yes")
	h.reply(h.A, "/purge older 30")
	h.reply(h.A, "yes")
	if len(got) != 2 || got[0].Owner != h.A.Owner() || got[0].Key != h.A {
		t.Fatalf("AfterPurge heard %+v, want the conversation purge, then the older one", got)
	}
	if want := h.clock.Now().Add(-30 * 24 * time.Hour); got[1].Key != (pipeline.Key{}) || !got[1].OlderThan.Equal(want) {
		t.Fatalf("the older purge told %+v, want older than %v", got[1], want)
	}
}
