package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// TranscriberOptions configure a Transcriber.
type TranscriberOptions struct {
	BaseURL  string // an OpenAI-compatible server; "" = OpenAI (then APIKey is needed)
	APIKey   string
	Model    string // e.g. whisper-1, gpt-4o-mini-transcribe, whisper-large-v3 (Groq)
	Language string // ISO-639-1 hint, "" to let the model detect it
	Timeout  time.Duration
}

// Transcriber turns speech into text through /v1/audio/transcriptions
// (OpenAI, Groq, a local whisper.cpp or faster-whisper server).
type Transcriber struct {
	api      *openai.Client
	model    string
	language string
	timeout  time.Duration
	apiKey   string
}

// NewTranscriber checks the options and returns a Transcriber.
func NewTranscriber(o TranscriberOptions) (*Transcriber, error) {
	if strings.TrimSpace(o.Model) == "" {
		return nil, errors.New("no transcription model set")
	}
	base, err := normalizeBaseURL(o.BaseURL, o.APIKey)
	if err != nil {
		return nil, err
	}
	cfg := openai.DefaultConfig(o.APIKey)
	cfg.BaseURL = base
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	return &Transcriber{api: openai.NewClientWithConfig(cfg), model: o.Model, language: o.Language, timeout: o.Timeout, apiKey: o.APIKey}, nil
}

// AudioTokensPerSecond converts speech to tokens for the daily quota:
// OpenAI's audio input rate for its gpt-4o models (one token per 100 ms).
// Transcription endpoints report no usage, and whisper-1, Groq and local
// servers bill by time, so this is the documented estimate for all of them.
const AudioTokensPerSecond = 10

// TranscriptionTokens is what transcribing d of speech into text counts in
// the daily token quota: d at AudioTokensPerSecond (at least one second)
// plus the transcript (chars/4).
func TranscriptionTokens(d time.Duration, text string) int {
	sec := int((d + time.Second - 1) / time.Second)
	return max(1, sec)*AudioTokensPerSecond + (len(text)+3)/4
}

// Model is the transcription model.
func (t *Transcriber) Model() string { return t.model }

// Transcribe returns what is said in audio; name (e.g. "voice.ogg") tells
// the server the format.
func (t *Transcriber) Transcribe(ctx context.Context, name string, audio []byte) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	resp, err := t.api.CreateTranscription(ctx, openai.AudioRequest{
		Model: t.model, FilePath: name, Reader: bytes.NewReader(audio), Language: t.language, Format: openai.AudioResponseFormatJSON,
	})
	if err != nil {
		var apiErr *openai.APIError
		var reqErr *openai.RequestError
		switch {
		case errors.As(err, &apiErr) && apiErr.HTTPStatusCode != 0:
			return "", &StatusError{Code: apiErr.HTTPStatusCode, Message: t.clean(apiErr.Message)}
		case errors.As(err, &reqErr) && reqErr.HTTPStatusCode != 0:
			return "", &StatusError{Code: reqErr.HTTPStatusCode, Message: t.clean(string(reqErr.Body))}
		case ctx.Err() != nil:
			return "", fmt.Errorf("%w: no transcript within %s", ErrTimeout, t.timeout)
		}
		return "", fmt.Errorf("%w: %s", ErrUnavailable, t.clean(err.Error()))
	}
	return strings.TrimSpace(resp.Text), nil
}

func (t *Transcriber) clean(s string) string {
	if t.apiKey != "" {
		s = strings.ReplaceAll(s, t.apiKey, "[redacted]")
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return strings.Join(strings.Fields(s), " ")
}
