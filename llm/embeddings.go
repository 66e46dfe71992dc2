package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// EmbedderOptions configure an Embedder.
type EmbedderOptions struct {
	BaseURL    string // an OpenAI-compatible server; "" = OpenAI (then APIKey is needed)
	APIKey     string
	Model      string // e.g. text-embedding-3-small, nomic-embed-text
	Dimensions int    // vector size to ask for; 0 = the model's own
	// HTTPClient is optional (its Transport is wrapped like the chat
	// client's).
	HTTPClient *http.Client
}

// Embedder turns texts into vectors through /v1/embeddings (OpenAI,
// Ollama, llama.cpp --embedding, vLLM). It makes no retries and sets no
// deadline of its own: the caller's context says how long to wait.
type Embedder struct {
	api   *openai.Client
	model string
	dims  int
}

// NewEmbedder checks the options and returns an Embedder.
func NewEmbedder(o EmbedderOptions) (*Embedder, error) {
	if strings.TrimSpace(o.Model) == "" {
		return nil, errors.New("no embedding model set")
	}
	base, err := normalizeBaseURL(o.BaseURL, o.APIKey)
	if err != nil {
		return nil, err
	}
	cfg := openai.DefaultConfig(o.APIKey)
	cfg.BaseURL = base
	cfg.HTTPClient = wrapHTTPClient(o.HTTPClient)
	return &Embedder{api: openai.NewClientWithConfig(cfg), model: strings.TrimSpace(o.Model), dims: o.Dimensions}, nil
}

// Model is the configured embedding model.
func (e *Embedder) Model() string { return e.model }

// Embed returns one vector per text, in order, computed by model ("" = the
// configured one: a caller still serving vectors of an earlier model asks
// for that one), of the configured dimensions. Every vector has the same
// length.
func (e *Embedder) Embed(ctx context.Context, model string, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	if model == "" {
		model = e.model
	}
	req := openai.EmbeddingRequestStrings{Input: texts, Model: openai.EmbeddingModel(model), EncodingFormat: openai.EmbeddingEncodingFormatFloat,
		Dimensions: e.dims}
	resp, err := e.api.CreateEmbeddings(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("embedding %d texts with %s: %w", len(texts), model, err)
	}
	if len(resp.Data) != len(texts) {
		return nil, fmt.Errorf("embedding %d texts with %s: the server returned %d vectors", len(texts), model, len(resp.Data))
	}
	out := make([][]float32, len(texts))
	for i, d := range resp.Data {
		idx := d.Index
		if idx < 0 || idx >= len(out) || out[idx] != nil {
			idx = i // servers that leave index at 0 answer in order
		}
		if len(d.Embedding) == 0 {
			return nil, fmt.Errorf("embedding with %s: the server returned an empty vector", model)
		}
		out[idx] = d.Embedding
	}
	for _, v := range out {
		if v == nil || len(v) != len(out[0]) {
			return nil, fmt.Errorf("embedding with %s: the server returned vectors of different sizes", model)
		}
	}
	return out, nil
}
