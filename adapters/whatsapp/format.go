package whatsapp

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/recallbot/recall/adapters/mdlimit"
)

// WhatsApp formatting: *bold*, _italic_, ~strike~ and ```monospace```. A
// marker only formats at a word boundary (an opening one after a space or
// punctuation and before a non-space, a closing one the other way round)
// and within one line; there is no escape character.
//
// The renderer turns Markdown into text where every character carries its
// style; markers are written only when the text is composed (compose),
// so a part cut from a long reply closes its open spans at its end and
// reopens them at the start of the next part.

// style is a set of WhatsApp formats.
type style uint8

const (
	bold style = 1 << iota
	italic
	strike
	mono
)

// openOrder is the order in which styles are opened at one position
// (monospace innermost: nothing is formatted inside it).
var openOrder = []style{bold, italic, strike, mono}

func (s style) marker() string {
	switch s {
	case bold:
		return "*"
	case italic:
		return "_"
	case strike:
		return "~"
	case mono:
		return "```"
	}
	return ""
}

// wordJoiner is an invisible character put around a literal marker
// character so it is at no word boundary and formats nothing.
const wordJoiner = '\u2060'

// doc is rendered text: each rune with its style. lit marks literal
// marker characters (from the user's text, not meant as formatting), which
// guard makes inert once the whole text is known.
type doc struct {
	r   []rune
	st  []style
	lit []bool
}

// markdown parses the model's Markdown. Linkify makes bare URLs ("https://…",
// "www.…") links, so they are kept verbatim: their "_", "*", "~" and
// parentheses are never read as formatting.
var markdown = goldmark.New(goldmark.WithExtensions(extension.Strikethrough, extension.Table, extension.TaskList, extension.Linkify))

// formatMarkdown renders Markdown as WhatsApp text in parts of at most
// limit characters (runes).
func formatMarkdown(md string, limit int) []string {
	return split(renderMarkdown(md), limit)
}

// formatPlain renders text as it is, its marker characters made inert, in
// parts of at most limit characters.
func formatPlain(s string, limit int) []string {
	var d doc
	d.add(s, 0, true)
	return split(d.guard(), limit)
}

// add appends s in style st; literal marks its marker characters as text.
func (d *doc) add(s string, st style, literal bool) {
	for _, r := range s {
		d.r = append(d.r, r)
		d.st = append(d.st, st)
		d.lit = append(d.lit, literal && isMarkerChar(r))
	}
}

// guard returns d with its literal marker characters made inert: one next
// to a boundary (space, punctuation, start or end, another marker, a change
// of style) gets a word joiner on each side, so it neither opens nor closes
// a span. Inside a word of one style ("snake_case", "2*3") it cannot format
// and stays as it is, except "`", which is always guarded.
func (d doc) guard() doc {
	var out doc
	n := len(d.r)
	word := func(i, j int) bool { // rune j is a word rune in the style of rune i
		return j >= 0 && j < n && d.st[j] == d.st[i] && isWordRune(d.r[j])
	}
	for i, c := range d.r {
		if !d.lit[i] || c != '`' && word(i, i-1) && word(i, i+1) {
			out.r = append(out.r, c)
			out.st = append(out.st, d.st[i])
			continue
		}
		out.r = append(out.r, wordJoiner, c, wordJoiner)
		out.st = append(out.st, d.st[i], d.st[i], d.st[i])
	}
	return out
}

// renderer walks a goldmark tree into a doc.
type renderer struct {
	src    []byte
	d      doc
	cur    style
	prefix []string // line prefixes: "> " of quotes, the indentation of list items
}

// renderMarkdown parses md and renders it, piece by piece
// (mdlimit.Pieces): a long reply is not parsed as one document, so hostile
// Markdown costs linear time.
func renderMarkdown(md string) doc {
	var d doc
	for _, p := range mdlimit.Pieces(md, mdlimit.MaxPiece) {
		var pd doc
		if p.Plain {
			pd.add(p.Text, 0, true)
		} else {
			src := []byte(p.Text)
			root := markdown.Parser().Parse(text.NewReader(src))
			if guarded, ok := guardURLs(src, root); ok {
				src = guarded
				root = markdown.Parser().Parse(text.NewReader(src))
			}
			r := &renderer{src: src}
			r.blocks(root, "\n\n")
			pd = r.d
		}
		if len(pd.r) == 0 {
			continue
		}
		if len(d.r) > 0 {
			d.add(p.Sep, 0, false)
		}
		d.r, d.st, d.lit = append(d.r, pd.r...), append(d.st, pd.st...), append(d.lit, pd.lit...)
	}
	return d.guard()
}

// bareURL finds a bare URL with its scheme, after a space, "(" or the
// start of a line, up to the next space.
var bareURL = regexp.MustCompile(`(?m)(?:^|[\s(])(https?://[^\s<>]+)`)

// guardURLs makes every bare "http(s)://" URL of src outside code, HTML
// and links an autolink ("<url>"), up to the next space, so that all of
// it is kept as written: Linkify alone stops a link at "*", "_", "~" or
// an unbalanced ")" and leaves the rest to be read as formatting
// ("…/)__x__" would turn bold). WhatsApp only gets text and finds links
// itself, so what matters is that the characters arrive unchanged. It
// reports false when there is nothing to change.
func guardURLs(src []byte, root ast.Node) ([]byte, bool) {
	ms := bareURL.FindAllSubmatchIndex(src, -1)
	if ms == nil {
		return nil, false
	}
	// Where a URL is not to be touched: code, HTML, link labels.
	var skip [][2]int
	addLines := func(n ast.Node) {
		ls := n.Lines()
		for i := range ls.Len() {
			seg := ls.At(i)
			skip = append(skip, [2]int{seg.Start, seg.Stop})
		}
	}
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.CodeBlock, *ast.FencedCodeBlock, *ast.HTMLBlock:
			addLines(n)
			return ast.WalkSkipChildren, nil
		case *ast.CodeSpan, *ast.Link, *ast.Image:
			_ = ast.Walk(n, func(c ast.Node, in bool) (ast.WalkStatus, error) {
				if t, ok := c.(*ast.Text); ok && in {
					skip = append(skip, [2]int{t.Segment.Start, t.Segment.Stop})
				}
				return ast.WalkContinue, nil
			})
			return ast.WalkSkipChildren, nil
		case *ast.RawHTML:
			for i := range n.Segments.Len() {
				seg := n.Segments.At(i)
				skip = append(skip, [2]int{seg.Start, seg.Stop})
			}
		}
		return ast.WalkContinue, nil
	})
	inSkip := func(i int) bool {
		for _, r := range skip {
			if i >= r[0] && i < r[1] {
				return true
			}
		}
		return false
	}
	var out []byte
	last, changed := 0, false
	for _, m := range ms {
		start, end := m[2], m[3]
		if inSkip(start) || start >= 2 && string(src[start-2:start]) == "](" {
			continue
		}
		out = append(out, src[last:start]...)
		out = append(out, '<')
		out = append(out, src[start:end]...)
		out = append(out, '>')
		last, changed = end, true
	}
	if !changed {
		return nil, false
	}
	return append(out, src[last:]...), true
}

// write appends literal text in the current style (its marker characters
// are guarded).
func (r *renderer) write(s string) { r.emit(s, nil, true) }

// raw appends s as it is (bullets, code).
func (r *renderer) raw(s string) { r.emit(s, nil, false) }

// url appends a link's address as it is written, but for its backticks:
// no address holds one unescaped, and a run of them would open monospace,
// so they are guarded.
func (r *renderer) url(s string) {
	for _, c := range s {
		r.d.add(string(c), r.cur, c == '`')
	}
}

// emit appends s in the current style, each line passed through esc when it
// is not nil; after each newline the line prefixes are written.
func (r *renderer) emit(s string, esc func(string) string, literal bool) {
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			r.d.add("\n", r.cur, false)
			pst := style(0)
			if r.cur&mono != 0 {
				pst = r.cur
			}
			r.d.add(strings.Join(r.prefix, ""), pst, false)
		}
		if esc != nil {
			line = esc(line)
		}
		r.d.add(line, r.cur, literal)
	}
}

// with runs f with st added to the current style.
func (r *renderer) with(st style, f func()) {
	old := r.cur
	r.cur |= st
	f()
	r.cur = old
}

// blocks renders the block children of parent, sep between them.
func (r *renderer) blocks(parent ast.Node, sep string) {
	first := true
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		if !first {
			r.raw(sep)
		}
		first = false
		r.block(n)
	}
}

func (r *renderer) block(n ast.Node) {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		r.inlines(n)
	case *ast.Heading:
		r.with(bold, func() { r.inlines(n) })
	case *ast.ThematicBreak:
		r.raw("———")
	case *ast.CodeBlock, *ast.FencedCodeBlock:
		r.with(mono, func() { r.emit(strings.TrimRight(r.lines(n), "\n"), escapeCode, false) })
	case *ast.HTMLBlock:
		s := r.lines(n)
		if n.HasClosure() {
			s += string(n.ClosureLine.Value(r.src))
		}
		r.write(strings.TrimRight(s, "\n"))
	case *ast.Blockquote:
		r.raw("> ")
		r.prefix = append(r.prefix, "> ")
		r.blocks(n, "\n\n")
		r.prefix = r.prefix[:len(r.prefix)-1]
	case *ast.List:
		r.list(n)
	case *east.Table:
		r.table(n)
	default:
		if n.HasChildren() {
			r.blocks(n, "\n\n")
		} else {
			r.write(strings.TrimRight(r.lines(n), "\n"))
		}
	}
}

// lines is the raw text of a block's lines.
func (r *renderer) lines(n ast.Node) string {
	var b bytes.Buffer
	ls := n.Lines()
	for i := range ls.Len() {
		seg := ls.At(i)
		b.Write(seg.Value(r.src))
	}
	return b.String()
}

// list renders items as "• item" or "3. item"; the lines of an item are
// indented under its text.
func (r *renderer) list(l *ast.List) {
	sep := "\n"
	if !l.IsTight {
		sep = "\n\n"
	}
	i := 0
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		if i > 0 {
			r.raw(sep)
		}
		bullet := "• "
		if l.IsOrdered() {
			bullet = strconv.Itoa(l.Start+i) + ". "
		}
		r.raw(bullet)
		r.prefix = append(r.prefix, strings.Repeat(" ", utf8.RuneCountInString(bullet)))
		r.blocks(item, sep)
		r.prefix = r.prefix[:len(r.prefix)-1]
		i++
	}
}

// table renders each row on a line, cells separated by " | ", the header
// bold.
func (r *renderer) table(t *east.Table) {
	first := true
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		if !first {
			r.raw("\n")
		}
		first = false
		st := style(0)
		if _, ok := row.(*east.TableHeader); ok {
			st = bold
		}
		r.with(st, func() {
			for c := row.FirstChild(); c != nil; c = c.NextSibling() {
				if c != row.FirstChild() {
					r.raw(" | ")
				}
				r.inlines(c)
			}
		})
	}
}

func (r *renderer) inlines(parent ast.Node) {
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		r.inline(n)
	}
}

func (r *renderer) inline(n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		r.write(unescape(n.Segment.Value(r.src)))
		if n.HardLineBreak() || n.SoftLineBreak() {
			r.raw("\n")
		}
	case *ast.String:
		if n.IsCode() || n.IsRaw() {
			r.write(string(n.Value))
		} else {
			r.write(unescape(n.Value))
		}
	case *ast.CodeSpan:
		var b bytes.Buffer
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				b.Write(c.Segment.Value(r.src))
			case *ast.String:
				b.Write(c.Value)
			}
		}
		code := strings.ReplaceAll(b.String(), "\n", " ")
		if strings.TrimSpace(code) == "" {
			r.write(code)
			return
		}
		r.with(mono, func() { r.emit(code, escapeCode, false) })
	case *ast.Emphasis:
		if name, ok := r.dunder(n); ok {
			r.write(name)
			return
		}
		st := italic
		if n.Level >= 2 {
			st = bold
		}
		r.with(st, func() { r.inlines(n) })
	case *east.Strikethrough:
		r.with(strike, func() { r.inlines(n) })
	case *ast.Link:
		dest := string(n.Destination)
		label := plainText(n, r.src)
		r.inlines(n)
		if dest != "" && !sameLink(label, dest) {
			if label == "" {
				r.url(dest)
			} else {
				r.raw(" (")
				r.url(dest)
				r.raw(")")
			}
		}
	case *ast.Image:
		dest := string(n.Destination)
		label := plainText(n, r.src)
		r.inlines(n)
		if dest != "" {
			if label == "" {
				r.url(dest)
			} else {
				r.raw(" (")
				r.url(dest)
				r.raw(")")
			}
		}
	case *ast.AutoLink:
		// As written: a bare "www.…" gets no "http://", an e-mail no
		// "mailto:".
		r.url(string(n.Label(r.src)))
	case *ast.RawHTML:
		var b bytes.Buffer
		for i := range n.Segments.Len() {
			seg := n.Segments.At(i)
			b.Write(seg.Value(r.src))
		}
		if s := strings.ToLower(b.String()); s == "<br>" || s == "<br/>" || s == "<br />" {
			r.raw("\n")
			return
		}
		r.write(b.String())
	case *east.TaskCheckBox:
		if n.IsChecked {
			r.raw("☑ ")
		} else {
			r.raw("☐ ")
		}
	default:
		r.inlines(n)
	}
}

// dunder recognises a Python-style name that Markdown reads as bold:
// "__init__.py", "__init__(self)" (two underscores around one identifier,
// right before an extension or a call). It returns the name as written.
func (r *renderer) dunder(n *ast.Emphasis) (string, bool) {
	first, ok1 := n.FirstChild().(*ast.Text)
	last, ok2 := n.LastChild().(*ast.Text)
	if n.Level != 2 || !ok1 || !ok2 {
		return "", false
	}
	start, stop := first.Segment.Start, last.Segment.Stop
	if start < 2 || stop+2 > len(r.src) || string(r.src[start-2:start]) != "__" || string(r.src[stop:stop+2]) != "__" {
		return "", false
	}
	name := string(r.src[start:stop])
	for _, c := range name {
		if c != '_' && !isWordRune(c) {
			return "", false
		}
	}
	rest := r.src[stop+2:]
	if len(rest) > 0 && rest[0] == '(' || len(rest) > 1 && rest[0] == '.' && isWordRune(rune(rest[1])) {
		return "__" + name + "__", true
	}
	return "", false
}

// unescape resolves backslash escapes and character references as a
// Markdown renderer does; NUL becomes U+FFFD.
func unescape(v []byte) string {
	v = util.UnescapePunctuations(v)
	v = util.ResolveNumericReferences(v)
	v = util.ResolveEntityNames(v)
	return strings.ReplaceAll(string(v), "\x00", "\uFFFD")
}

// plainText is the text of n's descendants, without formatting.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.WriteString(unescape(c.Segment.Value(src)))
		case *ast.String:
			b.Write(c.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// sameLink reports whether a link's label already shows its destination.
func sameLink(label, dest string) bool {
	trim := func(s string) string {
		s = strings.TrimPrefix(s, "mailto:")
		s = strings.TrimPrefix(s, "https://")
		s = strings.TrimPrefix(s, "http://")
		return strings.TrimSuffix(s, "/")
	}
	return label == dest || trim(label) == trim(dest)
}

// isMarkerChar reports whether WhatsApp may read c as a format marker.
func isMarkerChar(c rune) bool { return c == '*' || c == '_' || c == '~' || c == '`' }

func isWordRune(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) }

// escapeCode keeps code as it is, except that a run of three backticks,
// which would end the monospace span, is broken with a word joiner, and a
// backtick at either end is kept apart from the span's own markers.
func escapeCode(s string) string {
	if !strings.Contains(s, "`") {
		return s
	}
	var b strings.Builder
	if strings.HasPrefix(s, "`") {
		b.WriteRune(wordJoiner)
	}
	ticks := 0
	for _, c := range s {
		if c == '`' {
			if ticks == 2 {
				b.WriteRune(wordJoiner)
				ticks = 0
			}
			ticks++
		} else {
			ticks = 0
		}
		b.WriteRune(c)
	}
	if strings.HasSuffix(s, "`") {
		b.WriteRune(wordJoiner)
	}
	return b.String()
}
