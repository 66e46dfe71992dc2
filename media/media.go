package media

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/sandbox"
)

// Transcriber turns speech into text (llm.Transcriber).
type Transcriber interface {
	Transcribe(ctx context.Context, name string, audio []byte) (string, error)
}

// Describer says in words what an image shows (llm.Client with a vision
// model), and what that cost in tokens. ErrNoVision from it means the model
// does not take images.
type Describer interface {
	Describe(ctx context.Context, jpeg []byte, caption string) (text string, tokens int, err error)
}

// Usage hears the tokens a transcription or a description cost, for the
// user's daily quota (limits.Quota).
type Usage interface {
	Add(ctx context.Context, userID string, tokens int) error
}

// ErrNoVision means the model refused image input.
var ErrNoVision = errors.New("the model does not take images")

// Recorder stores what the stage answers by itself (a voice note it could
// not hear), so the history shows it arrived.
type Recorder interface {
	Append(ctx context.Context, msgs ...memory.Message) error
}

// Discarder removes the copy of a message a channel stored on arrival
// (chat.Intake stores a caption; memory.Store.Discard), so that the
// responder stores what the media became in its place.
type Discarder interface {
	Discard(ctx context.Context, key pipeline.Key, platformID string) (removed bool, err error)
}

// Vision modes (media.vision).
const (
	VisionAuto = "auto" // try; a model that refuses images is not asked again
	VisionOn   = "on"
	VisionOff  = "off"
)

// Options configure the stage.
type Options struct {
	Transcriber Transcriber   // nil: voice notes are not transcribed
	MaxDuration time.Duration // longer voice notes are not transcribed (0: no limit)
	MaxBytes    int64         // larger audio is not downloaded (default 25 MB, OpenAI's limit)
	Heard       bool          // show "🎤 heard: …" before the answer

	Describer Describer // nil: photos are not looked at
	Model     string    // the model that sees photos: images are counted by its rules, a refusal remembered for it
	Usage     Usage     // counts transcriptions and descriptions in the daily token quota; nil: not counted
	Vision    string    // VisionAuto (default), VisionOn or VisionOff
	MaxImage  int64     // larger photos are not downloaded (default 20 MB)
	Keep      *Kept     // photos' bytes are kept on disk (media.keep_images); nil: not kept
	// MaxImagePixels refuses larger images before they are decoded
	// (media.max_image_pixels; default 40 million).
	MaxImagePixels int64

	MaxDocument int64 // larger text documents are not read (default 1 MiB)
	MaxPDF      int64 // larger PDFs are not read (default 20 MiB)
	// DocumentPrompt is how much of a document the model reads, in
	// tokens (memory.budget.snippets; default 1500): a longer one is
	// stored whole, and the model reads the parts relevant to the caption.
	DocumentPrompt int
	Imports        *Imports // chat exports sent as documents are offered for import; nil: read as documents

	// Sandbox runs the parsers of outside files that are not ours (PDF,
	// images) in workers it can stop (package sandbox); nil: in this
	// process, inputs capped (tests and tools only: nothing stops a
	// parser lost in a hostile file there).
	Sandbox *sandbox.Pool

	Timeout time.Duration // a download plus its model call (default 2 minutes)
	Log     *slog.Logger
}

// Stage is the pipeline stage (Wrap it around the responder).
type Stage struct {
	rec  Recorder
	opts Options

	// exports lets one chat export at a time be downloaded and parsed
	// in this process (its bytes and its messages in memory).
	exports chan struct{}

	mu       sync.Mutex
	noVision map[string]bool       // auto: the models that refused images (bounded: maxModels)
	told     map[pipeline.Key]bool // conversations told how to enable vision (bounded: maxTold)
}

const (
	maxTold   = 10000
	maxModels = 100
)

// New returns the stage; rec stores what it answers by itself.
func New(rec Recorder, opts Options) *Stage {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 25 << 20
	}
	if opts.MaxImage <= 0 {
		opts.MaxImage = 20 << 20
	}
	if opts.MaxDocument <= 0 {
		opts.MaxDocument = 1 << 20
	}
	if opts.DocumentPrompt <= 0 {
		opts.DocumentPrompt = 1500
	}
	if opts.MaxPDF <= 0 {
		opts.MaxPDF = 20 << 20
	}
	if opts.MaxImagePixels <= 0 {
		opts.MaxImagePixels = 40_000_000
	}
	if opts.Sandbox == nil {
		opts.Sandbox = sandbox.NewPool(sandbox.InProcess(Jobs()), sandbox.Limits{Memory: 1 << 30})
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.Vision == "" {
		opts.Vision = VisionAuto
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Stage{rec: rec, opts: opts, exports: make(chan struct{}, 1), told: map[pipeline.Key]bool{}, noVision: map[string]bool{}}
}

// Middleware returns the stage as a pipeline middleware.
func (s *Stage) Middleware() pipeline.Middleware {
	return func(next pipeline.Handler) pipeline.Handler {
		return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
			if t.In.Media == nil || !t.In.Addressed() {
				return next.Handle(ctx, t)
			}
			md, caption := t.In.Media, t.In.Text
			var (
				done bool
				err  error
			)
			switch {
			case md.Kind.Heard():
				done, err = s.voice(ctx, t)
			case md.Kind == pipeline.MediaPhoto:
				done, err = s.photo(ctx, t)
			case md.Kind == pipeline.MediaDocument:
				done, err = s.document(ctx, t)
			}
			if done || err != nil {
				return err
			}
			t.In.Media = nil // turned into text
			if strings.TrimSpace(t.In.Text) == "" {
				return nil
			}
			if t.In.Text != caption && caption != "" {
				s.replaceStored(ctx, t)
			}
			return next.Handle(ctx, t)
		})
	}
}

// count adds what a model call for the turn cost to the sender's daily
// token quota (Options.Usage); a failure is logged.
func (s *Stage) count(ctx context.Context, t *pipeline.Turn, what string, tokens int) {
	if tokens <= 0 || s.opts.Usage == nil {
		return
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.opts.Usage.Add(uctx, t.In.UserID(), tokens); err != nil {
		t.Logger().Warn("counting the tokens of "+what, "tokens", tokens, "err", err)
	}
}

// replaceStored removes the caption a channel stored when the message
// arrived, so the transcript, description or document text the responder
// stores is what is remembered (the store keeps the first copy of a
// message). A crash between the two loses the message from the history.
func (s *Stage) replaceStored(ctx context.Context, t *pipeline.Turn) {
	d, ok := s.rec.(Discarder)
	if !ok || t.In.MessageID == "" {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := d.Discard(dctx, t.In.Key, t.In.MessageID); err != nil {
		t.Logger().Warn("replacing the stored caption of a media message with what it said", "err", err)
	}
}

// clock renders a duration as "0:14" or "1:02:03".
func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// reply answers the turn in plain text.
func reply(ctx context.Context, t *pipeline.Turn, text string) error {
	_, err := t.Out.Send(ctx, pipeline.Outbound{Key: t.In.Key, Text: text, Plain: true, ReplyTo: t.In.MessageID})
	return err
}

// refuse answers a message the stage cannot take, and records that it came
// (what it was, never its content) and the answer, so the history shows it
// and a restart does not treat it as unanswered.
func (s *Stage) refuse(ctx context.Context, t *pipeline.Turn, arrived, answer string) error {
	in := t.In
	if err := reply(ctx, t, answer); err != nil {
		return err
	}
	if s.rec == nil || in.MessageID == "" {
		return nil
	}
	now := time.Now()
	user := memory.Message{Key: in.Key, Role: memory.RoleUser, SenderID: in.SenderID, SenderName: in.SenderName,
		PlatformID: in.MessageID, Text: arrived, Time: in.Time}
	if user.Time.IsZero() {
		user.Time = now
	}
	bot := memory.Message{Key: in.Key, Role: memory.RoleAssistant, ReplyTo: in.MessageID, Text: answer, Time: now}
	if err := s.rec.Append(ctx, user, bot); err != nil {
		t.Logger().Warn("recording a media message the bot could not take", "err", err)
	}
	return nil
}

// withCaption joins what the media became and the caption.
func withCaption(text, caption string) string {
	caption = strings.TrimSpace(caption)
	if caption == "" {
		return text
	}
	return text + "\n" + caption
}

// validText reports whether b is text: UTF-8 without NULs.
func validText(b []byte) bool {
	return utf8.Valid(b) && !strings.ContainsRune(string(b), 0)
}
