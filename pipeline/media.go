package pipeline

import (
	"context"
	"time"
)

// MediaKind says what a message's media is.
type MediaKind string

// Media kinds.
const (
	MediaVoice     MediaKind = "voice"      // a voice note (Telegram voice, WhatsApp PTT)
	MediaAudio     MediaKind = "audio"      // an audio file
	MediaVideoNote MediaKind = "video_note" // Telegram's round video message
	MediaPhoto     MediaKind = "photo"
	MediaDocument  MediaKind = "document"
)

// Heard reports whether the media is listened to (transcribed).
func (k MediaKind) Heard() bool {
	return k == MediaVoice || k == MediaAudio || k == MediaVideoNote
}

// Media is what came with a message besides its text (Inbound.Text then
// holds the caption, possibly empty). The adapter says what it is; the
// bytes are fetched only when needed, through Fetch.
type Media struct {
	Kind     MediaKind
	MIME     string        // as the platform says, "" when unknown
	Name     string        // file name, when the platform gives one
	Size     int64         // bytes; 0 when unknown
	Duration time.Duration // voice, audio and video notes
	Ref      string        // the platform's reference to the file (Telegram file_id)
	Album    string        // the album (media group) it belongs to, "" for none
	// Fetch downloads the bytes, at most max of them (an error beyond);
	// set by the adapter, nil when the file cannot be fetched.
	Fetch func(ctx context.Context, max int64) ([]byte, error) `json:"-"`
}

// Image is a picture the model sees with a message's text (a photo the
// media stage scaled down): JPEG bytes, the size in pixels, and what it
// costs in prompt tokens with the configured model.
type Image struct {
	JPEG          []byte
	Width, Height int
	Tokens        int
}
