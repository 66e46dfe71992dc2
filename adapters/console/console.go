// Package console is the terminal chat: it reads messages from stdin and
// prints replies to stdout, as the user console:local, through the same
// stages as every other channel. It works interactively and from a pipe
// (scripts): each message is answered before the next is read, and end of
// input ends the chat.
//
// On a terminal (WithTerminal) the line is edited in place with history
// (arrow keys, Home/End, Ctrl-W…), a multi-line paste is one message
// (bracketed paste), and "thinking…" shows while the bot waits for the
// model. Interrupt (Ctrl-C, routed by the caller) stops the answer in
// flight; on a terminal Ctrl-C raises SIGINT even in raw mode, so that the
// caller hears it while a turn runs. From a pipe, one line is one message,
// and terminal escape sequences
// (an arrow key typed into `cat | bot`) are stripped: they never reach the
// model or the store.
package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/recallbot/recall/pipeline"
)

// Key is the terminal conversation.
var Key = pipeline.Key{Channel: "console", Chat: "local"}

// maxLine is the longest message read, in bytes (a longer one is cut, never
// a crash).
const maxLine = 1 << 20

// Indicator texts shown while a turn waits for the model (terminal only).
const (
	thinkingText      = "thinking…"
	promptText        = "> "
	continuationText  = "… "
	eraseLine         = "\r\x1b[K"
	bracketedPasteOff = "\x1b[?2004l"
)

// Adapter is the terminal channel.
type Adapter struct {
	in        io.Reader
	out       io.Writer
	h         pipeline.Handler
	prompt    bool // print "> " (interactive)
	log       *slog.Logger
	exportDir string // where SendFile writes files; "" prints them
	editor    bool   // line editing (x/term) on in/out
	rawFD     int    // the terminal put in raw mode while Run runs; -1 none

	mu       sync.Mutex
	seq      int64
	term     *term.Terminal          // set by Run when editor
	thinking string                  // the indicator showing, "" none
	stop     context.CancelCauseFunc // cancels the turn in flight; nil when idle
	stopped  bool                    // the turn in flight was interrupted
}

var (
	_ pipeline.Sender     = (*Adapter)(nil)
	_ pipeline.FileSender = (*Adapter)(nil)
	_ pipeline.Typer      = (*Adapter)(nil)
)

// Option configures an Adapter.
type Option func(*Adapter)

// WithLog logs the turns that fail (once each: the user has been told by
// then). Without it failures are not logged.
func WithLog(l *slog.Logger) Option { return func(a *Adapter) { a.log = l } }

// WithExportDir makes SendFile (/export) write each file into dir (created
// 0700, files 0600, never overwriting one) and print its path. Without it
// the file's content is printed.
func WithExportDir(dir string) Option { return func(a *Adapter) { a.exportDir = dir } }

// WithTerminal says in is the terminal with file descriptor fd: Run puts it
// in raw mode (restored when Run returns) and edits lines itself — history,
// arrow keys, bracketed paste — and shows "thinking…" while a turn waits.
func WithTerminal(fd int) Option {
	return func(a *Adapter) { a.editor, a.rawFD = true, fd }
}

// New returns a console adapter running turns through h. prompt prints a
// "> " prompt before each line (for a terminal, not for a pipe).
func New(in io.Reader, out io.Writer, h pipeline.Handler, prompt bool, opts ...Option) *Adapter {
	a := &Adapter{in: in, out: out, h: h, prompt: prompt, rawFD: -1}
	for _, o := range opts {
		o(a)
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	return a
}

// message is one message read: its text, and whether it was cut at maxLine.
type message struct {
	text string
	cut  bool
}

// Run reads and answers messages until end of input, "/quit", or ctx ends.
// A message longer than 1 MB is cut to its first 1 MB (the user is told)
// and answered; reading goes on with the next one. A read error other than
// end of input is returned.
func (a *Adapter) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx) // the reader goroutine ends with Run
	defer cancel()
	read, done, err := a.reader()
	if err != nil {
		return err
	}
	defer done()
	// One goroutine reads, one message each time it is asked, so nothing
	// is read (and no prompt drawn) while a turn runs. It ends at end of
	// input or when Run returns, unless it is blocked in Read then: only
	// the input's end (or the process's) interrupts that.
	next := make(chan struct{})
	msgs := make(chan message)
	errc := make(chan error, 1)
	go func() {
		defer close(msgs)
		for {
			select {
			case <-next:
			case <-ctx.Done():
				return
			}
			m, err := read()
			if err != nil {
				errc <- err
				return
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		a.printPrompt()
		select {
		case next <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-msgs:
			if !ok {
				select {
				case err := <-errc:
					if !errors.Is(err, io.EOF) {
						return fmt.Errorf("reading the terminal: %w", err)
					}
				default: // ctx ended
				}
				return nil
			}
			if m.cut {
				a.write("(That message was longer than 1 MB; only its first 1 MB was read.)\n")
			}
			text := strings.TrimSpace(m.text)
			if text == "" {
				continue
			}
			if text == "/quit" || text == "/exit" {
				return nil
			}
			a.turn(ctx, text)
		}
	}
}

// reader returns the function that reads one message, and the one that
// undoes what reading needed (raw mode).
func (a *Adapter) reader() (read func() (message, error), done func(), err error) {
	if !a.editor {
		r := bufio.NewReaderSize(a.in, 64*1024)
		return func() (message, error) {
			text, cut, err := readLine(r)
			return message{text: clean(text), cut: cut}, err
		}, func() {}, nil
	}
	restore := func() {}
	if a.rawFD >= 0 {
		old, err := term.MakeRaw(a.rawFD)
		if err != nil {
			return nil, nil, fmt.Errorf("setting up the terminal: %w", err)
		}
		restore = func() { _ = term.Restore(a.rawFD, old) }
		// Raw mode turns Ctrl-C into a byte nobody reads while a turn
		// runs: keep it a signal, so that it can stop the answer.
		if err := keepInterruptKey(a.rawFD); err != nil {
			a.log.Warn("Ctrl-C cannot stop an answer on this terminal", "err", err)
		}
	}
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{a.in, a.out}, promptText)
	t.SetBracketedPasteMode(true)
	a.mu.Lock()
	a.term = t
	a.mu.Unlock()
	return func() (message, error) { return readPasted(t) }, func() {
		// Bracketed paste off, as the terminal was; the raw mode too.
		a.mu.Lock()
		io.WriteString(a.out, bracketedPasteOff)
		a.mu.Unlock()
		restore()
	}, nil
}

// readPasted reads one message from an editing terminal: a line, or the
// lines of a paste plus the line that ends it (Enter after the paste sends
// it), joined by "\n". It is cut at maxLine.
func readPasted(t *term.Terminal) (message, error) {
	defer t.SetPrompt(promptText)
	var lines []string
	size := 0
	for {
		line, err := t.ReadLine()
		pasted := errors.Is(err, term.ErrPasteIndicator)
		if err != nil && !pasted {
			if len(lines) > 0 && errors.Is(err, io.EOF) {
				break // input ended inside a paste: send what came
			}
			return message{}, err
		}
		if size < maxLine+1 {
			lines = append(lines, line)
			size += len(line) + 1
		}
		if !pasted {
			break
		}
		t.SetPrompt(continuationText)
	}
	text := clean(strings.Join(lines, "\n"))
	if len(text) <= maxLine {
		return message{text: text}, nil
	}
	return message{text: cutRunes(text[:maxLine]), cut: true}, nil
}

// clean removes terminal escape sequences (CSI "ESC [ … final", SS3
// "ESC O x", and two-byte "ESC x") and control characters other than tab
// and newline: they are keys, not text, and must not reach the model.
func clean(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r != '\n' && r != '\t' && unicode.IsControl(r) }) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b:
			i += escapeLen(s[i:])
			continue
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r):
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// escapeLen is the length of the escape sequence at the start of s (which
// begins with ESC).
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[':
		// Parameters and intermediates, then one final byte 0x40–0x7E.
		for i := 2; i < len(s); i++ {
			if s[i] >= 0x40 && s[i] <= 0x7e {
				return i + 1
			}
		}
		return len(s)
	case 'O':
		return min(3, len(s))
	}
	return 2
}

// readLine reads one line without its "\n" or "\r\n", keeping at most
// maxLine bytes (cut at a rune boundary); cut reports that the line was
// longer. The rest of a long line is read and dropped, never buffered. The
// last line needs no newline. err is io.EOF at end of input.
func readLine(r *bufio.Reader) (text string, cut bool, err error) {
	var b []byte
	read := false
	for {
		chunk, more, err := r.ReadLine()
		if err != nil {
			if read {
				break // input ended inside a long line: keep what was read
			}
			return "", false, err
		}
		read = true
		if room := maxLine - len(b); len(chunk) > room {
			b = append(b, chunk[:room]...)
			cut = true
		} else {
			b = append(b, chunk...)
		}
		if !more {
			break
		}
	}
	if cut {
		return cutRunes(string(b)), true, nil
	}
	return string(b), false, nil
}

// cutRunes drops a rune split by a cut at the end of s.
func cutRunes(s string) string {
	for i := 0; i < utf8.UTFMax-1 && len(s) > 0; i++ {
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

func (a *Adapter) printPrompt() {
	if a.prompt && !a.editor {
		a.write(promptText)
	}
}

func (a *Adapter) turn(ctx context.Context, text string) {
	// Ids unique across restarts, so the durable dedupe never mistakes a new
	// line for an old one.
	a.mu.Lock()
	a.seq++
	id := strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatInt(a.seq, 10)
	a.mu.Unlock()
	in := pipeline.Inbound{
		Key: Key, SenderID: "local", SenderName: "you", MessageID: id, Text: text, Time: time.Now(),
	}
	log := a.log.With("key", Key)
	t := &pipeline.Turn{In: in, Out: a, Log: log}
	tctx, stop := context.WithCancelCause(ctx)
	a.mu.Lock()
	a.stop, a.stopped = stop, false
	a.mu.Unlock()
	err := a.h.Handle(tctx, t)
	a.mu.Lock()
	a.stop = nil
	a.mu.Unlock()
	stop(nil)
	a.clearThinking()
	switch {
	case err == nil:
	case errors.Is(context.Cause(tctx), pipeline.ErrInterrupted):
		log.Info("answer cancelled by the user", "msg_id", id, "err", err)
	case ctx.Err() != nil:
		log.Warn("turn cancelled", "msg_id", id, "err", err)
	default:
		// The user has been told by the stage that failed; the operator
		// reads why here, once (as the dispatcher logs the other channels).
		log.Error("turn failed", "msg_id", id, "err", err)
	}
}

// Interrupt stops the answer in flight, if any: its turn's context is
// cancelled with pipeline.ErrInterrupted (the chain tells the user and
// stores nothing of the answer). It reports false when there is nothing
// to stop — no turn runs, or this one was interrupted already —: the
// caller then treats Ctrl-C as a request to leave.
func (a *Adapter) Interrupt() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stop == nil || a.stopped {
		return false
	}
	a.stopped = true
	a.stop(pipeline.ErrInterrupted)
	return true
}

// Typing shows "thinking…" on a terminal until the next message is printed
// (a wait note showing stays).
func (a *Adapter) Typing(context.Context, pipeline.Key) error {
	if !a.editor {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.thinking == "" {
		a.thinking = thinkingText
		a.writeLocked(eraseLine + thinkingText)
	}
	return nil
}

// ShowWaitNote replaces "thinking…" with text (a slow answer's note) on a
// terminal; remove erases it. From a pipe it shows nothing.
func (a *Adapter) ShowWaitNote(_ context.Context, _ pipeline.Key, text string) (remove func(context.Context) error, err error) {
	a.showThinking(text)
	return func(context.Context) error { a.clearThinking(); return nil }, nil
}

func (a *Adapter) showThinking(text string) {
	if !a.editor {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.thinking == text {
		return
	}
	a.thinking = text
	a.writeLocked(eraseLine + text)
}

func (a *Adapter) clearThinking() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.clearThinkingLocked()
}

func (a *Adapter) clearThinkingLocked() {
	if a.thinking != "" {
		a.thinking = ""
		a.writeLocked(eraseLine)
	}
}

// Send prints a message.
func (a *Adapter) Send(_ context.Context, out pipeline.Outbound) (string, error) {
	out = pipeline.WithChoices(a, out)
	a.write(strings.TrimRight(out.Text, "\n") + "\n")
	return "", nil
}

// SendFile writes the file into the export directory and prints its path
// (with no export directory it prints the content between two markers).
func (a *Adapter) SendFile(_ context.Context, _ pipeline.Key, f pipeline.File, caption string) error {
	if a.exportDir == "" {
		a.write(fmt.Sprintf("%s\n--- %s (%d bytes) ---\n%s\n--- end of %s ---\n", caption, f.Name, len(f.Data), f.Data, f.Name))
		return nil
	}
	path, err := writeNew(a.exportDir, f.Name, f.Data)
	if err != nil {
		a.write(fmt.Sprintf("%s\nI couldn't save %s: %v\n", caption, f.Name, err))
		return fmt.Errorf("saving %s in %s: %w", f.Name, a.exportDir, err)
	}
	a.write(fmt.Sprintf("%s\nSaved to %s (%d bytes).\n", caption, path, len(f.Data)))
	return nil
}

// writeNew writes data to a new file in dir named after name (its base
// name; "-1", "-2"… before the extension when taken) and returns its
// absolute path.
func writeNew(dir, name string, data []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	name = filepath.Base(filepath.Clean("/" + name))
	if name == "/" || name == "." {
		name = "recall-file"
	}
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 0; ; i++ {
		p := filepath.Join(dir, name)
		if i > 0 {
			p = filepath.Join(dir, fmt.Sprintf("%s-%d%s", stem, i, ext))
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) && i < 1000 {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(p)
			return "", err
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		return p, nil
	}
}

func (a *Adapter) write(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.clearThinkingLocked()
	a.writeLocked(s)
}

func (a *Adapter) writeLocked(s string) {
	if a.term != nil {
		_, _ = a.term.Write([]byte(s)) // "\n" becomes "\r\n" in raw mode
		return
	}
	io.WriteString(a.out, s)
}

// IfTerminal is WithTerminal when in is a terminal (an *os.File on a
// character device that term recognises), and nothing otherwise (a pipe,
// a file).
func IfTerminal(in io.Reader) Option {
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return func(*Adapter) {}
	}
	return WithTerminal(int(f.Fd()))
}
