package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/pipeline"
)

// mediaOf says what media m carries that Recall can hear, see or read:
// voice notes, audio, round video notes, photos (the largest size) and
// documents. nil for none (stickers, polls… stay "text only").
func mediaOf(m *models.Message) *pipeline.Media {
	sec := func(n int) time.Duration { return time.Duration(n) * time.Second }
	var md *pipeline.Media
	switch {
	case m.Voice != nil:
		md = &pipeline.Media{Kind: pipeline.MediaVoice, MIME: m.Voice.MimeType, Size: m.Voice.FileSize, Duration: sec(m.Voice.Duration), Ref: m.Voice.FileID, Name: "voice.ogg"}
	case m.Audio != nil:
		md = &pipeline.Media{Kind: pipeline.MediaAudio, MIME: m.Audio.MimeType, Size: m.Audio.FileSize, Duration: sec(m.Audio.Duration), Ref: m.Audio.FileID, Name: m.Audio.FileName}
	case m.VideoNote != nil:
		md = &pipeline.Media{Kind: pipeline.MediaVideoNote, MIME: "video/mp4", Size: int64(m.VideoNote.FileSize), Duration: sec(m.VideoNote.Duration), Ref: m.VideoNote.FileID, Name: "video_note.mp4"}
	case len(m.Photo) > 0:
		p := m.Photo[len(m.Photo)-1] // sizes grow: the last is the largest
		md = &pipeline.Media{Kind: pipeline.MediaPhoto, MIME: "image/jpeg", Size: int64(p.FileSize), Ref: p.FileID, Name: "photo.jpg"}
	case m.Document != nil:
		md = &pipeline.Media{Kind: pipeline.MediaDocument, MIME: m.Document.MimeType, Size: m.Document.FileSize, Ref: m.Document.FileID, Name: m.Document.FileName}
	default:
		return nil
	}
	md.Album = m.MediaGroupID
	return md
}

// fetcher downloads a file users sent: getFile, then the file's URL on the
// same Bot API server (telegram.api_url; a self-hosted server lifts the
// cloud's 20 MB download limit).
func fetcher(b *bot.Bot, hc *http.Client, token, ref string) func(ctx context.Context, max int64) ([]byte, error) {
	return func(ctx context.Context, max int64) ([]byte, error) {
		f, err := b.GetFile(ctx, &bot.GetFileParams{FileID: ref})
		if err != nil {
			return nil, fmt.Errorf("asking Telegram for the file: %w", err)
		}
		if f.FileSize > 0 && f.FileSize > max {
			return nil, fmt.Errorf("the file is %d bytes, over the %d allowed", f.FileSize, max)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.FileDownloadLink(f), nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("downloading the file: %w", errors.New(strings.ReplaceAll(err.Error(), token, "<token>")))
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("downloading the file: HTTP %d", resp.StatusCode)
		}
		// Sized once when Telegram says the size: io.ReadAll's doubling
		// would hold up to twice the file at once.
		var buf bytes.Buffer
		if f.FileSize > 0 {
			buf.Grow(int(f.FileSize) + bytes.MinRead)
		}
		if _, err := buf.ReadFrom(io.LimitReader(resp.Body, max+1)); err != nil {
			return nil, fmt.Errorf("downloading the file: %w", err)
		}
		if int64(buf.Len()) > max {
			return nil, fmt.Errorf("the file is over the %d bytes allowed", max)
		}
		return buf.Bytes(), nil
	}
}
