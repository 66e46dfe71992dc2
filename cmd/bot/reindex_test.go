package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/memory/pgtest"
)

// bot reindex killed (SIGKILL) during its fourth request embeds the rest on
// the next run, without sending again what the first run stored; then
// bot search finds a paraphrase through the embeddings.
func TestReindexKilledMidwayResumes(t *testing.T) {
	srv := newFakeLLM(t)
	env := newEnv(t, srv.URL, "RECALL_MEMORY_EMBEDDINGS_MODEL=fake-embed", "RECALL_MEMORY_EMBEDDINGS_BATCH=25")
	const n = 200
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	var msgs []memory.Message
	for i := range n {
		text := fmt.Sprintf("the garden needs watering, note %d", i)
		if i == 77 {
			text = "we finally got the automobile, a red one"
		}
		msgs = append(msgs, memory.Message{Role: memory.RoleUser, SenderID: "4242", SenderName: "Zoe", PlatformID: fmt.Sprint("p", i),
			Text: text, Time: t0.Add(time.Duration(i) * 5 * time.Hour), Tokens: 6})
	}
	file := writeJSONFile(t, "chat.json", memory.NewExport(memory.OwnerData{Owner: "telegram:4242",
		Conversations: []memory.ConversationData{{Key: "telegram:4242:", Messages: msgs}}}))
	env.mustRun(t, "", "import", file)

	hung := make(chan struct{})
	var calls atomic.Int64
	srv.OnEmbeddings(func(llmtest.EmbeddingRequest) llmtest.EmbeddingScript {
		if calls.Add(1) == 4 {
			close(hung)
			return llmtest.EmbeddingScript{Hang: true}
		}
		return llmtest.EmbeddingScript{}
	})
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	c := env.command(ctx, "reindex")
	var errb strings.Builder
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hung:
	case <-ctx.Done():
		t.Fatalf("bot reindex never reached its fourth request\n%s", errb.String())
	}
	if err := c.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	if !strings.Contains(errb.String(), "of 200 messages") {
		t.Errorf("no progress bar before the kill:\n%s", errb.String())
	}
	first := srv.EmbeddedTexts() // 3 stored batches + the one cut
	srv.OnEmbeddings(nil)
	r := env.mustRun(t, "", "reindex")
	if !strings.Contains(r.Stderr, "125 of 125 messages") || !strings.Contains(r.Stderr, "done: every message is embedded") {
		t.Errorf("second run: want progress to 125 of 125 and done:\n%s", r)
	}
	if again := srv.EmbeddedTexts() - first; first-25+again != n {
		t.Errorf("texts embedded: %d in the killed run (25 cut), %d after; want %d in all", first, again, n)
	}
	// Nothing left: a third run sends nothing.
	before := srv.EmbeddedTexts()
	env.mustRun(t, "", "reindex")
	if srv.EmbeddedTexts() != before {
		t.Error("a third run embedded again")
	}
	out := env.search(t, "telegram:4242:", "when", "did", "she", "purchase", "the", "car")
	if !out.has("automobile") {
		t.Errorf("bot search did not find the paraphrase with embeddings on: %+v", out)
	}
}

// With database.url the embeddings are kept in PostgreSQL: bot reindex
// embeds a bot's archive there, and bot search on another machine (another
// data directory, the same database) finds a paraphrase through them.
func TestReindexOnPostgres(t *testing.T) {
	srv := newFakeLLM(t)
	url := pgtest.URL(t)
	extra := []string{"RECALL_MEMORY_EMBEDDINGS_MODEL=fake-embed", "RECALL_DATABASE_URL=" + url}
	env := newEnv(t, srv.URL, extra...)
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	var msgs []memory.Message
	for i := range 60 {
		text := fmt.Sprintf("the garden needs watering, note %d", i)
		if i == 31 {
			text = "we finally got the automobile, a red one"
		}
		msgs = append(msgs, memory.Message{Role: memory.RoleUser, SenderID: "4242", SenderName: "Zoe", PlatformID: fmt.Sprint("p", i),
			Text: text, Time: t0.Add(time.Duration(i) * 5 * time.Hour), Tokens: 6})
	}
	env.mustRun(t, "", "import", writeJSONFile(t, "chat.json", memory.NewExport(memory.OwnerData{Owner: "telegram:4242",
		Conversations: []memory.ConversationData{{Key: "telegram:4242:", Messages: msgs}}})))
	r := env.mustRun(t, "", "reindex")
	if !strings.Contains(r.Stderr, "60 of 60 messages") {
		t.Errorf("bot reindex on PostgreSQL: want progress to 60 of 60:\n%s", r)
	}
	other := newEnv(t, srv.URL, extra...)
	out := other.search(t, "telegram:4242:", "when", "did", "she", "purchase", "the", "car")
	if !out.has("automobile") {
		t.Errorf("bot search on another data directory did not find the paraphrase through PostgreSQL's vectors: %+v", out)
	}
}

// has says whether a message of the snippets found contains text.
func (o searchOut) has(text string) bool {
	for _, s := range o.Snippets {
		for _, m := range s.Messages {
			if strings.Contains(m.Text, text) {
				return true
			}
		}
	}
	return false
}
