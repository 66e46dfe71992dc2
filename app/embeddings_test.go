package app

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/embed"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// With memory.embeddings set, the bot answers a paraphrased question with
// the archived message that says it in other words (in the prompt the model
// receives), /summary_status tells how much is embedded, and /context
// names the fusion.
func TestEmbeddingsThroughTheChain(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Echo("echo: "))
	cfg := testConfig(t, srv)
	cfg.Memory.Threshold = 100
	cfg.Memory.Embeddings.Model = "fake-embed" // base URL and key: the LLM's
	a, err := New(t.Context(), cfg, Parts{LogWriter: discard{}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	key := pipeline.Key{Channel: "telegram", Chat: "42"}
	conv := memory.ConversationData{Key: key.String()}
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	for i := range 40 {
		text := fmt.Sprintf("the garden needs watering, note %d", i)
		if i == 17 {
			text = "we finally got the automobile, a red one"
		}
		conv.Messages = append(conv.Messages, memory.Message{Role: memory.RoleUser, SenderID: "42", SenderName: "Zoe", PlatformID: fmt.Sprint("old", i),
			Text: text, Time: t0.Add(time.Duration(i) * 5 * time.Hour), Tokens: 8})
	}
	if _, err := a.Store.Import(t.Context(), memory.NewExport(memory.OwnerData{Owner: key.Owner(), Conversations: []memory.ConversationData{conv}})); err != nil {
		t.Fatal(err)
	}
	out := &sender{}
	turn := func(id, text string) string {
		t.Helper()
		in := pipeline.Inbound{Key: key, SenderID: "42", MessageID: id, Text: text, Time: time.Now()}
		if err := a.Handler.Handle(t.Context(), &pipeline.Turn{In: in, Out: out}); err != nil {
			t.Fatal(err)
		}
		out.mu.Lock()
		defer out.mu.Unlock()
		return out.sent[len(out.sent)-1].Text
	}
	if got := turn("s1", "/summary_status"); !strings.Contains(got, "Search by meaning (fake-embed): 0 of 40 messages embedded (0%)") {
		t.Errorf("/summary_status before embedding:\n%s", got)
	}
	emb, err := NewEmbedder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := embed.Reindex(t.Context(), a.Store.SQLite(), a.Store.JSON(), emb, 16, nil); err != nil {
		t.Fatal(err)
	}
	if got := turn("s2", "/summary_status"); !strings.Contains(got, "40 of 40 messages embedded (100%)") {
		t.Errorf("/summary_status after embedding:\n%s", got)
	}
	turn("q1", "when did I purchase my car?")
	reqs := notSummaries(srv.Requests()) // the answer's, not a background summary's
	prompt := ""
	for _, m := range reqs[len(reqs)-1].Messages {
		prompt += m.Content + "\n"
	}
	if !strings.Contains(prompt, "automobile") {
		t.Errorf("the prompt lacks the paraphrased archive message:\n%s", prompt)
	}
	if got := turn("c1", "/context"); !strings.Contains(got, "fused with embeddings") {
		t.Errorf("/context does not name the fusion:\n%s", got)
	}
}
