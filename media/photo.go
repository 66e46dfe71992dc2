package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/gif"
	"image/jpeg"
	_ "image/png" // photos sent as documents are often PNG
	"strings"

	"golang.org/x/image/draw"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/sandbox"
)

// MaxSide is the long side images are scaled down to before a vision model
// sees them (what such models resize to anyway; it bounds the upload and the
// image tokens).
const MaxSide = 1568

// cannotSee is what the model reads for a photo nobody described.
const cannotSee = "📷 [the user sent a photo you cannot see]"

// photo has a vision model describe a photo, and makes the description
// (with the caption) the turn's text: "📷 Photo: a bottle of Barolo 2016 on
// a wooden table" — stored, searchable, answered like text. The model that
// answers also sees the photo itself (the turn's Image, scaled down to
// MaxSide).
func (s *Stage) photo(ctx context.Context, t *pipeline.Turn) (done bool, err error) {
	md := t.In.Media
	see := s.canSee()
	if !see {
		s.tellOnce(ctx, t)
	}
	if (!see && s.opts.Keep == nil) || md.Size > s.opts.MaxImage || md.Fetch == nil {
		t.In.Text = withCaption(cannotSee, t.In.Text)
		return false, nil
	}
	ctx2, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	data, err := md.Fetch(ctx2, s.opts.MaxImage)
	if err != nil {
		t.Logger().Warn("downloading a photo", "err", err)
		if !see || strings.TrimSpace(t.In.Text) != "" {
			// The caption can still be answered.
			t.In.Text = withCaption(cannotSee, t.In.Text)
			return false, nil
		}
		return true, reply(ctx, t, "I couldn't download that photo. Please try again.")
	}
	s.keep(t, data)
	if !see {
		t.In.Text = withCaption(cannotSee, t.In.Text)
		return false, nil
	}
	small, err := s.downscale(ctx2, data)
	switch {
	case errors.Is(err, errImageTooLarge):
		return true, s.refuse(ctx, t, "📷 (a photo too large to open)",
			"That image is too large for me to open "+strings.TrimPrefix(err.Error(), errImageTooLarge.Error()+" ")+
				". Send a smaller one. (Operator: media.max_image_pixels sets the limit.)")
	case errors.Is(err, sandbox.ErrBusy):
		t.Logger().Info("opening a photo", "err", err)
		return true, reply(ctx, t, "I'm looking at too many images right now: please send that one again in a minute.")
	case errors.Is(err, sandbox.ErrLimit):
		t.Logger().Info("opening a photo", "err", err)
		return true, s.refuse(ctx, t, "📷 (a photo I could not open)", "I couldn't open that image (it looks damaged or too complex).")
	case err != nil:
		var je *sandbox.JobError
		if errors.As(err, &je) {
			return true, reply(ctx, t, "I couldn't open that image ("+je.Msg+").")
		}
		t.Logger().Warn("opening a photo", "err", err)
		return true, reply(ctx, t, "I couldn't open that image. Please try again.")
	}
	desc, tokens, err := s.opts.Describer.Describe(ctx2, small, t.In.Text)
	s.count(ctx, t, "describing a photo", tokens)
	if errors.Is(err, ErrNoVision) && s.opts.Vision == VisionAuto {
		s.refused(err)
		s.tellOnce(ctx, t)
		t.In.Text = withCaption(cannotSee, t.In.Text)
		return false, nil
	}
	if err != nil {
		t.Logger().Error("describing a photo", "err", err)
		return true, reply(ctx, t, "I couldn't look at that photo (the model failed). Please try again in a moment.")
	}
	t.In.Text = withCaption("📷 Photo: "+desc, t.In.Text)
	if im, err := llm.NewImage(s.opts.Model, small); err == nil {
		t.In.Image = &pipeline.Image{JPEG: im.JPEG, Width: im.Width, Height: im.Height, Tokens: im.Tokens}
	}
	return false, nil
}

// ImagesRefused is told by the responder that the model refused the turn's
// images (chat.Vision): in auto mode the model is not sent photos again;
// the user is told once how to change that; the model reads that a photo
// came it cannot see, with the caption (or the description it made).
func (s *Stage) ImagesRefused(ctx context.Context, t *pipeline.Turn, err error) string {
	if s.opts.Vision == VisionAuto {
		s.refused(err)
	}
	s.tellOnce(ctx, t)
	if strings.HasPrefix(t.In.Text, "📷 Photo: ") {
		return t.In.Text // described: the description stands in
	}
	return withCaption(cannotSee, t.In.Text)
}

// refused remembers that the model refuses images (auto mode), and logs it
// the first time.
func (s *Stage) refused(err error) {
	s.mu.Lock()
	first := !s.noVision[s.opts.Model]
	if first && len(s.noVision) >= maxModels {
		clear(s.noVision)
	}
	s.noVision[s.opts.Model] = true
	s.mu.Unlock()
	if first {
		s.opts.Log.Warn("the model refused image input; photos are passed on as text from now on (set media.vision: off, or a vision model)",
			"model", s.opts.Model, "err", err)
	}
}

func (s *Stage) canSee() bool {
	if s.opts.Describer == nil || s.opts.Vision == VisionOff {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.Vision == VisionOn || !s.noVision[s.opts.Model]
}

// tellOnce tells a conversation once how photos can be seen.
func (s *Stage) tellOnce(ctx context.Context, t *pipeline.Turn) {
	s.mu.Lock()
	if s.told[t.In.Key] {
		s.mu.Unlock()
		return
	}
	if len(s.told) >= maxTold {
		s.told = map[pipeline.Key]bool{}
	}
	s.told[t.In.Key] = true
	s.mu.Unlock()
	_ = reply(ctx, t, "I can't see photos with the current model, so I only read their captions. "+
		"(Operator: a vision-capable llm.model, or media.vision, turns it on.)")
}

// Downscale decodes a JPEG, PNG or GIF and returns it as a JPEG whose long
// side is at most side pixels. It decodes whatever the image's header
// declares: the stage runs it in a sandbox worker, after a check of the
// image's size (Stage.downscale).
func Downscale(data []byte, side int) ([]byte, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not a JPEG, PNG or GIF image")
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width*cfg.Height > 100_000_000 {
		return nil, fmt.Errorf("an image of %d×%d pixels", cfg.Width, cfg.Height)
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("the image is damaged")
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w > side || h > side {
		if w >= h {
			w, h = side, max(1, h*side/w)
		} else {
			w, h = max(1, w*side/h), side
		}
		dst := image.NewRGBA(image.Rect(0, 0, w, h))
		draw.CatmullRom.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
		img = dst
	}
	var out bytes.Buffer
	if err := jpeg.Encode(&out, img, &jpeg.Options{Quality: 85}); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
