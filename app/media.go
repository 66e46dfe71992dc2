package app

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/media"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/sandbox"
)

// mediaStage builds the stage that hears voice notes, sees photos and reads
// documents (media.*): transcription through its own endpoint (by default
// the LLM's), descriptions through the chat model, counted in the daily
// token quota (usage).
func (a *App) mediaStage(rec media.Recorder, usage media.Usage) *media.Stage {
	cfg := a.Config
	mc := cfg.Media
	opts := media.Options{
		MaxDuration:    time.Duration(mc.Transcription.MaxSeconds) * time.Second,
		MaxBytes:       int64(mc.Transcription.MaxBytes),
		Heard:          mc.Transcription.ShowHeard,
		Vision:         mc.Vision,
		MaxImage:       int64(mc.MaxImageBytes),
		MaxDocument:    int64(mc.MaxDocumentBytes),
		MaxPDF:         int64(mc.MaxPDFBytes),
		MaxImagePixels: int64(mc.MaxImagePixels),
		DocumentPrompt: cfg.Memory.Budget.Snippets,
		Usage:          usage,
		Log:            a.Log,
	}
	if mc.Transcription.Model != "" {
		base, key := mc.Transcription.BaseURL, mc.Transcription.APIKey
		if base == "" {
			base = cfg.LLM.BaseURL
		}
		if key == "" {
			key = cfg.LLM.APIKey
		}
		tr, err := llm.NewTranscriber(llm.TranscriberOptions{BaseURL: base, APIKey: key, Model: mc.Transcription.Model, Language: mc.Transcription.Language})
		if err != nil {
			a.Log.Error("voice notes will not be transcribed: media.transcription is not usable", "err", err)
		} else {
			opts.Transcriber = tr
		}
	}
	if a.parts.Workers != nil {
		opts.Sandbox = sandbox.NewPool(a.parts.Workers, sandbox.Limits{Workers: mc.Workers.Count, Memory: int64(mc.Workers.MemoryMB) << 20,
			Wait: mc.Workers.Wait, Timeout: mc.Workers.Timeout, CPU: time.Duration(mc.Workers.CPUSeconds) * time.Second})
	}
	if imp, ok := rec.(media.Importer); ok {
		opts.Imports = &media.Imports{Confirm: laterConfirm{a}, Store: imp, Count: a.Counter.Count}
	}
	if c, ok := a.Model.(*llm.Client); ok && mc.Vision != media.VisionOff {
		opts.Describer = describer{c}
		opts.Model = c.Model()
	}
	if mc.KeepImages {
		opts.Keep = media.NewKept(filepath.Join(cfg.Data.Dir, MediaDir))
	}
	a.Kept = opts.Keep
	return media.New(rec, opts)
}

// MediaDir is where kept photos are, under data.dir (media.keep_images).
const MediaDir = "media"

// laterConfirm asks through the commands, which are built after the stage
// (they need the responder, which hears from the stage when the model
// refuses images).
type laterConfirm struct{ a *App }

func (l laterConfirm) Confirm(ctx context.Context, t *pipeline.Turn, question, yesLabel, noText string, yes func(ctx context.Context) (string, error)) error {
	return l.a.Commands.Confirm(ctx, t, question, yesLabel, noText, yes)
}

// describer has the chat model describe photos; a refusal of images is
// media.ErrNoVision.
type describer struct{ c *llm.Client }

func (d describer) Describe(ctx context.Context, jpeg []byte, caption string) (string, int, error) {
	text, tokens, err := d.c.Describe(ctx, jpeg, caption)
	if llm.IsImageRejected(err) {
		return "", 0, errors.Join(media.ErrNoVision, err)
	}
	return text, tokens, err
}
