package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// progress shows how far a long command got, on stderr: a bar redrawn in
// place on a terminal (at most ten times a second), plain lines at each
// tenth otherwise (a log, a pipe). Safe for concurrent use.
type progress struct {
	w     io.Writer
	label string
	tty   bool

	mu    sync.Mutex
	last  time.Time
	tenth int64 // the last tenth printed (plain lines)
	drawn bool
}

func newProgress(w io.Writer, label string) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, label: label, tty: ok && term.IsTerminal(int(f.Fd())), tenth: -1}
}

// set reports done of total units ("MiB" counts bytes, shown in MiB).
func (p *progress) set(done, total int64, unit string) {
	if total <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	shown := func(n int64) string {
		if unit == "MiB" {
			return fmt.Sprintf("%.1f", float64(n)/(1<<20))
		}
		return fmt.Sprint(n)
	}
	pct := done * 100 / total
	if p.tty {
		now := time.Now()
		if now.Sub(p.last) < 100*time.Millisecond && done < total {
			return
		}
		p.last = now
		const width = 30
		bar := strings.Repeat("#", int(pct*width/100)) + strings.Repeat(".", width-int(pct*width/100))
		fmt.Fprintf(p.w, "\r%s [%s] %3d%% %s/%s %s", p.label, bar, pct, shown(done), shown(total), unit)
		p.drawn = true
		return
	}
	if t := pct / 10; t > p.tenth {
		p.tenth = t
		fmt.Fprintf(p.w, "%s: %d%% (%s of %s %s)\n", p.label, pct, shown(done), shown(total), unit)
	}
}

// done ends the bar's line on a terminal.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

// readProgress reports how far into a file reading got.
type readProgress struct {
	r    io.ReaderAt
	size int64
	p    *progress

	mu  sync.Mutex
	max int64
}

func (r *readProgress) ReadAt(b []byte, off int64) (int, error) {
	n, err := r.r.ReadAt(b, off)
	r.mu.Lock()
	if end := off + int64(n); end > r.max {
		r.max = end
		r.p.set(end, r.size, "MiB")
	}
	r.mu.Unlock()
	return n, err
}
