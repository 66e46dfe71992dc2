package app

import (
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// A question open at a restart is not lost: /summary asks for the storage,
// the bot is rebuilt on the same data dir, and the answers continue the
// flow (they never reach the model as chat).
func TestQuestionSurvivesRestart(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Echo("echo: "))
	cfg := testConfig(t, srv)
	key := pipeline.Key{Channel: "telegram", Chat: "42"}
	send := func(a *App, id, text string) []string {
		t.Helper()
		out := &sender{}
		in := pipeline.Inbound{Key: key, SenderID: "42", MessageID: id, Text: text, Time: time.Now()}
		if err := a.Handler.Handle(t.Context(), &pipeline.Turn{In: in, Out: out}); err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		var texts []string
		for _, o := range out.sent {
			texts = append(texts, o.Text)
		}
		return texts
	}

	first, err := New(t.Context(), cfg, Parts{LogWriter: discard{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := send(first, "1", "/summary"); len(got) != 1 || !strings.Contains(got[0], "Step 1 of 2") {
		t.Fatalf("/summary answered %q", got)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	second, err := New(t.Context(), cfg, Parts{LogWriter: discard{}})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if got := send(second, "2", "2"); len(got) != 1 || !strings.Contains(got[0], "Step 2 of 2") {
		t.Fatalf("the answer to step 1 after a restart got %q, want step 2", got)
	}
	if got := send(second, "3", "15"); len(got) != 1 || !strings.Contains(got[0], "Long-term memory is configured") {
		t.Fatalf("the answer to step 2 got %q", got)
	}
	st, err := second.Store.Settings(t.Context(), key.Owner())
	if err != nil {
		t.Fatal(err)
	}
	if st.Storage != memory.StorageJSON || st.Threshold != 15 {
		t.Errorf("settings after the flow: %+v, want json and 15", st)
	}
	for _, r := range srv.Requests() {
		for _, m := range r.Messages {
			if m.Content == "2" || m.Content == "15" {
				t.Errorf("an answer to the question reached the model as chat: %+v", r.Messages)
			}
		}
	}
}
