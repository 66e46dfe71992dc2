package llm

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// DescribePrompt asks a vision model for the one paragraph Recall stores
// in place of a photo.
const DescribePrompt = "Describe this image in one paragraph for someone who cannot see it, so it can be found again later: " +
	"what it shows, any text in it word for word, names, brands, numbers and places. Do not guess beyond what is visible."

// ImageTokens is what an image is counted as when the server reports no
// usage: OpenAI's high-detail rate for a 1,568 × 1,045 photo (85 + 4 × 170).
const ImageTokens = 765

// Describe asks the model what a JPEG image shows (one paragraph), with the
// user's caption as context, and returns the tokens the call cost (the
// server's count, else an estimate). A model or server that takes no images
// answers an error IsImageRejected recognizes.
func (c *Client) Describe(ctx context.Context, jpeg []byte, caption string) (string, int, error) {
	text := DescribePrompt
	if strings.TrimSpace(caption) != "" {
		text += "\nThe user's caption: " + caption
	}
	req := c.request(c.model, summaryTemperature, nil, false)
	req.Messages = []openai.ChatCompletionMessage{{Role: RoleUser, MultiContent: []openai.ChatMessagePart{
		{Type: openai.ChatMessagePartTypeText, Text: text},
		{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{
			URL: "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(jpeg), Detail: openai.ImageURLDetailAuto}},
	}}}
	ctx, turnEnd, _, done := c.turn(ctx)
	defer done()
	rep, err := c.complete(ctx, turnEnd, req)
	if err != nil {
		return "", 0, err
	}
	tokens := rep.PromptTokens + rep.CompletionTokens
	if tokens == 0 {
		tokens = ImageTokens + (len(text)+len(rep.Text))/4
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
