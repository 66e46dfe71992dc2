package media

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/pipeline"
)

// voice transcribes a voice note, audio or video note into the turn's text:
// "🎤 0:14: what was said" (with the caption after it).
func (s *Stage) voice(ctx context.Context, t *pipeline.Turn) (done bool, err error) {
	md := t.In.Media
	mark := "🎤 " + clock(md.Duration)
	if md.Kind == pipeline.MediaAudio {
		mark = "🎧 " + clock(md.Duration)
	}
	what := map[pipeline.MediaKind]string{pipeline.MediaVoice: "voice note", pipeline.MediaAudio: "audio file", pipeline.MediaVideoNote: "video note"}[md.Kind]
	arrived := fmt.Sprintf("%s (a %s I could not listen to)", mark, what)
	switch {
	case s.opts.Transcriber == nil:
		return true, s.refuse(ctx, t, withCaption(arrived, t.In.Text),
			fmt.Sprintf("I can't listen to %ss yet: transcription is off. Please type your message. "+
				"(Operator: set media.transcription.model, e.g. whisper-1, to turn it on.)", what))
	case s.opts.MaxDuration > 0 && md.Duration > s.opts.MaxDuration:
		return true, s.refuse(ctx, t, withCaption(arrived, t.In.Text),
			fmt.Sprintf("That %s is %s long; I listen to at most %s. Please send a shorter one or type it. "+
				"(Operator: media.transcription.max_seconds sets the limit.)", what, clock(md.Duration), clock(s.opts.MaxDuration)))
	case md.Size > s.opts.MaxBytes:
		return true, s.refuse(ctx, t, withCaption(arrived, t.In.Text),
			fmt.Sprintf("That %s is too large for me (%d MB; at most %d MB). (Operator: media.transcription.max_bytes sets the limit.)",
				what, mb(md.Size), mb(s.opts.MaxBytes)))
	case md.Fetch == nil:
		return true, reply(ctx, t, fmt.Sprintf("I couldn't get that %s from the platform. Please try again or type it.", what))
	}
	ctx2, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	audio, err := md.Fetch(ctx2, s.opts.MaxBytes)
	if err != nil {
		t.Logger().Warn("downloading a voice message", "kind", md.Kind, "err", err)
		return true, reply(ctx, t, fmt.Sprintf("I couldn't download that %s. Please try again, or type it.", what))
	}
	name := md.Name
	if name == "" {
		name = "voice.ogg"
	}
	text, err := s.opts.Transcriber.Transcribe(ctx2, name, audio)
	if err != nil {
		t.Logger().Error("transcribing a voice message", "kind", md.Kind, "err", err)
		return true, reply(ctx, t, fmt.Sprintf("I couldn't transcribe that %s (the speech-to-text server failed). Please try again in a moment, or type it.", what))
	}
	text = strings.TrimSpace(text)
	s.count(ctx, t, "transcribing a voice message", llm.TranscriptionTokens(duration(md, len(audio)), text))
	if text == "" {
		return true, s.refuse(ctx, t, withCaption(fmt.Sprintf("%s (a %s with no words I could hear)", mark, what), t.In.Text),
			fmt.Sprintf("I couldn't hear any words in that %s.", what))
	}
	if s.opts.Heard {
		_ = reply(ctx, t, "🎤 heard: "+short(text, 300))
	}
	t.In.Text = withCaption(mark+": "+text, t.In.Text)
	return false, nil
}

// opusBytesPerSecond is how a voice note's length is guessed when the
// platform gives none: Telegram and WhatsApp voice notes are Opus at
// ~16 kbit/s.
const opusBytesPerSecond = 2000

// duration is a voice message's length: the platform's, else guessed from
// its size.
func duration(md *pipeline.Media, size int) time.Duration {
	if md.Duration > 0 {
		return md.Duration
	}
	return time.Duration(size) * time.Second / opusBytesPerSecond
}

func mb(n int64) int64 { return (n + 1<<20 - 1) >> 20 }

// short cuts s to n runes with an ellipsis.
func short(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
