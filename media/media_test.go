package media_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/media"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

type sent struct {
	mu   sync.Mutex
	msgs []string
}

func (s *sent) Send(_ context.Context, out pipeline.Outbound) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, out.Text)
	return "", nil
}

type recorder struct{ msgs []memory.Message }

func (r *recorder) Append(_ context.Context, msgs ...memory.Message) error {
	r.msgs = append(r.msgs, msgs...)
	return nil
}

// run passes in through the stage; it returns what reached the responder
// (nil when nothing did) and what the user was sent.
func run(t *testing.T, st *media.Stage, in pipeline.Inbound) (*pipeline.Inbound, []string) {
	t.Helper()
	var got *pipeline.Inbound
	h := st.Middleware()(pipeline.HandlerFunc(func(_ context.Context, t *pipeline.Turn) error {
		in := t.In
		got = &in
		return nil
	}))
	out := &sent{}
	if err := h.Handle(context.Background(), &pipeline.Turn{In: in, Out: out}); err != nil {
		t.Fatal(err)
	}
	return got, out.msgs
}

func bytesOf(b []byte) func(context.Context, int64) ([]byte, error) {
	return func(_ context.Context, max int64) ([]byte, error) {
		if int64(len(b)) > max {
			return nil, errors.New("too large")
		}
		return b, nil
	}
}

func photoJPEG(t *testing.T, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		for y := range h {
			img.Set(x, y, color.RGBA{R: uint8(x), G: 40, B: uint8(y), A: 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

var key = pipeline.Key{Channel: "telegram", Chat: "7"}

// describer is app's: the chat model describes, a refusal is ErrNoVision.
type describer struct{ c *llm.Client }

func (d describer) Describe(ctx context.Context, jpeg []byte, caption string) (string, int, error) {
	s, tokens, err := d.c.Describe(ctx, jpeg, caption)
	if llm.IsImageRejected(err) {
		return "", 0, errors.Join(media.ErrNoVision, err)
	}
	return s, tokens, err
}

func TestPhotoIsDescribedAndTheDescriptionIsTheText(t *testing.T) {
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if r.Images != 1 || !strings.Contains(r.Messages[0].Content, "caption: the wine from Friday") {
			return llmtest.Response{Status: 400, Text: "expected one image and the caption"}
		}
		return llmtest.Response{Text: "A bottle of Barolo 2016 on a wooden table.", PromptTokens: 800, CompletionTokens: 40}
	})
	use := &usage{}
	st := media.New(nil, media.Options{Describer: describer{llm.New(llm.Options{BaseURL: srv.URL, Model: "gpt-4o", MaxRetries: -1})}, Usage: use})
	pic := photoJPEG(t, 1800, 1200)
	got, sent := run(t, st, pipeline.Inbound{Key: key, SenderID: "7", MessageID: "1", Text: "the wine from Friday",
		Media: &pipeline.Media{Kind: pipeline.MediaPhoto, Size: int64(len(pic)), Fetch: bytesOf(pic)}})
	if got == nil || got.Text != "📷 Photo: A bottle of Barolo 2016 on a wooden table.\nthe wine from Friday" || got.Media != nil || len(sent) != 0 {
		t.Fatalf("reached the model: %+v; sent %q", got, sent)
	}
	// The description's tokens count in the sender's daily quota.
	if use.user != "telegram:7" || use.tokens != 840 {
		t.Fatalf("quota heard %q %d, want telegram:7 840", use.user, use.tokens)
	}
}

func TestModelWithoutVisionIsToldOfAPhotoItCannotSee(t *testing.T) {
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		return llmtest.Response{Status: 400, Text: "Invalid content type. image_url is only supported by certain models."}
	})
	st := media.New(nil, media.Options{Describer: describer{llm.New(llm.Options{BaseURL: srv.URL, Model: "gpt-3.5-turbo", MaxRetries: -1})}})
	pic := photoJPEG(t, 10, 10)
	in := pipeline.Inbound{Key: key, MessageID: "1", Text: "look",
		Media: &pipeline.Media{Kind: pipeline.MediaPhoto, Fetch: bytesOf(pic)}}
	got, sent := run(t, st, in)
	if got == nil || got.Text != "📷 [the user sent a photo you cannot see]\nlook" || len(sent) != 1 || !strings.Contains(sent[0], "can't see photos") {
		t.Fatalf("got %+v, sent %q", got, sent)
	}
	in.MessageID = "2"
	if _, sent := run(t, st, in); len(sent) != 0 {
		t.Fatalf("told twice: %q", sent)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("the model that refused images was asked %d times", n)
	}
}

func TestDownscale(t *testing.T) {
	out, err := media.Downscale(photoJPEG(t, 3200, 800), media.MaxSide)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(out))
	if err != nil || cfg.Width != media.MaxSide || cfg.Height != 392 {
		t.Fatalf("%dx%d %v", cfg.Width, cfg.Height, err)
	}
	if _, err := media.Downscale([]byte("not an image"), 100); err == nil {
		t.Fatal("garbage was accepted")
	}
}

func TestDocuments(t *testing.T) {
	rec := &recorder{}
	st := media.New(rec, media.Options{MaxDocument: 64})
	doc := func(name, mime string, data []byte) pipeline.Inbound {
		return pipeline.Inbound{Key: key, MessageID: name, Time: time.Now(),
			Media: &pipeline.Media{Kind: pipeline.MediaDocument, Name: name, MIME: mime, Size: int64(len(data)), Fetch: bytesOf(data)}}
	}
	got, _ := run(t, st, doc("lease.md", "", []byte("# Lease\nRent: 900 EUR")))
	if got == nil || got.Text != "📄 lease.md:\n# Lease\nRent: 900 EUR" {
		t.Fatalf("markdown: %+v", got)
	}
	for _, tc := range []struct {
		in   pipeline.Inbound
		want string
	}{
		{doc("big.txt", "text/plain", bytes.Repeat([]byte("x"), 100)), "too large"},
		{doc("photo.heic", "image/heic", []byte{1, 2}), "I can read text files"},
		{doc("fake.txt", "text/plain", []byte{0xff, 0, 1}), "not a text file"},
	} {
		got, sent := run(t, st, tc.in)
		if got != nil || len(sent) != 1 || !strings.Contains(sent[0], tc.want) {
			t.Errorf("%s: reached the model %v, sent %q", tc.in.Media.Name, got, sent)
		}
	}
	// What was refused is in the history as what it was, with the answer.
	if len(rec.msgs) != 6 || !strings.HasPrefix(rec.msgs[0].Text, "📄 big.txt (too large") || rec.msgs[1].Role != memory.RoleAssistant {
		t.Fatalf("recorded %+v", rec.msgs)
	}
}

func TestVoiceOverTheLimitsIsNotFetched(t *testing.T) {
	fetched := false
	st := media.New(&recorder{}, media.Options{Transcriber: transcriberFunc(func() (string, error) { return "x", nil }), MaxDuration: time.Minute, MaxBytes: 1000})
	for _, md := range []*pipeline.Media{
		{Kind: pipeline.MediaVoice, Duration: 2 * time.Minute},
		{Kind: pipeline.MediaVoice, Duration: time.Second, Size: 5000},
	} {
		md.Fetch = func(context.Context, int64) ([]byte, error) { fetched = true; return nil, nil }
		got, sent := run(t, st, pipeline.Inbound{Key: key, MessageID: "v", Media: md})
		if got != nil || len(sent) != 1 || fetched {
			t.Fatalf("over the limits: reached %v, sent %q, fetched %v", got, sent, fetched)
		}
	}
}

type transcriberFunc func() (string, error)

func (f transcriberFunc) Transcribe(context.Context, string, []byte) (string, error) { return f() }

type usage struct {
	user   string
	tokens int
}

func (u *usage) Add(_ context.Context, user string, tokens int) error {
	u.user, u.tokens = user, u.tokens+tokens
	return nil
}

// A transcription counts in the sender's daily token quota: 10 tokens a
// second of speech (the platform's duration, else guessed from the size of
// the Opus file) plus the transcript.
func TestTranscriptionCountsInTheQuota(t *testing.T) {
	const said = "Remind me to call the plumber tomorrow." // 39 chars: 10 tokens
	for _, tc := range []struct {
		dur  time.Duration
		size int
		want int
	}{
		{14 * time.Second, 100, 140 + 10},
		{0, 6000, 30 + 10}, // 6 KB of Opus at 16 kbit/s: 3 s
	} {
		use := &usage{}
		st := media.New(&recorder{}, media.Options{Transcriber: transcriberFunc(func() (string, error) { return said, nil }), Usage: use})
		audio := bytes.Repeat([]byte{1}, tc.size)
		got, _ := run(t, st, pipeline.Inbound{Key: key, SenderID: "7", MessageID: "v",
			Media: &pipeline.Media{Kind: pipeline.MediaVoice, Duration: tc.dur, Fetch: bytesOf(audio)}})
		if got == nil || use.user != "telegram:7" || use.tokens != tc.want {
			t.Errorf("%v, %d bytes: the quota heard %q %d tokens, want %d", tc.dur, tc.size, use.user, use.tokens, tc.want)
		}
	}
}
