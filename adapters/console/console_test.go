package console_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/recallbot/recall/adapters/adaptertest"
	"github.com/recallbot/recall/adapters/console"
	"github.com/recallbot/recall/pipeline"
)

// recorder is a stub pipeline.Handler: it records every inbound message and
// answers through the turn's sender with reply(in).
type recorder struct {
	mu    sync.Mutex
	got   []pipeline.Inbound
	reply func(ctx context.Context, t *pipeline.Turn) error
}

func (r *recorder) Handle(ctx context.Context, t *pipeline.Turn) error {
	r.mu.Lock()
	r.got = append(r.got, t.In)
	r.mu.Unlock()
	if r.reply != nil {
		return r.reply(ctx, t)
	}
	_, err := t.Out.Send(ctx, pipeline.Outbound{Key: t.In.Key, Text: "re: " + t.In.Text, ReplyTo: t.In.MessageID})
	return err
}

func (r *recorder) texts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.got))
	for i, in := range r.got {
		out[i] = in.Text
	}
	return out
}

// run runs an adapter over input to its end and returns the output.
func run(t *testing.T, input io.Reader, h pipeline.Handler, prompt bool) string {
	t.Helper()
	var out adaptertest.SyncBuffer
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := console.New(input, &out, h, prompt).Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("Run did not end at the end of input")
	}
	return out.String()
}

func TestLinesAreHandledInOrder(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"in order", "one\ntwo\nthree\n", []string{"one", "two", "three"}},
		{"no final newline", "one\ntwo", []string{"one", "two"}},
		{"crlf", "one\r\ntwo\r\n", []string{"one", "two"}},
		{"blank lines skipped", "\none\n\n   \n\t\ntwo\n\n", []string{"one", "two"}},
		{"spaces trimmed", "  one  \n", []string{"one"}},
		{"quit ends", "one\n/quit\ntwo\n", []string{"one"}},
		{"exit ends", "one\n  /exit \ntwo\n", []string{"one"}},
		{"empty input", "", nil},
		{"commands pass", "/help\n/remember city Lisbon\n", []string{"/help", "/remember city Lisbon"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &recorder{}
			out := run(t, strings.NewReader(tc.in), h, false)
			if got := h.texts(); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("handled %q, want %q", got, tc.want)
			}
			var want strings.Builder
			for _, l := range tc.want {
				want.WriteString("re: " + l + "\n")
			}
			if out != want.String() {
				t.Errorf("output %q, want %q", out, want.String())
			}
		})
	}
}

func TestInboundIsTheLocalUser(t *testing.T) {
	h := &recorder{}
	run(t, strings.NewReader("hi\n"), h, false)
	in := h.got[0]
	if in.Key != console.Key || in.Key.String() != "console:local:" {
		t.Errorf("key %v, want %v", in.Key, console.Key)
	}
	if in.UserID() != pipeline.ConsoleUser {
		t.Errorf("user %q, want %q (always allowed)", in.UserID(), pipeline.ConsoleUser)
	}
	if !in.Addressed() || in.IsGroup {
		t.Errorf("a terminal line must be addressed to the bot: %+v", in)
	}
	if in.Time.IsZero() || time.Since(in.Time) > time.Minute {
		t.Errorf("time %v", in.Time)
	}
}

// TestEachLineIsAnsweredBeforeTheNextIsRead feeds lines through a pipe one at
// a time: the handler of a line must run before the next line is written.
func TestEachLineIsAnsweredBeforeTheNextIsRead(t *testing.T) {
	pr, pw := io.Pipe()
	var out adaptertest.SyncBuffer
	handled := make(chan string)
	h := &recorder{reply: func(ctx context.Context, t *pipeline.Turn) error {
		handled <- t.In.Text
		_, err := t.Out.Send(ctx, pipeline.Outbound{Text: "re: " + t.In.Text})
		return err
	}}
	done := make(chan error, 1)
	go func() { done <- console.New(pr, &out, h, false).Run(t.Context()) }()
	for i := range 5 {
		line := fmt.Sprintf("line %d", i)
		if _, err := io.WriteString(pw, line+"\n"); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-handled:
			if got != line {
				t.Fatalf("handled %q, want %q", got, line)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%q was not handled", line)
		}
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "re: line "); n != 5 {
		t.Errorf("%d replies, want 5:\n%s", n, out.String())
	}
}

func TestPromptWhenInteractive(t *testing.T) {
	out := run(t, strings.NewReader("one\n\ntwo\n"), &recorder{}, true)
	if want := "> re: one\n> > re: two\n> "; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	if out := run(t, strings.NewReader("one\n"), &recorder{}, false); strings.Contains(out, ">") {
		t.Errorf("a pipe gets no prompt: %q", out)
	}
}

func TestHandlerErrorDoesNotEndTheChat(t *testing.T) {
	h := &recorder{}
	h.reply = func(ctx context.Context, t *pipeline.Turn) error {
		if t.In.Text == "bad" {
			return errors.New("boom")
		}
		_, err := t.Out.Send(ctx, pipeline.Outbound{Text: "re: " + t.In.Text})
		return err
	}
	out := run(t, strings.NewReader("bad\ngood\n"), h, false)
	if out != "re: good\n" {
		t.Errorf("output %q", out)
	}
}

func TestLongLineIsCutNotFatal(t *testing.T) {
	const mb = 1 << 20
	long := strings.Repeat("x", 2*mb)
	h := &recorder{reply: func(ctx context.Context, t *pipeline.Turn) error {
		_, err := t.Out.Send(ctx, pipeline.Outbound{Text: fmt.Sprintf("got %d bytes", len(t.In.Text))})
		return err
	}}
	out := run(t, strings.NewReader("before\n"+long+"\nafter\n"), h, false)
	got := h.texts()
	if len(got) != 3 || got[0] != "before" || got[2] != "after" {
		t.Fatalf("handled %d lines, want before, the cut line, after", len(got))
	}
	if len(got[1]) != mb || got[1] != long[:mb] {
		t.Errorf("the long line was handled with %d bytes, want its first %d", len(got[1]), mb)
	}
	want := "got 6 bytes\n(That message was longer than 1 MB; only its first 1 MB was read.)\ngot 1048576 bytes\ngot 5 bytes\n"
	if out != want {
		t.Errorf("output %q, want %q", out, want)
	}

	// A cut never splits a character, and a long last line without a
	// newline is read too.
	h = &recorder{}
	run(t, strings.NewReader("x"+strings.Repeat("é", mb)), h, false)
	got = h.texts()
	if len(got) != 1 || !utf8.ValidString(got[0]) || len(got[0]) > mb || len(got[0]) < mb-3 {
		t.Errorf("cut multi-byte line: %d lines, %d bytes, valid %v", len(got), len(got[0]), utf8.ValidString(got[0]))
	}
}

func TestChoicesRenderAsNumberedList(t *testing.T) {
	h := &recorder{reply: func(ctx context.Context, t *pipeline.Turn) error {
		_, err := t.Out.Send(ctx, pipeline.Outbound{Text: "Where should I keep your memory?", Choices: []pipeline.Choice{
			{Label: "SQLite (recommended)", Data: "sqlite"}, {Label: "JSON file", Data: "json"},
		}})
		return err
	}}
	out := run(t, strings.NewReader("/summary\n"), h, false)
	want := "Where should I keep your memory?\n\n1. SQLite (recommended)\n2. JSON file\n"
	if out != want {
		t.Errorf("output %q, want %q", out, want)
	}
}

func TestSendFilePrintsTheFile(t *testing.T) {
	data := `{"format":"recall-export","version":1}`
	h := &recorder{reply: func(ctx context.Context, t *pipeline.Turn) error {
		fs, ok := t.Out.(pipeline.FileSender)
		if !ok {
			return errors.New("the console is not a FileSender")
		}
		return fs.SendFile(ctx, t.In.Key, pipeline.File{Name: "recall-export.json", MIME: "application/json", Data: []byte(data)}, "Your data")
	}}
	out := run(t, strings.NewReader("/export\n"), h, false)
	for _, want := range []string{"Your data\n", "recall-export.json", fmt.Sprintf("(%d bytes)", len(data)), "\n" + data + "\n", "end of recall-export.json"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "Your data") > strings.Index(out, data) {
		t.Errorf("the caption should come before the file:\n%s", out)
	}
}

func TestMessageIDsAreUniqueAndNonEmpty(t *testing.T) {
	const n = 2000
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "line %d\n", i)
	}
	seen := map[string]bool{}
	// Two adapters, as two runs of the bot: ids never repeat across them.
	for range 2 {
		h := &recorder{}
		run(t, strings.NewReader(in.String()), h, false)
		if len(h.got) != n {
			t.Fatalf("handled %d lines, want %d", len(h.got), n)
		}
		for _, m := range h.got {
			if m.MessageID == "" {
				t.Fatalf("empty message id for %q", m.Text)
			}
			if seen[m.MessageID] {
				t.Fatalf("message id %q used twice", m.MessageID)
			}
			seen[m.MessageID] = true
		}
	}
}

// blockingReader never returns: the chat must still end when ctx ends.
type blockingReader struct{ stop chan struct{} }

func (b blockingReader) Read([]byte) (int, error) {
	<-b.stop
	return 0, io.EOF
}

func TestContextEndsRun(t *testing.T) {
	r := blockingReader{make(chan struct{})}
	defer close(r.stop)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- console.New(r, io.Discard, &recorder{}, false).Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return when its context ended")
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("input/output error") }

func TestReadErrorIsReturned(t *testing.T) {
	err := console.New(io.MultiReader(strings.NewReader("one\n"), failingReader{}), io.Discard, &recorder{}, false).Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "input/output error") {
		t.Errorf("Run = %v, want the read error", err)
	}
}
