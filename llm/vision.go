package llm

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"image"
	_ "image/jpeg" // images are sent as JPEG
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Image is a picture a message shows the model: JPEG bytes, its size in
// pixels, and what it costs in prompt tokens (ImageTokens).
type Image struct {
	JPEG          []byte
	Width, Height int
	Tokens        int
}

// NewImage reads a JPEG's size and counts its tokens for model.
func NewImage(model string, jpeg []byte) (Image, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(jpeg))
	if err != nil {
		return Image{}, err
	}
	return Image{JPEG: jpeg, Width: cfg.Width, Height: cfg.Height, Tokens: ImageTokens(model, cfg.Width, cfg.Height)}, nil
}

// dataURL is the image inline, as OpenAI-compatible servers take it.
func (im Image) dataURL() string {
	return "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(im.JPEG)
}

// imageParts is a user message's content as OpenAI's content array: the
// text, then the images.
func imageParts(text string, images []Image) []openai.ChatMessagePart {
	parts := make([]openai.ChatMessagePart, 0, 1+len(images))
	if text != "" {
		parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: text})
	}
	for _, im := range images {
		parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL,
			ImageURL: &openai.ChatMessageImageURL{URL: im.dataURL(), Detail: openai.ImageURLDetailAuto}})
	}
	return parts
}

// ImageTokens is what an image of w×h pixels costs in prompt tokens with
// model, by the provider's published rules:
//
//   - OpenAI (gpt-*, o1/o3/o4, chatgpt-*), high detail: the image is fit in
//     2048×2048, then its short side scaled to 768; it costs 85 + 170 per
//     512-px tile (a 1024×1024 image: 4 tiles, 765 tokens; a 1568×1045
//     photo: 1152×768, 6 tiles, 1,105 tokens).
//   - Anthropic (claude-*): w×h/750, at most 1,600.
//   - Google (gemini-*): 258 per 768×768 tile (258 for an image whose
//     sides are both ≤ 384 px).
//   - Any other model (Ollama, vLLM, llama.cpp: llava, qwen-vl, gemma…):
//     no rule is published; we count OpenAI's formula as the estimate
//     (local models spend between 256 and ~1,500 tokens on an image).
func ImageTokens(model string, w, h int) int {
	if w <= 0 || h <= 0 {
		return 0
	}
	m := strings.ToLower(model)
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:] // openrouter's "anthropic/claude-…"
	}
	switch {
	case strings.HasPrefix(m, "claude"):
		return min(1600, max(1, w*h/750))
	case strings.HasPrefix(m, "gemini"):
		if w <= 384 && h <= 384 {
			return 258
		}
		return 258 * ceilDiv(w, 768) * ceilDiv(h, 768)
	}
	return openAITiles(w, h)
}

// openAITiles is OpenAI's high-detail image cost: 85 + 170 per 512-px tile
// of the image fit in 2048×2048 with its short side at most 768.
func openAITiles(w, h int) int {
	fw, fh := float64(w), float64(h)
	if long := max(fw, fh); long > 2048 {
		fw, fh = fw*2048/long, fh*2048/long
	}
	if short := min(fw, fh); short > 768 {
		fw, fh = fw*768/short, fh*768/short
	}
	return 85 + 170*ceilDiv(int(fw+0.5), 512)*ceilDiv(int(fh+0.5), 512)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// DescribePrompt asks a vision model for the one paragraph Recall stores
// in place of a photo.
const DescribePrompt = "Describe this image in one paragraph for someone who cannot see it, so it can be found again later: " +
	"what it shows, any text in it word for word, names, brands, numbers and places. Do not guess beyond what is visible."

// Describe asks the model what a JPEG image shows (one paragraph), with the
// user's caption as context, and returns the tokens the call cost (the
// server's count, else the image's tokens and the texts'). A model or server
// that takes no images answers an error IsImageRejected recognizes.
func (c *Client) Describe(ctx context.Context, jpeg []byte, caption string) (string, int, error) {
	text := DescribePrompt
	if strings.TrimSpace(caption) != "" {
		text += "\nThe user's caption: " + caption
	}
	im, err := NewImage(c.model, jpeg)
	if err != nil {
		return "", 0, err
	}
	req := c.request(c.model, summaryTemperature, []Message{{Role: RoleUser, Content: text, Images: []Image{im}}}, false)
	ctx, turnEnd, _, done := c.turn(ctx)
	defer done()
	rep, err := c.complete(ctx, turnEnd, req)
	if err != nil {
		return "", 0, err
	}
	tokens := rep.PromptTokens + rep.CompletionTokens
	if tokens == 0 {
		tokens = im.Tokens + (len(text)+len(rep.Text))/4
	}
	return strings.TrimSpace(rep.Text), tokens, nil
}

// IsImageRejected reports whether err is a server refusing image input
// (a model without vision).
func IsImageRejected(err error) bool {
	var st *StatusError
	if !errors.As(err, &st) || (st.Code != http.StatusBadRequest && st.Code != http.StatusUnprocessableEntity && st.Code != http.StatusNotImplemented) {
		return false
	}
	m := strings.ToLower(st.Message)
	for _, w := range []string{"image", "vision", "multimodal", "image_url", "content must be a string"} {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
}
