package whatsapp

import (
	"context"
	"fmt"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"

	"github.com/recallbot/recall/pipeline"
)

// mediaOf says what media m carries that Recall can hear, see or read —
// voice notes (PTT), audio, photos and documents — and the message part to
// download it from; nil for none (stickers, videos, locations… stay text
// only).
func mediaOf(m *waE2E.Message) (*pipeline.Media, whatsmeow.DownloadableMessage) {
	switch {
	case m.GetAudioMessage() != nil:
		x := m.GetAudioMessage()
		kind, name := pipeline.MediaAudio, "audio.ogg"
		if x.GetPTT() {
			kind, name = pipeline.MediaVoice, "voice.ogg"
		}
		return &pipeline.Media{Kind: kind, MIME: x.GetMimetype(), Size: int64(x.GetFileLength()),
			Duration: time.Duration(x.GetSeconds()) * time.Second, Name: name}, x
	case m.GetImageMessage() != nil:
		x := m.GetImageMessage()
		return &pipeline.Media{Kind: pipeline.MediaPhoto, MIME: x.GetMimetype(), Size: int64(x.GetFileLength()), Name: "photo.jpg"}, x
	case m.GetDocumentMessage() != nil:
		x := m.GetDocumentMessage()
		return &pipeline.Media{Kind: pipeline.MediaDocument, MIME: x.GetMimetype(), Size: int64(x.GetFileLength()), Name: x.GetFileName()}, x
	}
	return nil, nil
}

// fetcher downloads (and decrypts) a message's media through the client.
func fetcher(c Client, msg whatsmeow.DownloadableMessage, size int64) func(ctx context.Context, max int64) ([]byte, error) {
	return func(ctx context.Context, max int64) ([]byte, error) {
		if n := size; n > max {
			return nil, fmt.Errorf("the file is %d bytes, over the %d allowed", n, max)
		}
		data, err := c.Download(ctx, msg)
		if err != nil {
			return nil, fmt.Errorf("downloading from WhatsApp: %w", err)
		}
		if int64(len(data)) > max {
			return nil, fmt.Errorf("the file is over the %d bytes allowed", max)
		}
		return data, nil
	}
}
