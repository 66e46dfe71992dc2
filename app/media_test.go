package app

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/summary"
)

// testJPEG is a w×h photo made by the test.
func testJPEG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		for y := range h {
			img.Set(x, y, color.RGBA{R: uint8(x), G: 90, B: uint8(y), A: 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func photoIn(id, caption string, pic []byte) pipeline.Inbound {
	return pipeline.Inbound{Key: pipeline.Key{Channel: "telegram", Chat: "42"}, SenderID: "42", SenderName: "Ann",
		MessageID: id, Text: caption, Time: time.Now(),
		Media: &pipeline.Media{Kind: pipeline.MediaPhoto, MIME: "image/jpeg", Size: int64(len(pic)),
			Fetch: func(_ context.Context, max int64) ([]byte, error) { return pic, nil }}}
}

// answering returns the calls that answered (not the descriptions).
func answering(reqs []llmtest.Request) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range notSummaries(reqs) {
		if !strings.HasPrefix(r.Messages[0].Content, llm.DescribePrompt) {
			out = append(out, r)
		}
	}
	return out
}

// notSummaries leaves out the requests of the background summaries (the
// test config summarizes every two turns, at a time of its own).
func notSummaries(reqs []llmtest.Request) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range reqs {
		if r.Messages[0].Content != summary.Instructions {
			out = append(out, r)
		}
	}
	return out
}

func newMediaApp(t *testing.T, srv *llmtest.Server, edit func(*config.Config)) (*App, *sender) {
	t.Helper()
	cfg := testConfig(t, srv)
	cfg.LLM.Model = "gpt-4o"
	if edit != nil {
		edit(&cfg)
	}
	a, err := New(t.Context(), cfg, Parts{LogWriter: discard{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a, &sender{}
}

// A photo reaches the model that answers as an image part (a JPEG scaled
// to 1,568 px on its long side) with the caption as text; its description
// is what is stored; its tokens count in the budget and the daily quota.
func TestPhotoReachesTheAnsweringModelAsAnImage(t *testing.T) {
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if strings.HasPrefix(r.Messages[0].Content, llm.DescribePrompt) {
			return llmtest.Response{Text: "A bottle of Barolo 2016 on a wooden table."}
		}
		return llmtest.Response{Text: "A fine Barolo!"}
	})
	a, out := newMediaApp(t, srv, nil)
	in := photoIn("1", "the wine from Friday", testJPEG(t, 1700, 100))
	if err := a.Handler.Handle(t.Context(), &pipeline.Turn{In: in, Out: out}); err != nil {
		t.Fatal(err)
	}
	ans := answering(srv.Requests())
	if len(ans) != 1 || ans[0].Images != 1 {
		t.Fatalf("answering calls %d, images in it %v", len(ans), ans)
	}
	last := ans[0].Messages[len(ans[0].Messages)-1]
	if len(last.Images) != 1 || !strings.Contains(last.Content, "the wine from Friday") {
		t.Fatalf("the current message: %q with %d images", last.Content, len(last.Images))
	}
	im := last.Images[0]
	if _, err := jpeg.Decode(bytes.NewReader(im.JPEG)); err != nil || im.Width != 1568 || im.Height != 92 {
		t.Fatalf("the image sent: %d×%d, %v", im.Width, im.Height, err)
	}
	if len(out.sent) != 1 || out.sent[0].Text != "A fine Barolo!" {
		t.Fatalf("sent %+v", out.sent)
	}
	if err := a.Store.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	msgs, err := a.Store.Active(t.Context(), in.Key)
	if err != nil || len(msgs) != 2 || msgs[0].Text != "📷 Photo: A bottle of Barolo 2016 on a wooden table.\nthe wine from Friday" {
		t.Fatalf("stored %+v %v", msgs, err)
	}
	// Neither call reported usage: the quota heard the images as counted
	// (OpenAI's tiles: 1568×92 is 4×1 tiles, 85 + 4×170), once in the
	// description and once in the answer, and the texts.
	used, err := a.Store.Usage(t.Context(), in.UserID(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if imageTok := llm.ImageTokens("gpt-4o", 1568, 92); imageTok != 765 || used < 2*imageTok || used > 2*imageTok+600 {
		t.Fatalf("the quota heard %d tokens; each image is %d", used, imageTok)
	}
}

// media.vision auto with a model that refuses images: the photo is
// answered without it, the model told it cannot see it, with the caption;
// the user is told once how to enable it; the model is not sent images
// again.
func TestPhotoForAModelThatRefusesImages(t *testing.T) {
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if r.Images > 0 {
			return llmtest.Response{Status: 400, Text: "Invalid content type. image_url is only supported by certain models."}
		}
		return llmtest.Response{Text: "Cheers!"}
	})
	a, out := newMediaApp(t, srv, nil)
	for _, id := range []string{"1", "2"} {
		if err := a.Handler.Handle(t.Context(), &pipeline.Turn{In: photoIn(id, "my dinner", testJPEG(t, 300, 200)), Out: out}); err != nil {
			t.Fatal(err)
		}
	}
	var told, cheers int
	for _, o := range out.sent {
		switch {
		case strings.Contains(o.Text, "media.vision"):
			told++
		case o.Text == "Cheers!":
			cheers++
		}
	}
	if told != 1 || cheers != 2 {
		t.Fatalf("sent %+v: want the how-to once and two answers", out.sent)
	}
	withImages := 0
	for _, r := range srv.Requests() {
		if r.Images > 0 {
			withImages++
		}
	}
	if withImages != 1 {
		t.Fatalf("the model that refused images was sent them %d times", withImages)
	}
	for _, r := range answering(srv.Requests()) {
		if r.Images > 0 {
			continue
		}
		last := r.Messages[len(r.Messages)-1].Content
		if !strings.Contains(last, "[the user sent a photo you cannot see]") || !strings.Contains(last, "my dinner") {
			t.Fatalf("the model read %q", last)
		}
	}
}

// A model that describes photos but refuses them in the answering call
// (the server's rules differ by request): the turn is answered without the
// image, from the description, and the model is not sent images again.
func TestAnsweringCallThatRefusesTheImage(t *testing.T) {
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if strings.HasPrefix(r.Messages[0].Content, llm.DescribePrompt) {
			return llmtest.Response{Text: "A red bicycle."}
		}
		if r.Images > 0 {
			return llmtest.Response{Status: 400, Text: "this model does not support image input"}
		}
		return llmtest.Response{Text: "Nice bike."}
	})
	a, out := newMediaApp(t, srv, nil)
	for _, id := range []string{"1", "2"} {
		if err := a.Handler.Handle(t.Context(), &pipeline.Turn{In: photoIn(id, "new", testJPEG(t, 64, 64)), Out: out}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := notSummaries(srv.Requests())
	// photo 1: describe, answer with the image (refused), answer without;
	// photo 2: answered without describing or sending it.
	if len(reqs) != 4 || reqs[3].Images != 0 || !strings.Contains(reqs[2].Messages[len(reqs[2].Messages)-1].Content, "A red bicycle.") {
		t.Fatalf("requests: %+v", reqs)
	}
	var answers int
	for _, o := range out.sent {
		if o.Text == "Nice bike." {
			answers++
		}
	}
	if answers != 2 {
		t.Fatalf("sent %+v", out.sent)
	}
}

// media.keep_images keeps each photo under data/media (0600 in 0700
// directories); /purge of the chat leaves none.
func TestKeptPhotosArePurged(t *testing.T) {
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response { return llmtest.Response{Text: "ok"} })
	a, out := newMediaApp(t, srv, func(c *config.Config) { c.Media.KeepImages = true })
	pic := testJPEG(t, 40, 30)
	if err := a.Handler.Handle(t.Context(), &pipeline.Turn{In: photoIn("1", "keep this", pic), Out: out}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(a.Config.Data.Dir, MediaDir)
	files := keptFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("kept %v", files)
	}
	if data, err := os.ReadFile(files[0]); err != nil || !bytes.Equal(data, pic) {
		t.Fatalf("the kept photo differs: %v", err)
	}
	for p := files[0]; p != filepath.Dir(dir); p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o700)
		if !st.IsDir() {
			want = 0o600
		}
		if st.Mode().Perm() != want {
			t.Fatalf("%s is %v, want %v", p, st.Mode().Perm(), want)
		}
	}
	key := photoIn("", "", nil).Key
	for _, text := range []string{"/purge chat", "yes"} {
		in := pipeline.Inbound{Key: key, SenderID: "42", MessageID: text, Text: text, Time: time.Now()}
		if err := a.Handler.Handle(t.Context(), &pipeline.Turn{In: in, Out: out}); err != nil {
			t.Fatal(err)
		}
	}
	if files := keptFiles(t, dir); len(files) != 0 {
		t.Fatalf("after /purge: %v (sent %+v)", files, out.sent)
	}
	if msgs, _ := a.Store.Active(t.Context(), key); len(msgs) != 0 {
		t.Fatalf("after /purge: %+v", msgs)
	}
}

func keptFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return nil
		}
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A captioned photo is stored on arrival as its caption (the channel's
// intake); once described, the description is what is remembered.
func TestCaptionStoredOnArrivalIsReplacedByTheDescription(t *testing.T) {
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if strings.HasPrefix(r.Messages[0].Content, llm.DescribePrompt) {
			return llmtest.Response{Text: "A bottle of Barolo 2016."}
		}
		return llmtest.Response{Text: "ok"}
	})
	a, out := newMediaApp(t, srv, nil)
	in := photoIn("1", "the wine from Friday", testJPEG(t, 50, 50))
	if err := a.Intake.Accept(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	if err := a.Handler.Handle(t.Context(), &pipeline.Turn{In: in, Out: out}); err != nil {
		t.Fatal(err)
	}
	if err := a.Store.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	msgs, err := a.Store.Active(t.Context(), in.Key)
	if err != nil || len(msgs) != 2 || msgs[0].Text != "📷 Photo: A bottle of Barolo 2016.\nthe wine from Friday" || msgs[1].Text != "ok" {
		t.Fatalf("stored %+v %v", msgs, err)
	}
}

// A long document: the model reads the part relevant to the caption; the
// whole text is stored.
func TestLongDocumentTheModelReadsTheRelevantPart(t *testing.T) {
	var last string
	srv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		last = r.Messages[len(r.Messages)-1].Content
		return llmtest.Response{Text: "Two months."}
	})
	a, out := newMediaApp(t, srv, nil)
	body := strings.Repeat("The tenant keeps the flat clean and reports repairs within a week.\n\n", 500) +
		"The deposit is two months of rent.\n\n" + strings.Repeat("The inventory lists chairs and lamps.\n\n", 500)
	in := pipeline.Inbound{Key: pipeline.Key{Channel: "telegram", Chat: "42"}, SenderID: "42", MessageID: "1",
		Text: "how much is the deposit?", Time: time.Now(),
		Media: &pipeline.Media{Kind: pipeline.MediaDocument, Name: "lease.txt", Size: int64(len(body)),
			Fetch: func(context.Context, int64) ([]byte, error) { return []byte(body), nil }}}
	if err := a.Handler.Handle(t.Context(), &pipeline.Turn{In: in, Out: out}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(last, "The deposit is two months of rent.") || len(last) > 8000 {
		t.Fatalf("the model read %d bytes:\n%.300s", len(last), last)
	}
	if err := a.Store.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	msgs, err := a.Store.Active(t.Context(), in.Key)
	if err != nil || len(msgs) != 2 || !strings.HasPrefix(msgs[0].Text, "📄 lease.txt:\n") || len(msgs[0].Text) < len(body) {
		t.Fatalf("stored %d messages, %v", len(msgs), err)
	}
}
