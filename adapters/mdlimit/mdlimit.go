// Package mdlimit bounds the work of parsing a Markdown reply. goldmark is
// super-linear on hostile input (thousands of "[a](" or nested "> " in one
// block: a 100 KB reply of them takes seconds), and an LLM reply is
// outside data. Pieces cuts a long reply into pieces parsed one at a time:
// at blank lines between blocks where it can, else at line ends, never
// inside a fenced code block; a single line longer than the limit is not
// parsed at all but shown as text. The renderers of the Telegram and
// WhatsApp adapters render each piece and join them with its Sep.
package mdlimit

import "strings"

// MaxPiece is the most Markdown (bytes) parsed at once, outside code
// blocks. Replies up to it are rendered as one document.
const MaxPiece = 4 << 10

// Piece is a part of a reply to render on its own.
type Piece struct {
	Text  string
	Sep   string // what joins it to the piece before: "", "\n" or "\n\n"
	Plain bool   // a line too long to parse: show it as text
}

// Pieces cuts md into pieces of at most max bytes (MaxPiece when max <= 0)
// except fenced code blocks, which stay whole (their content is not parsed
// as Markdown, so it costs linear time). md up to max is one piece.
// Concatenating the pieces with their Sep gives md back, except for the
// blank lines at the cuts.
func Pieces(md string, max int) []Piece {
	if max <= 0 {
		max = MaxPiece
	}
	if len(md) <= max {
		return []Piece{{Text: md}}
	}
	var (
		out     []Piece
		cur     strings.Builder
		sep     string
		pending string // blank lines after the last content line
		fence   string // the open fence ("```", "~~~~"), "" outside code
	)
	// joiner is the Sep of a piece starting now.
	joiner := func() string {
		switch {
		case len(out) == 0 && cur.Len() == 0:
			return ""
		case pending != "":
			return "\n\n"
		}
		return "\n"
	}
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, Piece{Text: strings.TrimRight(cur.String(), "\n"), Sep: sep})
			cur.Reset()
		}
	}
	for _, line := range strings.SplitAfter(md, "\n") {
		if line == "" {
			continue
		}
		trimmed := strings.TrimSpace(line)
		if fence != "" { // inside code: kept whole, whatever its size
			cur.WriteString(pending + line)
			pending = ""
			if f := fenceOf(trimmed); f != "" && f == trimmed && f[0] == fence[0] && len(f) >= len(fence) {
				fence = ""
			}
			continue
		}
		if trimmed == "" {
			if cur.Len() > 0 || len(out) > 0 {
				pending += line
			}
			continue
		}
		if len(line) > max {
			s := joiner()
			flush()
			out = append(out, Piece{Text: strings.TrimRight(line, "\n"), Sep: s, Plain: true})
			pending = ""
			continue
		}
		f := fenceOf(trimmed)
		if cur.Len() > 0 && (f != "" || cur.Len()+len(pending)+len(line) > max) {
			s := joiner()
			flush()
			sep, pending = s, ""
		} else if cur.Len() == 0 {
			sep, pending = joiner(), ""
		}
		cur.WriteString(pending + line)
		pending = ""
		fence = f
	}
	flush()
	return out
}

// fenceOf returns the fence a line opens or closes (three or more ` or ~),
// or "".
func fenceOf(line string) string {
	if len(line) < 3 || line[0] != '`' && line[0] != '~' {
		return ""
	}
	n := 0
	for n < len(line) && line[n] == line[0] {
		n++
	}
	if n < 3 {
		return ""
	}
	return line[:n]
}
