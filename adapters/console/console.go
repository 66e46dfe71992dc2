// Package console is the terminal chat: it reads lines from stdin and prints
// replies to stdout, as the user console:local, through the same stages as
// every other channel. It works interactively and from a pipe (scripts): each
// line is answered before the next is read, and end of input ends the chat.
package console

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// Key is the terminal conversation.
var Key = pipeline.Key{Channel: "console", Chat: "local"}

// maxLine is the longest line read (a longer one is cut, never a crash).
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

// Run reads and answers lines until end of input, "/quit", or ctx ends.
func (a *Adapter) Run(ctx context.Context) error {
	lines := make(chan string)
	errc := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(a.in)
		sc.Buffer(make([]byte, 64*1024), maxLine)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		errc <- sc.Err()
		close(lines)
	}()
	a.printPrompt()
	for {
		select {
		case <-ctx.Done():
			return nil
		case line, ok := <-lines:
			if !ok {
				err := <-errc
				if err == bufio.ErrTooLong {
					a.write("(That line was longer than 1 MB and could not be read.)\n")
				}
				return nil
			}
			text := strings.TrimSpace(line)
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
