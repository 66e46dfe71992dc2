package console_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/adapters/adaptertest"
	"github.com/recallbot/recall/adapters/console"
	"github.com/recallbot/recall/pipeline"
)

// runWith runs an adapter with options over input to its end.
func runWith(t *testing.T, input string, h pipeline.Handler, opts ...console.Option) string {
	t.Helper()
	var out adaptertest.SyncBuffer
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := console.New(strings.NewReader(input), &out, h, true, opts...).Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out.String()
}

// A failed turn (the model refused the key…) is in the log once, with why:
// the terminal chat used to drop the error.
func TestFailedTurnIsLoggedOnce(t *testing.T) {
	var logBuf adaptertest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logBuf, nil))
	h := &recorder{reply: func(ctx context.Context, t *pipeline.Turn) error {
		if t.In.Text == "bad" {
			_, _ = t.Out.Send(ctx, pipeline.Outbound{Text: "The model server refused the key."})
			return errors.New("llm: HTTP 401: invalid api key")
		}
		return nil
	}}
	runWith(t, "bad\nfine\n", h, console.WithLog(log))
	got := logBuf.String()
	if n := strings.Count(got, "turn failed"); n != 1 {
		t.Errorf("%d \"turn failed\" records, want 1:\n%s", n, got)
	}
	for _, want := range []string{"level=ERROR", "HTTP 401: invalid api key", "key=console:local:"} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
}

// Arrow keys typed into a pipe (`cat | bot`) are not text: the model and
// the store never see raw escapes.
func TestPipedEscapesAreStripped(t *testing.T) {
	h := &recorder{}
	run(t, strings.NewReader("hel\x1b[Dlo\x1b[A\x1bOB\x07\n\x1b[1;5Cnext\ttab\n"), h, false)
	got := h.texts()
	if want := []string{"hello", "next\ttab"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("handled %q, want %q", got, want)
	}
}

// On a terminal the line is edited in place and earlier lines come back
// with the up arrow.
func TestTerminalLineEditingAndHistory(t *testing.T) {
	h := &recorder{}
	// "hello", two lefts, "XY", Enter; then up arrow + Enter repeats it;
	// then "abc", Backspace, Enter.
	out := runWith(t, "hello\x1b[D\x1b[DXY\r\x1b[A\rabc\x7f\r", h, console.WithEditor())
	got := h.texts()
	if want := []string{"helXYlo", "helXYlo", "ab"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("handled %q, want %q", got, want)
	}
	if !strings.Contains(out, "re: helXYlo\r\n") {
		t.Errorf("replies are written with CRLF for the raw terminal: %q", out)
	}
}

// A multi-line paste is one message, sent by the Enter after it.
func TestTerminalPasteIsOneMessage(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"paste ending in a newline", "\x1b[200~line one\nline two\n\x1b[201~\r", "line one\nline two"},
		{"paste completed by typing", "\x1b[200~a\r\nb\x1b[201~c\r", "a\nbc"},
		{"input ends inside a paste", "\x1b[200~x\ny\n", "x\ny"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &recorder{}
			runWith(t, tc.in, h, console.WithEditor())
			if got := h.texts(); len(got) != 1 || got[0] != tc.want {
				t.Errorf("handled %q, want one message %q", got, tc.want)
			}
		})
	}
}

// While the model thinks the terminal says so, and the note is erased
// before the answer is printed.
func TestTerminalShowsThinking(t *testing.T) {
	h := &recorder{reply: func(ctx context.Context, t *pipeline.Turn) error {
		typer, ok := t.Out.(pipeline.Typer)
		if !ok {
			return errors.New("the console is not a Typer")
		}
		_ = typer.Typing(ctx, t.In.Key)
		_ = typer.Typing(ctx, t.In.Key) // refreshed: still shown once
		_, err := t.Out.Send(ctx, pipeline.Outbound{Text: "answer"})
		return err
	}}
	out := runWith(t, "question\r", h, console.WithEditor())
	i, j := strings.Index(out, "thinking…"), strings.Index(out, "answer")
	if i < 0 || j < i || strings.Count(out, "thinking…") != 1 {
		t.Fatalf("no single \"thinking…\" before the answer: %q", out)
	}
	if !strings.Contains(out[i:j], "\r\x1b[K") {
		t.Errorf("\"thinking…\" is not erased before the answer: %q", out[i:j])
	}
	// A pipe gets no indicator (scripts read clean output).
	if out := run(t, strings.NewReader("question\n"), h, false); out != "answer\n" {
		t.Errorf("pipe output %q", out)
	}
}

// /export on the terminal writes a file and says where.
func TestSendFileWritesTheFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "exports")
	data := []byte(`{"format":"recall-export","version":1}`)
	h := &recorder{reply: func(ctx context.Context, t *pipeline.Turn) error {
		return t.Out.(pipeline.FileSender).SendFile(ctx, t.In.Key, pipeline.File{Name: "../recall-export.json", Data: data}, "Your data")
	}}
	out := runWith(t, "/export\n/export\n", h, console.WithExportDir(dir))
	for _, name := range []string{"recall-export.json", "recall-export-1.json"} {
		p := filepath.Join(dir, name)
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: %q, %v", p, got, err)
			continue
		}
		if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", p, st.Mode().Perm())
		}
		if !strings.Contains(out, "Saved to "+p+" ") {
			t.Errorf("output does not name %s:\n%s", p, out)
		}
	}
	if strings.Contains(out, string(data)) {
		t.Errorf("the file's content was printed:\n%s", out)
	}
}

// A slow answer's note replaces "thinking…", stays through the typing
// refreshes, and is erased before the answer.
func TestTerminalWaitNote(t *testing.T) {
	type waitNoter interface {
		ShowWaitNote(ctx context.Context, key pipeline.Key, text string) (func(context.Context) error, error)
	}
	h := &recorder{reply: func(ctx context.Context, t *pipeline.Turn) error {
		typer := t.Out.(pipeline.Typer)
		_ = typer.Typing(ctx, t.In.Key)
		remove, err := t.Out.(waitNoter).ShowWaitNote(ctx, t.In.Key, "⏳ still thinking…")
		if err != nil {
			return err
		}
		_ = typer.Typing(ctx, t.In.Key) // the note stays
		if err := remove(ctx); err != nil {
			return err
		}
		_, err = t.Out.Send(ctx, pipeline.Outbound{Text: "answer"})
		return err
	}}
	out := runWith(t, "question\r", h, console.WithEditor())
	i, j := strings.Index(out, "still thinking…"), strings.Index(out, "answer")
	if i < 0 || j < i || strings.Count(out, "thinking…") != 2 {
		t.Fatalf("want thinking…, then the note once, then the answer: %q", out)
	}
	if !strings.Contains(out[i:j], "\r\x1b[K") {
		t.Errorf("the note is not erased before the answer: %q", out[i:j])
	}
}

// Interrupt stops the turn in flight — its context ends with
// pipeline.ErrInterrupted — once; with no turn running (or the one running
// interrupted already) it reports false: the caller ends the chat then.
// The chat goes on with the next line.
func TestInterruptStopsTheTurnInFlight(t *testing.T) {
	started := make(chan struct{})
	causes := make(chan error, 1)
	var a *console.Adapter
	h := &recorder{reply: func(ctx context.Context, t *pipeline.Turn) error {
		if t.In.Text != "slow" {
			_, err := t.Out.Send(ctx, pipeline.Outbound{Text: "re: " + t.In.Text})
			return err
		}
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		_, _ = t.Out.Send(ctx, pipeline.Outbound{Text: "stopped"})
		return ctx.Err()
	}}
	pr, pw := io.Pipe()
	var out adaptertest.SyncBuffer
	a = console.New(pr, &out, h, false)
	if a.Interrupt() {
		t.Fatal("Interrupt with no turn running reported a turn stopped")
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(t.Context()) }()
	go func() {
		io.WriteString(pw, "slow\n")
		<-started
		if !a.Interrupt() {
			t.Error("Interrupt during a turn reported nothing to stop")
		}
		if a.Interrupt() {
			t.Error("a second Interrupt of the same turn reported it stopped again")
		}
		io.WriteString(pw, "next\n")
		pw.Close()
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if cause := <-causes; !errors.Is(cause, pipeline.ErrInterrupted) {
		t.Fatalf("the turn's context ended with %v, want pipeline.ErrInterrupted", cause)
	}
	if got := out.String(); !strings.Contains(got, "stopped\n") || !strings.Contains(got, "re: next\n") {
		t.Fatalf("after the interrupt the chat did not go on:\n%s", got)
	}
	if a.Interrupt() {
		t.Fatal("Interrupt after Run reported a turn stopped")
	}
}
