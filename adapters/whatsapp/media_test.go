package whatsapp

import (
	"os"
	"strings"
	"testing"
	"time"

	"go.mau.fi/whatsmeow/proto/waE2E"
	"google.golang.org/protobuf/proto"

	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/llm/llmtest"
)

// A WhatsApp voice note (PTT) is downloaded through the client, transcribed
// and answered like text; the transcript is what is stored.
func TestVoiceNoteIsTranscribed(t *testing.T) {
	voice, err := os.ReadFile("../../media/testdata/voice.ogg")
	if err != nil {
		t.Fatal(err)
	}
	var srv *llmtest.Server
	s := newStack(t, stackOptions{
		llm: func(r llmtest.Request) llmtest.Response {
			return llmtest.Response{Text: "echo: " + r.Messages[len(r.Messages)-1].Content}
		},
		config: func(c *config.Config) {
			c.Media.Transcription.Model = "whisper-1"
			c.Media.Transcription.ShowHeard = false
		},
	})
	srv = s.llm
	srv.SetTranscriber(func(tr llmtest.Transcription) (string, int) {
		if string(tr.Audio) != string(voice) {
			return "not the voice note", 400
		}
		return "Buy oat milk on the way home.", 0
	})
	s.wa.addMedia("/v/t62.7117-24/voice", voice)
	ev := msgEvent(pnJID, pnJID, s.id(), "")
	ev.Info.Timestamp = time.Now()
	ev.Message = &waE2E.Message{AudioMessage: &waE2E.AudioMessage{PTT: proto.Bool(true), Seconds: proto.Uint32(4),
		Mimetype: proto.String("audio/ogg; codecs=opus"), FileLength: proto.Uint64(uint64(len(voice))),
		DirectPath: proto.String("/v/t62.7117-24/voice")}}
	if !s.wa.deliver(ev) {
		t.Fatal("the voice note was not acknowledged")
	}
	got := s.waitText(pnJID, "echo: 🎤 0:04: Buy oat milk on the way home.")
	if !strings.Contains(got.Text(), "oat milk") {
		t.Fatalf("answer = %q", got.Text())
	}
	if stored, answered := s.lookup(dmKey(pnJID), ev.Info.ID); !stored || !answered {
		t.Fatalf("stored=%v answered=%v", stored, answered)
	}
}
