package chatexport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/media/mediatest"
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// A result.json of millions of empty objects is refused once MaxMessages
// entries are counted, without reading (let alone decoding) the rest.
func TestTelegramBombStopsAtTheCap(t *testing.T) {
	bomb := mediatest.BombJSON(MaxMessages * 3 / 2)
	r := &countingReader{r: bytes.NewReader(bomb)}
	_, err := ParseTelegramReader(t.Context(), r)
	if err == nil || !strings.Contains(err.Error(), "more than 1000000 messages") {
		t.Fatalf("err = %v", err)
	}
	if r.n > len(bomb)*3/4 {
		t.Fatalf("read %d of %d bytes before stopping", r.n, len(bomb))
	}
}

// A zip whose chat text inflates hundreds of times is refused from its
// declared sizes, before it is inflated.
func TestWhatsAppZipBombIsRefused(t *testing.T) {
	bomb := mediatest.BombZip(16 << 20)
	start := time.Now()
	_, err := ParseWhatsAppZip(bomb, time.UTC)
	if err == nil || !strings.Contains(err.Error(), "inflates") {
		t.Fatalf("err = %v", err)
	}
	t.Logf("%d KiB zip refused in %s", len(bomb)>>10, time.Since(start))
}

// Parsing stops when its context ends (bot import on SIGTERM).
func TestParsingStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	text := strings.Repeat("05/03/2024, 10:00 - Anna: hello\n", 70000)
	if _, err := ParseWhatsAppReader(ctx, strings.NewReader(text), time.UTC); !errors.Is(err, context.Canceled) {
		t.Fatalf("WhatsApp: err = %v", err)
	}
	if _, err := ParseTelegramReader(ctx, bytes.NewReader(mediatest.BombJSON(10000))); !errors.Is(err, context.Canceled) {
		t.Fatalf("Telegram: err = %v", err)
	}
}

// A line longer than maxLine is refused, not held.
func TestWhatsAppLongLine(t *testing.T) {
	text := "05/03/2024, 10:00 - Anna: " + strings.Repeat("a", maxLine+10) + "\n"
	if _, err := ParseWhatsApp(text, time.UTC); !errors.Is(err, ErrNotExport) {
		t.Fatalf("err = %v", err)
	}
}
