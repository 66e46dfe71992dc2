// Package console is the terminal chat: it reads lines from stdin and prints
// replies to stdout, as the user console:local, through the same stages as
// every other channel. It works interactively and from a pipe (scripts): each
// line is answered before the next is read, and end of input ends the chat.
package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/recallbot/recall/pipeline"
)

// Key is the terminal conversation.
var Key = pipeline.Key{Channel: "console", Chat: "local"}

// maxLine is the longest line read, in bytes (a longer one is cut, never a
// crash).
const maxLine = 1 << 20

// Adapter is the terminal channel.
type Adapter struct {
	in     io.Reader
	out    io.Writer
	h      pipeline.Handler
	prompt bool // print "> " (interactive)
	mu     sync.Mutex
	seq    int64
}

var _ pipeline.Sender = (*Adapter)(nil)
var _ pipeline.FileSender = (*Adapter)(nil)

// New returns a console adapter running turns through h. prompt prints a
// "> " prompt before each line (for a terminal, not for a pipe).
func New(in io.Reader, out io.Writer, h pipeline.Handler, prompt bool) *Adapter {
	return &Adapter{in: in, out: out, h: h, prompt: prompt}
}

// Run reads and answers lines until end of input, "/quit", or ctx ends. A
// line longer than 1 MB is cut to its first 1 MB (the user is told) and
// answered; reading goes on with the next line. A read error other than end
// of input is returned.
func (a *Adapter) Run(ctx context.Context) error {
	type line struct {
		text string
		cut  bool
	}
	lines := make(chan line)
	errc := make(chan error, 1)
	go func() {
		defer close(lines)
		r := bufio.NewReaderSize(a.in, 64*1024)
		for {
			text, cut, err := readLine(r)
			if err != nil {
				errc <- err
				return
			}
			select {
			case lines <- line{text, cut}:
			case <-ctx.Done():
				return
			}
		}
	}()
	a.printPrompt()
	for {
		select {
		case <-ctx.Done():
			return nil
		case l, ok := <-lines:
			if !ok {
				select {
				case err := <-errc:
					if !errors.Is(err, io.EOF) {
						return fmt.Errorf("reading the terminal: %w", err)
					}
				default:
				}
				return nil
			}
			if l.cut {
				a.write("(That line was longer than 1 MB; only its first 1 MB was read.)\n")
			}
			text := strings.TrimSpace(l.text)
			if text == "" {
				a.printPrompt()
				continue
			}
			if text == "/quit" || text == "/exit" {
				return nil
			}
			a.turn(ctx, text)
			a.printPrompt()
		}
	}
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
		// Drop a rune split by the cut.
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
			if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
				break
			}
			b = b[:len(b)-1]
		}
	}
	return string(b), cut, nil
}

func (a *Adapter) printPrompt() {
	if a.prompt {
		a.write("> ")
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
	t := &pipeline.Turn{In: in, Out: a}
	if err := a.h.Handle(ctx, t); err != nil {
		// The user has been told what they need to know by the stage that failed.
		_ = err
	}
}

// Send prints a message.
func (a *Adapter) Send(_ context.Context, out pipeline.Outbound) (string, error) {
	out = pipeline.WithChoices(a, out)
	a.write(strings.TrimRight(out.Text, "\n") + "\n")
	return "", nil
}

// SendFile writes a file's content with a header (in a terminal the user can
// redirect it; `bot export` is the better way to save it).
func (a *Adapter) SendFile(_ context.Context, _ pipeline.Key, f pipeline.File, caption string) error {
	a.write(fmt.Sprintf("%s\n--- %s (%d bytes) ---\n%s\n--- end of %s ---\n", caption, f.Name, len(f.Data), f.Data, f.Name))
	return nil
}

func (a *Adapter) write(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	io.WriteString(a.out, s)
}
