package commands_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/recallbot/recall/commands"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/memory/pgtest"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/summary"
)

// answer is one reply to a question: typed text, or a pressed button.
type answer struct {
	text   string
	button string // the button's data; text is then its label
}

func (h *harness) answer(key pipeline.Key, a answer) (bool, []pipeline.Outbound) {
	h.t.Helper()
	if a.button != "" {
		return h.press(key, a.text, a.button)
	}
	return h.send(key, a.text)
}

func TestSummaryFlow(t *testing.T) {
	tests := []struct {
		name    string
		buttons bool
		storage answer
		want    memory.Storage
	}{
		{"buttons: JSON file", true, answer{text: "JSON file", button: "json"}, memory.StorageJSON},
		{"buttons: SQLite", true, answer{text: "SQLite (recommended)", button: "sqlite"}, memory.StorageSQLite},
		{"buttons: typed number anyway", true, answer{text: "2"}, memory.StorageJSON},
		{"numbered: 2", false, answer{text: "2"}, memory.StorageJSON},
		{"numbered: 2.", false, answer{text: " 2. "}, memory.StorageJSON},
		{"numbered: json", false, answer{text: "json"}, memory.StorageJSON},
		{"numbered: JSON", false, answer{text: "JSON"}, memory.StorageJSON},
		{"numbered: JSON file", false, answer{text: "JSON file"}, memory.StorageJSON},
		{"numbered: 1", false, answer{text: "1"}, memory.StorageSQLite},
		{"numbered: sqlite", false, answer{text: "sqlite"}, memory.StorageSQLite},
		{"numbered: label", false, answer{text: "SQLite (recommended)"}, memory.StorageSQLite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out sentLog = &recorder{}
			if tt.buttons {
				out = &buttonSender{}
			}
			h := newHarness(t, out)
			h.seed(h.A, h.clock.Now(), "the lighthouse keeper")

			// Step 1: the storage question.
			handled, outs := h.send(h.A, "/summary")
			if !handled || len(outs) != 1 {
				t.Fatalf("/summary: handled=%v replies=%+v", handled, outs)
			}
			q := outs[0]
			mustContain(t, "step 1", q.Text, "Step 1 of 2")
			if tt.buttons {
				if len(q.Choices) != 3 || q.Choices[0] != (pipeline.Choice{Label: "SQLite (recommended)", Data: "sqlite"}) ||
					q.Choices[1] != (pipeline.Choice{Label: "JSON file", Data: "json"}) || q.Choices[2].Data != "cancel" {
					t.Errorf("buttons: %+v", q.Choices)
				}
				mustNotContain(t, "step 1 with buttons", q.Text, "1. SQLite")
			} else {
				if len(q.Choices) != 0 {
					t.Errorf("choices sent to a sender without buttons: %+v", q.Choices)
				}
				mustContain(t, "step 1 numbered", q.Text, "1. SQLite (recommended)", "2. JSON file", "3. Cancel")
			}

			// Step 2: the threshold question.
			handled, outs = h.answer(h.A, tt.storage)
			if !handled || len(outs) != 1 {
				t.Fatalf("storage answer: handled=%v replies=%+v", handled, outs)
			}
			mustContain(t, "step 2", outs[0].Text, "Step 2 of 2", "1 to 500", "now: 10")
			if st := h.settings(h.A.Owner()); st.MemoryEnabled || st.Storage != memory.StorageSQLite {
				t.Errorf("settings changed before the last step: %+v", st)
			}

			got := h.reply(h.A, "15")
			mustContain(t, "done", got, "configured", "every 15 messages")
			st := h.settings(h.A.Owner())
			if st.Storage != tt.want || st.Threshold != 15 || !st.MemoryEnabled {
				t.Errorf("settings = %+v; want storage %s, threshold 15, enabled", st, tt.want)
			}
			if tt.want == memory.StorageJSON {
				mustContain(t, "done", got, "Storage: JSON file", "moved")
			} else {
				mustContain(t, "done", got, "Storage: SQLite")
				mustNotContain(t, "done", got, "moved")
			}
			// The history is where the settings say, complete.
			if s := h.status(h.A); s.Total != 2 {
				t.Errorf("after the move: %d messages, want 2", s.Total)
			}
			hits, err := h.store.Search(h.ctx, h.A, memory.Query{Text: "lighthouse"})
			if err != nil || len(hits) != 1 {
				t.Errorf("search after the move: %v, %v", hits, err)
			}
			// The question is answered: a further "15" goes on.
			if handled, _ := h.send(h.A, "15"); handled {
				t.Error("a further 15 was taken by the finished flow")
			}
		})
	}
}

func TestSummaryFlowReasksOnInvalidAnswers(t *testing.T) {
	h := newHarness(t, &recorder{})
	h.reply(h.A, "/summary")
	for _, bad := range []string{"mongodb", "4", "0", "-1", "sqlite json", "yes"} {
		mustContain(t, "storage "+bad, h.reply(h.A, bad), "choose 1 (SQLite) or 2 (JSON file)", "cancel")
	}
	mustContain(t, "storage", h.reply(h.A, "2"), "Step 2 of 2")
	for _, bad := range []string{"0", "501", "abc", "15 messages", "1.5", "-3", "fifteen", "99999999999999999999"} {
		got := h.reply(h.A, bad)
		mustContain(t, "threshold "+bad, got, "1 to 500", "cancel")
		if st := h.settings(h.A.Owner()); st.MemoryEnabled {
			t.Fatalf("%q enabled memory: %+v", bad, st)
		}
	}
	mustContain(t, "threshold", h.reply(h.A, " 500 "), "every 500 messages")
	if st := h.settings(h.A.Owner()); st.Storage != memory.StorageJSON || st.Threshold != 500 || !st.MemoryEnabled {
		t.Errorf("settings = %+v", st)
	}
}

func TestSummaryFlowCancel(t *testing.T) {
	tests := []struct {
		name   string
		before []answer // answers before the cancel
		cancel answer
	}{
		{"step 1: cancel", nil, answer{text: "cancel"}},
		{"step 1: Cancel!", nil, answer{text: "  Cancel! "}},
		{"step 1: stop", nil, answer{text: "stop"}},
		{"step 1: 3", nil, answer{text: "3"}},
		{"step 1: button", nil, answer{text: "Cancel", button: "cancel"}},
		{"step 1: /cancel", nil, answer{text: "/cancel"}},
		{"step 2: cancel", []answer{{text: "json"}}, answer{text: "cancel"}},
		{"step 2: never mind", []answer{{text: "json"}}, answer{text: "Never mind"}},
		{"step 2: /cancel", []answer{{text: "json"}}, answer{text: "/cancel"}},
		{"step 2 after a bad threshold", []answer{{text: "2"}, {text: "0"}}, answer{text: "cancel"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &buttonSender{})
			h.seed(h.A, h.clock.Now(), "keep me")
			h.reply(h.A, "/summary")
			for _, a := range tt.before {
				if handled, _ := h.answer(h.A, a); !handled {
					t.Fatalf("%q not handled", a.text)
				}
			}
			handled, outs := h.answer(h.A, tt.cancel)
			if !handled || len(outs) != 1 {
				t.Fatalf("cancel: handled=%v replies=%+v", handled, outs)
			}
			mustContain(t, "cancel", outs[0].Text, "Cancelled")
			st := h.settings(h.A.Owner())
			if st.MemoryEnabled || st.Storage != memory.StorageSQLite || st.Threshold != 10 {
				t.Errorf("settings changed: %+v", st)
			}
			if s := h.status(h.A); s.Total != 2 {
				t.Errorf("messages: %d, want 2", s.Total)
			}
			for _, late := range []string{"2", "15"} {
				if handled, _ := h.send(h.A, late); handled {
					t.Errorf("%q after cancel was handled", late)
				}
			}
		})
	}
}

func TestSummaryFlowExpires(t *testing.T) {
	t.Run("late threshold is told it expired", func(t *testing.T) {
		h := newHarness(t, &recorder{})
		h.reply(h.A, "/summary")
		h.reply(h.A, "json")
		h.clock.Advance(ttl + time.Second)
		handled, outs := h.send(h.A, "15")
		if !handled || len(outs) != 1 {
			t.Fatalf("late 15: handled=%v replies=%+v; want told it expired", handled, outs)
		}
		mustContain(t, "late 15", outs[0].Text, "That question expired; send /summary again")
		if handled, _ := h.send(h.A, "15"); handled {
			t.Error("a second late 15 was handled: the expired question is told once, then it is chat")
		}
		// Chat is chat, even right after a question expired.
		h.reply(h.A, "/summary")
		h.clock.Advance(ttl + time.Second)
		if handled, _ := h.send(h.A, "what did we talk about yesterday?"); handled {
			t.Error("a chat message after a question expired was taken for its answer")
		}
		if st := h.settings(h.A.Owner()); st.MemoryEnabled || st.Storage != memory.StorageSQLite {
			t.Errorf("settings changed: %+v", st)
		}
	})
	t.Run("late button is expired", func(t *testing.T) {
		h := newHarness(t, &buttonSender{})
		h.reply(h.A, "/summary")
		h.clock.Advance(ttl + time.Second)
		handled, outs := h.press(h.A, "JSON file", "json")
		if !handled || len(outs) != 1 {
			t.Fatalf("late button: handled=%v replies=%+v", handled, outs)
		}
		mustContain(t, "late button", outs[0].Text, "expired")
		if handled, _ := h.send(h.A, "15"); handled {
			t.Error("15 after the expired button was handled")
		}
		if st := h.settings(h.A.Owner()); st.MemoryEnabled || st.Storage != memory.StorageSQLite {
			t.Errorf("settings changed: %+v", st)
		}
	})
	t.Run("each step has its own time", func(t *testing.T) {
		h := newHarness(t, &recorder{})
		h.reply(h.A, "/summary")
		h.clock.Advance(ttl - time.Second)
		mustContain(t, "step 1 just in time", h.reply(h.A, "1"), "Step 2 of 2")
		h.clock.Advance(ttl - time.Second)
		mustContain(t, "step 2 just in time", h.reply(h.A, "20"), "every 20 messages")
		if st := h.settings(h.A.Owner()); st.Threshold != 20 || !st.MemoryEnabled {
			t.Errorf("settings = %+v", st)
		}
	})
}

func TestNewCommandAbandonsFlow(t *testing.T) {
	tests := []struct {
		name, start, other, late string
	}{
		{"summary then memories", "/summary", "/memories", "2"},
		{"summary step 2 then help", "/summary json", "/help", "15"},
		{"purge then summary_status", "/purge chat", "/summary_status", "yes"},
		{"purge then purge question", "/purge", "/start", "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &recorder{})
			h.seed(h.A, h.clock.Now(), "keep me")
			h.reply(h.A, tt.start)
			h.reply(h.A, tt.other)
			if handled, outs := h.send(h.A, tt.late); handled || len(outs) != 0 {
				t.Errorf("%q after %s: handled=%v replies=%+v", tt.late, tt.other, handled, outs)
			}
			if st := h.settings(h.A.Owner()); st.MemoryEnabled {
				t.Errorf("settings changed: %+v", st)
			}
			if s := h.status(h.A); s.Total != 2 {
				t.Errorf("messages: %d, want 2", s.Total)
			}
		})
	}
}

func TestFlowsArePerConversation(t *testing.T) {
	h := newHarness(t, &recorder{})
	h.reply(h.A, "/summary")
	h.reply(h.B, "/summary")
	h.reply(h.WA, "/purge chat")
	mustContain(t, "A storage", h.reply(h.A, "2"), "JSON file")
	mustContain(t, "B storage", h.reply(h.B, "1"), "SQLite")
	// Another topic of A's chat has no question pending.
	if handled, _ := h.send(h.A2, "15"); handled {
		t.Error("a topic of the same chat answered A's question")
	}
	mustContain(t, "B threshold", h.reply(h.B, "30"), "every 30 messages")
	mustContain(t, "A threshold", h.reply(h.A, "15"), "every 15 messages")
	mustContain(t, "WA confirmation", h.reply(h.WA, "no"), "nothing was deleted")
	if st := h.settings(h.A.Owner()); st.Storage != memory.StorageJSON || st.Threshold != 15 || !st.MemoryEnabled {
		t.Errorf("A: %+v", st)
	}
	if st := h.settings(h.B.Owner()); st.Storage != memory.StorageSQLite || st.Threshold != 30 || !st.MemoryEnabled {
		t.Errorf("B: %+v", st)
	}
	if st := h.settings(h.WA.Owner()); st.MemoryEnabled {
		t.Errorf("WA: %+v", st)
	}
}

func TestSummaryOneShot(t *testing.T) {
	tests := []struct {
		text      string
		storage   memory.Storage
		threshold int
	}{
		{"/summary sqlite 20", memory.StorageSQLite, 20},
		{"/summary json 7", memory.StorageJSON, 7},
		{"/summary JSON 1", memory.StorageJSON, 1},
		{"/summary@RecallBot sqlite 500", memory.StorageSQLite, 500},
		{"/summary\njson\n42", memory.StorageJSON, 42},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			h := newHarness(t, &recorder{})
			h.seed(h.A, h.clock.Now(), "keep me")
			got := h.reply(h.A, tt.text)
			want := fmt.Sprintf("every %d messages.", tt.threshold)
			if tt.threshold == 1 {
				want = "every 1 message."
			}
			mustContain(t, tt.text, got, "configured", want)
			st := h.settings(h.A.Owner())
			if st.Storage != tt.storage || st.Threshold != tt.threshold || !st.MemoryEnabled {
				t.Errorf("settings = %+v", st)
			}
			if s := h.status(h.A); s.Total != 2 {
				t.Errorf("messages: %d, want 2", s.Total)
			}
			if handled, _ := h.send(h.A, "15"); handled {
				t.Error("a one-shot /summary left a question pending")
			}
		})
	}
	t.Run("storage only asks the threshold", func(t *testing.T) {
		h := newHarness(t, &buttonSender{})
		mustContain(t, "/summary json", h.reply(h.A, "/summary json"), "Step 2 of 2", "JSON file")
		h.reply(h.A, "15")
		if st := h.settings(h.A.Owner()); st.Storage != memory.StorageJSON || st.Threshold != 15 || !st.MemoryEnabled {
			t.Errorf("settings = %+v", st)
		}
	})
	t.Run("back to sqlite keeps the data", func(t *testing.T) {
		h := newHarness(t, &recorder{})
		h.seed(h.A, h.clock.Now(), "the lighthouse keeper")
		h.reply(h.A, "/summary json 15")
		mustContain(t, "back", h.reply(h.A, "/summary sqlite 15"), "moved")
		if st := h.settings(h.A.Owner()); st.Storage != memory.StorageSQLite {
			t.Errorf("settings = %+v", st)
		}
		mustContain(t, "search", h.reply(h.A, "/search lighthouse"), "the lighthouse keeper")
	})
}

func TestSummaryStatus(t *testing.T) {
	h := newHarness(t, &recorder{})
	mustContain(t, "empty", h.reply(h.A, "/summary_status"),
		"Memory: off", "Storage: SQLite", "Summarize every: 10 messages", "Messages since the last summary: 0",
		"Messages stored: 0 (0 active, 0 archived)", "Active summaries: 0 (none)", "Highest summary level: 0")

	h.seed(h.A, h.clock.Now().Add(-time.Hour), "one", "two", "three")
	active, err := h.store.Active(h.ctx, h.A)
	if err != nil || len(active) != 6 {
		t.Fatalf("Active: %d, %v", len(active), err)
	}
	ids := []int64{active[0].ID, active[1].ID}
	if _, err := h.store.Archive(h.ctx, h.A, ids, memory.Summary{Text: "they said one"}, 1); err != nil {
		t.Fatalf("Archive: %v", err)
	}
	h.seed(h.B, h.clock.Now(), "other conversation") // not counted for A
	s := h.status(h.A)
	if s.Total != 6 || s.Archived != 2 || s.HighestLevel != 1 {
		t.Fatalf("store status: %+v", s)
	}
	h.reply(h.A, "/summary json 15")
	got := h.reply(h.A, "/summary_status")
	mustContain(t, "seeded", got,
		"Memory: on", "Storage: JSON file", "Summarize every: 15 messages",
		fmt.Sprintf("Messages since the last summary: %d", s.TurnsSinceSummary),
		"Messages stored: 6 (4 active, 2 archived)",
		"Active summaries: 1 (1 at level 1)", "Highest summary level: 1", "Last summary:")
	mustNotContain(t, "seeded", got, "being written")

	h.sum.set(summary.Result{}, nil, true)
	mustContain(t, "running", h.reply(h.A, "/summary_status"), "being written")
}

func TestSummaryOnOff(t *testing.T) {
	h := newHarness(t, &recorder{})
	h.seed(h.A, h.clock.Now(), "keep me")
	steps := []struct {
		text    string
		wants   []string
		enabled bool
	}{
		{"/summary_off", []string{"already off"}, false},
		{"/summary_on", []string{"is on", "SQLite", "every 10 messages"}, true},
		{"/summary_on", []string{"already on"}, true},
		{"/summary_off@RecallBot", []string{"is off", "Nothing was deleted", "/summary_on"}, false},
		{"/summary_off", []string{"already off"}, false},
		{"/SUMMARY_ON", []string{"is on"}, true},
	}
	for _, s := range steps {
		got := h.reply(h.A, s.text)
		mustContain(t, s.text, got, s.wants...)
		if st := h.settings(h.A.Owner()); st.MemoryEnabled != s.enabled || st.Threshold != 10 || st.Storage != memory.StorageSQLite {
			t.Errorf("after %s: %+v", s.text, st)
		}
	}
	if s := h.status(h.A); s.Total != 2 {
		t.Errorf("messages: %d, want 2", s.Total)
	}
	// The configuration is kept across off and on.
	h.reply(h.A, "/summary json 25")
	h.reply(h.A, "/summary_off")
	mustContain(t, "on again", h.reply(h.A, "/summary_on"), "JSON file", "every 25 messages")
	// Another owner is not affected.
	if st := h.settings(h.B.Owner()); st.MemoryEnabled {
		t.Errorf("B: %+v", st)
	}
}

func TestSummaryNow(t *testing.T) {
	tests := []struct {
		name    string
		res     summary.Result
		err     error
		running bool
		wants   []string
		nots    []string
		runs    bool
	}{
		{name: "success", res: summary.Result{Archived: 8, Created: []memory.Summary{{Level: 1}}},
			wants: []string{"Done", "8 messages archived"}, nots: []string{"level-2"}, runs: true},
		{name: "success with a fold", res: summary.Result{Archived: 4, Created: []memory.Summary{{Level: 1}, {Level: 2}}},
			wants: []string{"4 messages archived", "1 level-2 summary"}, runs: true},
		{name: "nothing to summarize", err: summary.ErrNothingToSummarize,
			wants: []string{"nothing to summarize"}, nots: []string{"Done"}, runs: true},
		{name: "nothing to summarize, wrapped", err: fmt.Errorf("key x: %w", summary.ErrNothingToSummarize),
			wants: []string{"nothing to summarize"}, runs: true},
		{name: "failure", err: errLLM,
			wants: []string{"couldn't", "Nothing was archived", "try again"}, nots: []string{"Done", "503"}, runs: true},
		{name: "started meanwhile", err: summary.ErrRunning,
			wants: []string{"already being written"}, nots: []string{"Done", "couldn't"}, runs: true},
		{name: "already running", running: true,
			wants: []string{"already being written"}, nots: []string{"Done"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &recorder{})
			h.sum.set(tt.res, tt.err, tt.running)
			got := h.reply(h.A, "/summary_now")
			mustContain(t, tt.name, got, tt.wants...)
			mustNotContain(t, tt.name, got, tt.nots...)
			calls := h.sum.Calls()
			if tt.runs && (len(calls) != 1 || calls[0] != h.A) {
				t.Errorf("summarizer calls = %v, want [%v]", calls, h.A)
			}
			if !tt.runs && len(calls) != 0 {
				t.Errorf("summarizer ran while running: %v", calls)
			}
		})
	}
	t.Run("no language model", func(t *testing.T) {
		h := newHarness(t, &recorder{})
		h.cmds = newCommandsWithoutModel(h)
		mustContain(t, "no model", h.reply(h.A, "/summary_now"), "language model")
		mustContain(t, "no model status", h.reply(h.A, "/summary_status"), "Memory: off")
		mustContain(t, "no previewer", h.reply(h.A, "/context"), "not available")
	})
}

// newCommandsWithoutModel is what runs when no LLM is configured: no
// summarizer and no previewer.
func newCommandsWithoutModel(h *harness) *commands.Commands {
	return commands.New(h.store, nil, nil, commands.Options{Now: h.clock.Now, FlowTTL: ttl})
}

// TestSummaryJSONOnPostgres: on a bot whose conversations are in PostgreSQL
// (database.url), asking for a JSON file gets a clear answer, the history
// stays where it is and is still found, and the database choice works.
func TestSummaryJSONOnPostgres(t *testing.T) {
	h := newHarness(t, &recorder{}, withDatabaseURL(pgtest.URL(t)))
	h.seed(h.A, h.clock.Now(), "the lighthouse keeper")
	mustContain(t, "/summary json 15", h.reply(h.A, "/summary json 15"), "not available on this bot", "Nothing changed", "/summary 15")
	mustContain(t, "/summary json", h.reply(h.A, "/summary json"), "not available on this bot")
	if st := h.settings(h.A.Owner()); st.Storage != memory.StorageSQLite {
		t.Errorf("settings after the refusal = %+v", st)
	}
	// Nothing to choose but how often: no storage step, no JSON choice.
	ask := h.reply(h.A, "/summary")
	mustContain(t, "/summary", ask, "PostgreSQL database", "After how many")
	mustNotContain(t, "/summary", ask, "JSON", "Step 1")
	mustContain(t, "/summary → 12", h.reply(h.A, "12"), "configured", "Storage: PostgreSQL", "every 12 messages.")
	mustContain(t, "/summary 20", h.reply(h.A, "/summary 20"), "configured", "every 20 messages.")
	if st := h.settings(h.A.Owner()); st.Storage != memory.StorageSQLite {
		t.Errorf("settings after the refusal = %+v", st)
	}
	mustContain(t, "search", h.reply(h.A, "/search lighthouse"), "the lighthouse keeper")
	mustContain(t, "/summary sqlite 15", h.reply(h.A, "/summary sqlite 15"), "configured", "Storage: PostgreSQL", "every 15 messages.")
	if st := h.settings(h.A.Owner()); st.Threshold != 15 || !st.MemoryEnabled {
		t.Errorf("settings = %+v", st)
	}
	mustContain(t, "/summary_status", h.reply(h.A, "/summary_status"), "Storage: PostgreSQL")
}
