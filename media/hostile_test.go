package media_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallbot/recall/media"
	"github.com/recallbot/recall/media/mediatest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/sandbox"
)

// worker is this test binary re-executed as the stage's sandbox worker.
var worker *sandbox.Exec

func TestMain(m *testing.M) {
	worker = sandbox.Serve(media.Jobs())
	os.Exit(m.Run())
}

func pdfIn(name string, data []byte) pipeline.Inbound {
	return pipeline.Inbound{Key: key, MessageID: name, Time: time.Now(),
		Media: &pipeline.Media{Kind: pipeline.MediaDocument, Name: name, MIME: "application/pdf", Size: int64(len(data)), Fetch: bytesOf(data)}}
}

// A PDF whose cross-reference table points back at itself (the reader
// loops), and one whose page inflates to 160 MiB of text, are stopped in
// their worker and get a clear answer; a good PDF is read in a worker too.
func TestHostilePDFsAreStopped(t *testing.T) {
	pool := sandbox.NewPool(worker, sandbox.Limits{CPU: time.Second, Timeout: 20 * time.Second, Memory: 256 << 20})
	st := media.New(&recorder{}, media.Options{Sandbox: pool})
	got, sent := run(t, st, pdfIn("ok.pdf", mediatest.TextPDF("Rent is due on the first")))
	if got == nil || !strings.Contains(got.Text, "Rent is due on the first") {
		t.Fatalf("a good PDF: reached the model %+v, sent %q", got, sent)
	}
	for name, data := range map[string][]byte{"loop.pdf": mediatest.LoopPDF(), "bomb.pdf": mediatest.BombPDF(160 << 20)} {
		start := time.Now()
		got, sent := run(t, st, pdfIn(name, data))
		if got != nil || len(sent) != 1 || !strings.Contains(sent[0], "I couldn't read that PDF (it looks damaged or too complex)") {
			t.Errorf("%s (%d bytes): reached the model %+v, sent %q", name, len(data), got, sent)
		}
		t.Logf("%s (%d bytes) answered in %s", name, len(data), time.Since(start).Round(time.Millisecond))
	}
}

// countingDescriber describes every image as a cat, counting the calls.
type countingDescriber struct{ calls atomic.Int32 }

func (d *countingDescriber) Describe(context.Context, []byte, string) (string, int, error) {
	d.calls.Add(1)
	return "a cat", 1, nil
}

// An image over media.max_image_pixels is refused from its header, never
// decoded; one under it whose decoding needs more memory than the workers
// share is refused too; a normal photo is seen. (The limits are a tenth of
// the defaults: the files stay quick to make.)
func TestImageBombsAreRefusedUndecoded(t *testing.T) {
	pool := sandbox.NewPool(worker, sandbox.Limits{Memory: 96 << 20})
	d := &countingDescriber{}
	st := media.New(&recorder{}, media.Options{Describer: d, Vision: media.VisionOn, Sandbox: pool, MaxImagePixels: 4_000_000})
	photo := func(data []byte) pipeline.Inbound {
		return pipeline.Inbound{Key: key, MessageID: "p", Time: time.Now(),
			Media: &pipeline.Media{Kind: pipeline.MediaPhoto, Size: int64(len(data)), Fetch: bytesOf(data)}}
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"2500×2000", mediatest.BombPNG(2500, 2000, false), "too large for me to open (2500×2000 pixels; at most 4 million)"},
		{"1900×1900 16-bit", mediatest.BombPNG(1900, 1900, true), "too large for me to open (1900×1900 pixels: too much memory to open)"},
	} {
		got, sent := run(t, st, photo(tc.data))
		if got != nil || len(sent) != 1 || !strings.Contains(sent[0], tc.want) {
			t.Errorf("%s: reached the model %+v, sent %q", tc.name, got, sent)
		}
	}
	if n := d.calls.Load(); n != 0 {
		t.Fatalf("the model was asked to describe %d refused images", n)
	}
	got, sent := run(t, st, photo(mediatest.BombPNG(2000, 1000, false)))
	if got == nil || !strings.HasPrefix(got.Text, "📷 Photo: a cat") || got.Image == nil || got.Image.Width != media.MaxSide {
		t.Fatalf("a normal photo: reached the model %+v, sent %q", got, sent)
	}
}

// noConfirm is a Confirmer the test must not reach.
type noConfirm struct{ t *testing.T }

func (c noConfirm) Confirm(context.Context, *pipeline.Turn, string, string, string, func(context.Context) (string, error)) error {
	c.t.Error("asked to confirm an import")
	return nil
}

// A chat export larger than what is read is refused from the size the
// platform gives, before a byte is downloaded.
func TestLargeChatExportIsRefusedBeforeItsDownload(t *testing.T) {
	var fetched atomic.Int32
	fetch := func(context.Context, int64) ([]byte, error) { fetched.Add(1); return nil, context.Canceled }
	st := media.New(&recorder{}, media.Options{Imports: &media.Imports{Confirm: noConfirm{t}, Store: importer{}}})
	got, sent := run(t, st, pipeline.Inbound{Key: key, MessageID: "r", Time: time.Now(),
		Media: &pipeline.Media{Kind: pipeline.MediaDocument, Name: "result.json", MIME: "application/json", Size: 60 << 20, Fetch: fetch}})
	if got != nil || len(sent) != 1 || !strings.Contains(sent[0], "too large for me to import here (60 MB; at most 20 MB)") {
		t.Fatalf("reached the model %+v, sent %q", got, sent)
	}
	if n := fetched.Load(); n != 0 {
		t.Fatalf("downloaded %d times", n)
	}
}

// importer is an Importer the test must not reach.
type importer struct{}

func (importer) Import(context.Context, memory.Export) (memory.ImportReport, error) {
	return memory.ImportReport{}, errors.New("not expected")
}
