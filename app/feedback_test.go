package app

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// With memory.feedback on, a question whose answer shares no word with it
// ("what went missing on the Portugal holiday?" — "my sunglasses stayed on
// the tram in Lisbon") reaches the model's prompt through the words of the
// related messages it does find; with it off (the default) it does not.
func TestFeedbackThroughTheChain(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprint("feedback=", on), func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.Echo("echo: "))
			cfg := testConfig(t, srv)
			cfg.Memory.Threshold = 100
			cfg.Memory.Feedback = on
			a, err := New(t.Context(), cfg, Parts{LogWriter: discard{}})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			key := pipeline.Key{Channel: "telegram", Chat: "42"}
			conv := memory.ConversationData{Key: key.String()}
			at := func(day, hour int) time.Time { return time.Date(2026, 3, day, hour, 0, 0, 0, time.UTC) }
			add := func(t0 time.Time, text string) {
				conv.Messages = append(conv.Messages, memory.Message{Role: memory.RoleUser, SenderID: "42", SenderName: "Anna",
					PlatformID: fmt.Sprint("old", len(conv.Messages)), Text: text, Time: t0, Tokens: 12})
			}
			add(at(2, 18), "we are back from the holiday in Portugal")
			add(at(2, 19), "how lovely Lisbon was")
			add(at(5, 20), "the holiday photos from Portugal are online")
			add(at(5, 21), "the ones from Lisbon are my favourite")
			add(at(9, 12), "my sunglasses stayed on the tram in Lisbon, gone forever")
			topics := []string{"the printer jammed again", "football practice moved to Thursday", "the cat knocked over a plant",
				"new bakery opened on the corner", "my phone battery died", "the concert tickets sold out", "rain all week",
				"the neighbours painted their fence", "dinner was pasta", "the train was late"}
			for d := range 40 {
				add(at(10+d/2, 8+5*(d%2)), fmt.Sprintf("%s (%d)", topics[d%len(topics)], d))
			}
			if _, err := a.Store.Import(t.Context(), memory.NewExport(memory.OwnerData{Owner: key.Owner(), Conversations: []memory.ConversationData{conv}})); err != nil {
				t.Fatal(err)
			}
			in := pipeline.Inbound{Key: key, SenderID: "42", MessageID: "q1", Text: "what went missing on the Portugal holiday?", Time: time.Now()}
			if err := a.Handler.Handle(t.Context(), &pipeline.Turn{In: in, Out: &sender{}}); err != nil {
				t.Fatal(err)
			}
			reqs := notSummaries(srv.Requests()) // the answer's, not a background summary's
			prompt := ""
			for _, m := range reqs[len(reqs)-1].Messages {
				prompt += m.Content + "\n"
			}
			if got := strings.Contains(prompt, "sunglasses"); got != on {
				t.Errorf("feedback %v: the answer in the prompt = %v, want %v; prompt:\n%s", on, got, on, prompt)
			}
		})
	}
}
