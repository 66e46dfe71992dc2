package media

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"

	"github.com/recallbot/recall/sandbox"
)

// The jobs of outside files this package hands to sandbox workers: the
// parsers are not ours (a PDF reader, image decoders), and a hostile file
// can make them loop or ask for gigabytes.
const (
	jobPDFText   = "media.pdf-text"
	jobDownscale = "media.downscale"
)

// Jobs are the parsers a worker runs for this package: the program calls
// sandbox.Serve(media.Jobs()) first thing in main.
func Jobs() sandbox.Jobs {
	return sandbox.Jobs{jobPDFText: pdfJob, jobDownscale: downscaleJob}
}

// pdfResult is what the PDF job writes back.
type pdfResult struct {
	Text   string `json:"text"`
	Pages  int    `json:"pages"`
	NoText bool   `json:"no_text,omitempty"`
}

// pdfJob extracts a PDF's text (pdfText) in a worker.
func pdfJob(data []byte) ([]byte, error) {
	text, pages, err := pdfText(data)
	if errors.Is(err, errNoText) {
		return json.Marshal(pdfResult{Pages: pages, NoText: true})
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(pdfResult{Text: text, Pages: pages})
}

// downscaleJob decodes an image and writes it back as a JPEG of at most
// MaxSide a side (Downscale) in a worker.
func downscaleJob(data []byte) ([]byte, error) { return Downscale(data, MaxSide) }

// readPDF extracts a PDF's text in a worker of the stage's sandbox.
func (s *Stage) readPDF(ctx context.Context, data []byte) (text string, pages int, err error) {
	out, err := s.opts.Sandbox.Run(ctx, jobPDFText, data, 0)
	if err != nil {
		return "", 0, fmt.Errorf("extracting a PDF's text: %w", err)
	}
	var r pdfResult
	if err := json.Unmarshal(out, &r); err != nil {
		return "", 0, fmt.Errorf("reading what the PDF worker wrote: %w", err)
	}
	if r.NoText {
		return "", r.Pages, errNoText
	}
	return r.Text, r.Pages, nil
}

// errImageTooLarge is an image over Options.MaxImagePixels, or whose
// decoding needs more memory than the workers have.
var errImageTooLarge = errors.New("the image is too large")

// downscale turns a photo into the JPEG a vision model sees, in a worker:
// its size is read from its header first (image.DecodeConfig) and an image
// over Options.MaxImagePixels is refused undecoded; the worker gets the
// memory the decoding needs (decodeBytes), waiting for it when other
// images take it.
func (s *Stage) downscale(ctx context.Context, data []byte) ([]byte, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not a JPEG, PNG or GIF image")
	}
	px := int64(cfg.Width) * int64(cfg.Height)
	if cfg.Width <= 0 || cfg.Height <= 0 || px > s.opts.MaxImagePixels {
		return nil, fmt.Errorf("%w (%d×%d pixels; at most %d million)", errImageTooLarge, cfg.Width, cfg.Height, s.opts.MaxImagePixels/1_000_000)
	}
	out, err := s.opts.Sandbox.Run(ctx, jobDownscale, data, decodeBytes(cfg, int64(len(data))))
	if errors.Is(err, sandbox.ErrTooBig) {
		return nil, fmt.Errorf("%w (%d×%d pixels: too much memory to open)", errImageTooLarge, cfg.Width, cfg.Height)
	}
	return out, err
}

// decodeBytes estimates the memory decoding and scaling an image takes:
// the decoded pixels at their depth, the file, the scaled copy and its
// JPEG, with room for the garbage collector (the worker's heap may reach
// twice what is live before it runs).
func decodeBytes(cfg image.Config, file int64) int64 {
	px := int64(cfg.Width) * int64(cfg.Height)
	var depth int64
	switch cfg.ColorModel {
	case color.GrayModel, color.AlphaModel:
		depth = 1
	case color.Gray16Model, color.Alpha16Model:
		depth = 2
	case color.RGBA64Model, color.NRGBA64Model:
		depth = 8
	case color.YCbCrModel:
		depth = 3
	default:
		if _, ok := cfg.ColorModel.(color.Palette); ok {
			depth = 1
		} else {
			depth = 4
		}
	}
	const scaled = MaxSide * MaxSide * 4 * 2
	return 2*(px*depth+file+scaled) + 32<<20
}
