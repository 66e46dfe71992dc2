package llm_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
)

func cosine(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// The fake's vectors make paraphrases close and unrelated texts far, the
// same every time; the client asks for the configured size.
func TestEmbedderAgainstFakeEndpoint(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Echo(""))
	e, err := llm.NewEmbedder(llm.EmbedderOptions{BaseURL: srv.URL, APIKey: "k", Model: "fake-embed", Dimensions: 128})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := e.Embed(context.Background(), "", []string{
		"We bought a new car last spring",
		"When did they purchase the automobile?",
		"My sister adopted a kitten",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 || len(vs[0]) != 128 {
		t.Fatalf("got %d vectors of %d", len(vs), len(vs[0]))
	}
	if near, far := cosine(vs[0], vs[1]), cosine(vs[0], vs[2]); near < 0.6 || far > 0.35 {
		t.Errorf("paraphrase cosine %.2f (want ≥ 0.6), unrelated %.2f (want ≤ 0.35)", near, far)
	}
	again, err := e.Embed(context.Background(), "", []string{"We bought a new car last spring"})
	if err != nil {
		t.Fatal(err)
	}
	if cosine(again[0], vs[0]) < 0.9999 {
		t.Error("the same text embedded twice gave different vectors")
	}
	calls := srv.EmbeddingCalls()
	if len(calls) != 2 || calls[0].Dimensions != 128 || calls[0].APIKey != "k" || calls[0].Model != "fake-embed" {
		t.Errorf("calls = %+v", calls)
	}
}

// An error status comes back as the API's error; a slow endpoint is cut
// by the caller's deadline.
func TestEmbedderErrorsAndDeadline(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Echo(""))
	e, err := llm.NewEmbedder(llm.EmbedderOptions{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	srv.OnEmbeddings(func(llmtest.EmbeddingRequest) llmtest.EmbeddingScript {
		return llmtest.EmbeddingScript{Status: http.StatusServiceUnavailable}
	})
	_, err = e.Embed(context.Background(), "", []string{"x"})
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusServiceUnavailable {
		t.Fatalf("err = %v, want a 503 APIError", err)
	}
	srv.OnEmbeddings(func(llmtest.EmbeddingRequest) llmtest.EmbeddingScript { return llmtest.EmbeddingScript{Hang: true} })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := e.Embed(ctx, "", []string{"x"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	if _, err := llm.NewEmbedder(llm.EmbedderOptions{BaseURL: srv.URL}); err == nil {
		t.Error("an embedder without a model was accepted")
	}
}
