package commands_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/recallbot/recall/commands"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// sub returns the harness reporting to a subtest.
func (h *harness) sub(t *testing.T) *harness {
	c := *h
	c.t = t
	return &c
}

func TestNotACommandGoesOn(t *testing.T) {
	h := newHarness(t, &recorder{})
	for _, text := range []string{"hello", "15", "yes", "/", "//x", "/1abc", "/a-b", "/помощь", "see /help", ""} {
		handled, outs := h.send(h.A, text)
		if handled || len(outs) != 0 {
			t.Errorf("%q: handled=%v replies=%+v; want it passed on untouched", text, handled, outs)
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	h := newHarness(t, &recorder{})
	tests := []struct {
		text    string
		closest string // "" when no suggestion is expected
	}{
		{"/serch", "/search"},
		{"/SERCH holiday", "/search"},
		{"/hepl", "/help"},
		{"/summary_stauts", "/summary_status"},
		{"/summaryon", "/summary_on"},
		{"/forgte", "/forget"},
		{"/memory", "/memories"},
		{"/summ", "/summary"},
		{"/remem", "/remember"},
		{"/purgeall", "/purge"},
		{"/summary_statistics", "/summary_status"},
		{"/serch@RecallBot", "/search"},
		{"/xyzzyplugh", ""},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got := h.sub(t).reply(h.A, tt.text)
			mustContain(t, tt.text, got, "/help", "don't know")
			if tt.closest != "" {
				mustContain(t, tt.text, got, "Did you mean "+tt.closest+"?")
			} else {
				mustNotContain(t, tt.text, got, "did you mean")
			}
		})
	}
}

func TestOtherBotsCommandIsConsumedSilently(t *testing.T) {
	h := newHarness(t, &recorder{}, withBotName("RecallBot"))
	for _, text := range []string{"/help@OtherBot", "/summary@OtherBot sqlite 15", "/purge@OtherBot all", "/nosuch@OtherBot"} {
		handled, outs := h.send(h.A, text)
		if !handled || len(outs) != 0 {
			t.Errorf("%q: handled=%v replies=%+v; want consumed without a reply", text, handled, outs)
		}
	}
	if st := h.settings(h.A.Owner()); st.MemoryEnabled || st.Threshold != 10 {
		t.Errorf("another bot's /summary changed settings: %+v", st)
	}
	// Ours, in any case, with or without "@".
	for _, text := range []string{"/help@RecallBot", "/help@recallbot", "/HELP@RECALLBOT", "/help"} {
		mustContain(t, text, h.reply(h.A, text), "/summary_status")
	}
	// Another bot's command does not abandon our pending question.
	h.reply(h.A, "/summary")
	if handled, outs := h.send(h.A, "/cancel@OtherBot"); !handled || len(outs) != 0 {
		t.Fatalf("/cancel@OtherBot: handled=%v replies=%+v", handled, outs)
	}
	mustContain(t, "answer after another bot's command", h.reply(h.A, "2"), "Step 2 of 2")
}

func TestBadArguments(t *testing.T) {
	h := newHarness(t, &recorder{})
	tests := []struct {
		text  string
		wants []string
	}{
		{"/summary_status extra", []string{"/summary_status takes no arguments"}},
		{"/summary_status@RecallBot extra", []string{"/summary_status takes no arguments"}},
		{"  /summary_status extra", []string{"/summary_status takes no arguments"}},
		{"/summary_on x", []string{"/summary_on takes no arguments"}},
		{"/summary_off x", []string{"/summary_off takes no arguments"}},
		{"/summary_now x", []string{"/summary_now takes no arguments"}},
		{"/summary foo", []string{"sqlite|json", "1-500", "/summary sqlite 15"}},
		{"/summary 15", []string{"sqlite|json", "1-500"}},
		{"/summary sqlite 0", []string{"1 to 500"}},
		{"/summary sqlite 501", []string{"1 to 500"}},
		{"/summary sqlite -3", []string{"1 to 500"}},
		{"/summary json abc", []string{"1 to 500"}},
		{"/summary mongo 15", []string{"sqlite or json"}},
		{"/summary a b c", []string{"sqlite|json", "/summary sqlite 15"}},
		{"/remember", []string{"/remember <key> <text>", "lowercase"}},
		{"/remember key", []string{"/remember <key> <text>"}},
		{"/remember key   ", []string{"/remember <key> <text>"}},
		{"/remember Bad-Key text", []string{"lowercase", "Bad-Key", "/remember favourite_food"}},
		{"/remember City text", []string{"lowercase"}},
		{"/remember system_x text", []string{"reserved", "system_"}},
		{"/remember internal_notes text", []string{"reserved"}},
		{"/remember 9abc text", []string{"lowercase", "starting with a letter"}},
		{"/remember café text", []string{"lowercase"}},
		{"/remember " + strings.Repeat("k", 65) + " text", []string{"65 characters", "64"}},
		{"/remember k " + strings.Repeat("x", 3000), []string{"3000 characters", "2000"}},
		{"/memories x", []string{"/memories takes no arguments"}},
		{"/forget", []string{"/forget <key>", "/memories"}},
		{"/forget two words", []string{"/forget <key>"}},
		{"/forget missing_key", []string{"missing_key", "/memories"}},
		{"/search", []string{"/search <words>"}},
		{"/search the and of", []string{"more specific", "/search holiday"}},
		{"/search a I", []string{"more specific"}},
		{"/export x", []string{"/export takes no arguments"}},
		{"/purge nonsense", []string{"/purge chat", "/purge all", "/purge older <days>"}},
		{"/purge chat now", []string{"/purge older <days>"}},
		{"/purge older", []string{"how many days", "/purge older 30"}},
		{"/purge older abc", []string{"days", "1 to 36500"}},
		{"/purge older 0", []string{"days", "1 to 36500"}},
		{"/purge older -5", []string{"days", "1 to 36500"}},
		{"/purge older 99999999", []string{"days", "1 to 36500"}},
		{"/purge older 30 60", []string{"/purge older <days>"}},
	}
	for _, tt := range tests {
		t.Run(tt.text[:min(len(tt.text), 40)], func(t *testing.T) {
			h := h.sub(t)
			got := h.reply(h.A, tt.text)
			mustContain(t, tt.text, got, tt.wants...)
			mustNotContain(t, tt.text, got, "internal error", "did not work")
			// Nothing was started or changed.
			if handled, _ := h.send(h.A, "yes"); handled {
				t.Errorf("%q left a question pending", tt.text)
			}
		})
	}
	if st := h.settings(h.A.Owner()); st.MemoryEnabled || st.Threshold != 10 || st.Storage != memory.StorageSQLite {
		t.Errorf("bad arguments changed settings: %+v", st)
	}
	if mems, _ := h.store.Memories(h.ctx, h.A.Owner()); len(mems) != 0 {
		t.Errorf("bad arguments stored memories: %+v", mems)
	}
	if calls := h.sum.Calls(); len(calls) != 0 {
		t.Errorf("/summary_now x ran the summarizer: %v", calls)
	}
}

// A usage error is the user's to fix: Handle reports no error for it.
func TestUsageErrorIsNotAnError(t *testing.T) {
	h := newHarness(t, &recorder{})
	handled, err := h.turn(pipeline.Inbound{Key: h.A, Text: "/summary sqlite 0"})
	if !handled || err != nil {
		t.Fatalf("Handle = %v, %v; want true, nil", handled, err)
	}
}

var allCommands = []string{"start", "help", "summary", "summary_status", "summary_on", "summary_off", "summary_now",
	"remember", "memories", "forget", "search", "context", "export", "purge", "cancel"}

func TestStartAndHelpListEveryCommand(t *testing.T) {
	h := newHarness(t, &recorder{})
	var listed []string
	for _, c := range h.cmds.List() {
		listed = append(listed, c.Name)
		if c.Help == "" || c.Run == nil {
			t.Errorf("command %q has no help or no Run", c.Name)
		}
	}
	if fmt.Sprint(listed) != fmt.Sprint(allCommands) {
		t.Errorf("List() = %v, want %v", listed, allCommands)
	}
	for _, text := range []string{"/start", "/help", "/help@RecallBot"} {
		got := h.reply(h.A, text)
		for _, name := range allCommands {
			if !strings.Contains(got, "\n/"+name+" ") {
				t.Errorf("%s does not list /%s:\n%s", text, name, got)
			}
		}
		mustContain(t, text, got, "/remember <key> <text>", "/purge [chat|all|older <days>]")
	}
	mustContain(t, "/start", h.reply(h.A, "/start"), "Recall")
}

func TestHelpExtraText(t *testing.T) {
	h := newHarness(t, &recorder{})
	cmds := commands.New(h.store, nil, nil, commands.Options{ExtraHelp: "Set llm.api_key to chat."})
	if got := cmds.HelpText(); !strings.HasSuffix(got, "Set llm.api_key to chat.") {
		t.Errorf("HelpText() does not end with the extra help:\n%s", got)
	}
}

func TestCancel(t *testing.T) {
	tests := []struct {
		name    string
		setup   []string // sent before /cancel
		expire  bool     // the question expires before /cancel
		want    string
		answer  string // sent after /cancel: must not be handled
		deletes bool
	}{
		{name: "nothing pending", want: "nothing to cancel"},
		{name: "summary step 1", setup: []string{"/summary"}, want: "Cancelled", answer: "2"},
		{name: "summary step 2", setup: []string{"/summary", "json"}, want: "Cancelled", answer: "15"},
		{name: "purge choice", setup: []string{"/purge"}, want: "Cancelled", answer: "1"},
		{name: "purge confirmation", setup: []string{"/purge chat"}, want: "Cancelled", answer: "yes"},
		{name: "expired question", setup: []string{"/purge chat"}, expire: true, want: "nothing to cancel", answer: "yes"},
		{name: "twice", setup: []string{"/summary", "/cancel"}, want: "nothing to cancel", answer: "2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &recorder{})
			h.seed(h.A, h.clock.Now(), "keep me")
			for _, s := range tt.setup {
				h.reply(h.A, s)
			}
			if tt.expire {
				h.clock.Advance(ttl + 1)
			}
			mustContain(t, "/cancel", h.reply(h.A, "/cancel"), tt.want)
			if tt.answer != "" {
				if handled, outs := h.send(h.A, tt.answer); handled || len(outs) != 0 {
					t.Errorf("after /cancel, %q: handled=%v replies=%+v", tt.answer, handled, outs)
				}
			}
			if st := h.settings(h.A.Owner()); st.MemoryEnabled || st.Storage != memory.StorageSQLite {
				t.Errorf("settings changed: %+v", st)
			}
			if st := h.status(h.A); st.Total != 2 {
				t.Errorf("messages: %d, want 2", st.Total)
			}
		})
	}
}

func TestMiddleware(t *testing.T) {
	h := newHarness(t, &recorder{})
	var passed []string
	handler := pipeline.Chain(pipeline.HandlerFunc(func(_ context.Context, t *pipeline.Turn) error {
		passed = append(passed, t.In.Text)
		return nil
	}), h.cmds.Middleware())
	for _, text := range []string{"hello", "/help", "/help@OtherBot", "/purge chat", "no", "15", "/nosuch"} {
		if err := handler.Handle(h.ctx, &pipeline.Turn{In: pipeline.Inbound{Key: h.A, Text: text}, Out: h.out}); err != nil {
			t.Fatalf("%q: %v", text, err)
		}
	}
	if fmt.Sprint(passed) != fmt.Sprint([]string{"hello", "15"}) {
		t.Errorf("passed on: %q, want [hello 15]", passed)
	}
}

// failingStore makes some store calls fail.
type failingStore struct {
	commands.Store
	err error
}

func (f failingStore) RememberBy(context.Context, string, string, string, string) error { return f.err }
func (f failingStore) Memories(context.Context, string) ([]memory.UserMemory, error) {
	return nil, f.err
}
func (f failingStore) PutSettings(context.Context, memory.Settings) error { return f.err }

func TestStoreFailures(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		texts []string // the last one fails
		want  string
	}{
		{"queue full", memory.ErrQueueFull, []string{"/remember city Lisbon"}, "storage is not available"},
		{"closed", memory.ErrClosed, []string{"/memories"}, "storage is not available"},
		{"timeout", context.DeadlineExceeded, []string{"/summary_on"}, "storage is busy"},
		{"internal", errors.New("disk I/O error"), []string{"/memories"}, "internal error"},
		{"in a flow", errors.New("disk I/O error"), []string{"/summary", "json", "15"}, "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &recorder{})
			h.cmds = commands.New(failingStore{Store: h.store, err: tt.err}, h.sum, h.prev, commands.Options{Now: h.clock.Now})
			for _, text := range tt.texts[:len(tt.texts)-1] {
				h.reply(h.A, text)
			}
			last := tt.texts[len(tt.texts)-1]
			before := len(h.out.Sent())
			handled, err := h.turn(pipeline.Inbound{Key: h.A, Text: last})
			if !handled || !errors.Is(err, tt.err) {
				t.Errorf("%q: Handle = %v, %v; want true, %v", last, handled, err, tt.err)
			}
			outs := h.out.Sent()[before:]
			if len(outs) != 1 {
				t.Fatalf("%q: %d replies, want 1: %+v", last, len(outs), outs)
			}
			mustContain(t, last, outs[0].Text, "Sorry", tt.want)
			mustNotContain(t, last, outs[0].Text, tt.err.Error())
		})
	}
}

// Many conversations use questions at once (run with -race).
func TestConcurrentConversations(t *testing.T) {
	h := newHarness(t, &recorder{})
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 20 {
		key := pipeline.Key{Channel: "telegram", Chat: fmt.Sprint(5000 + i)}
		wg.Go(func() {
			for _, text := range []string{"/purge chat", "no", "/summary", "/cancel", "/help"} {
				in := pipeline.Inbound{Key: key, Text: text, SenderID: "1"}
				if _, err := h.cmds.Handle(h.ctx, &pipeline.Turn{In: in, Out: h.out}); err != nil {
					errs <- fmt.Errorf("%v %q: %w", key, text, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(h.out.Sent()); n != 100 {
		t.Errorf("%d replies, want 100", n)
	}
}
