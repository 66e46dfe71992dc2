package format

import (
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

// Limit is Telegram's maximum message length: 4096 characters of text after
// entity parsing, counted in UTF-16 code units.
const Limit = 4096

// markdown is the parser: CommonMark, GFM tables, bare-URL links, task
// lists and our double-tilde-only strikethrough. It is safe for concurrent
// use: all parsing state lives in the per-call context.
var markdown = goldmark.New(goldmark.WithExtensions(
	extension.Table,
	extension.Linkify,
	extension.TaskList,
	strikethrough{},
))

const (
	thematicBreak = "──────────"
	bullet        = "• "
	quotePrefix   = "│ " // quote marker in plain text
)

// Render converts LLM Markdown to Telegram HTML (parse_mode=HTML). See the
// package documentation for the mapping and the guarantees.
func Render(md string) string {
	return render(md, true)
}

// Plain strips Markdown to readable plain text: the fallback when Telegram
// refuses the HTML ("can't parse entities"). Structure is kept as in Render
// (bullets, numbering, aligned tables); emphasis marks are dropped, links
// become "text (url)", quoted lines start with "│ ".
func Plain(md string) string {
	return render(md, false)
}

// render renders md piece by piece (mdlimit.Pieces): a long reply is not
// parsed as one document, so hostile Markdown costs linear time.
func render(md string, html bool) string {
	md = normalize(md)
	pieces := mdlimit.Pieces(md, mdlimit.MaxPiece)
	if len(pieces) == 1 && !pieces[0].Plain {
		return renderDoc(md, html)
	}
	var out []byte
	for _, p := range pieces {
		var s string
		switch {
		case !p.Plain:
			s = renderDoc(p.Text, html)
		case html:
			s = string(appendEscaped(nil, p.Text, false))
		default:
			s = p.Text
		}
		if s = strings.Trim(s, "\n"); s == "" {
			continue
		}
		if len(out) > 0 {
			out = append(out, p.Sep...)
		}
		out = append(out, s...)
	}
	return string(out)
}

// renderDoc renders md (normalized) parsed as one document.
func renderDoc(md string, html bool) string {
	src := []byte(md)
	doc := markdown.Parser().Parse(text.NewReader(src))
	r := &renderer{src: src, html: html, lineStart: true}
	r.block(doc)
	if !hasSolidText(r.out, html) && strings.TrimSpace(string(src)) != "" {
		// Nothing visible ("#", "[](javascript:x)"): show the source
		// rather than an empty message.
		r.out = r.out[:0]
		r.lineStart, r.indent, r.pending = true, "", 0
		r.text(strings.TrimSpace(string(src)))
	}
	return string(r.out)
}

// hasSolidText reports whether out shows a character that is not white
// space (tags are skipped in HTML; Render's text never holds a bare "<").
func hasSolidText(out []byte, html bool) bool {
	inTag := false
	for _, r := range string(out) {
		switch {
		case html && r == '<':
			inTag = true
		case html && r == '>':
			inTag = false
		case !inTag && !unicode.IsSpace(r):
			return true
		}
	}
	return false
}

// normalize makes the input valid UTF-8 without NUL bytes and with LF line
// endings, so that everything written downstream is valid for Telegram.
func normalize(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	if strings.IndexByte(s, '\r') >= 0 {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		s = strings.ReplaceAll(s, "\r", "\n")
	}
	return s
}

// inline formatting tags, deduplicated so that a tag never opens inside
// itself (**a **b** c**, bold inside a heading).
type inlineTag int

const (
	tagB inlineTag = iota
	tagI
	tagS
	tagCode
	nInlineTags
)

var inlineTags = [nInlineTags][2]string{
	tagB:    {"<b>", "</b>"},
	tagI:    {"<i>", "</i>"},
	tagS:    {"<s>", "</s>"},
	tagCode: {"<code>", "</code>"},
}

// element is an open tag. Tags are opened lazily: an element is written
// only when text is written inside it, so empty elements never appear.
type element struct {
	open, close string
	written     bool
}

type renderer struct {
	src  []byte
	html bool
	out  []byte

	stack     []element
	indent    string // written at the start of every content line
	lineStart bool   // the indent is due before the next content
	pending   int    // newlines due before the next content

	opened [nInlineTags]int
	link   int // inside a link: no nested links, no <code>
	quote  int // inside a blockquote: no nested blockquotes
}

// separate asks for n newlines before the next content (a block boundary).
// Nothing is written if no content follows, or if nothing precedes.
func (r *renderer) separate(n int) {
	r.pending = max(r.pending, n)
}

// flush writes what is due before content: pending newlines, the line's
// indent (if indent) and the opening tags not yet written.
func (r *renderer) flush(indent bool) {
	if r.pending > 0 {
		if len(r.out) > 0 {
			for range r.pending {
				r.out = append(r.out, '\n')
			}
			r.lineStart = true
		}
		r.pending = 0
	}
	if r.lineStart && indent {
		r.out = append(r.out, r.indent...)
		r.lineStart = false
	}
	for i := range r.stack {
		if !r.stack[i].written {
			r.out = append(r.out, r.stack[i].open...)
			r.stack[i].written = true
		}
	}
}

func (r *renderer) push(open, close string) {
	if !r.html {
		open, close = "", ""
	}
	r.stack = append(r.stack, element{open: open, close: close})
}

// pop closes the innermost element (if it was written).
func (r *renderer) pop() {
	e := r.stack[len(r.stack)-1]
	r.stack = r.stack[:len(r.stack)-1]
	if e.written {
		r.out = append(r.out, e.close...)
	}
}

// topWritten reports whether the innermost element has content.
func (r *renderer) topWritten() bool {
	return r.stack[len(r.stack)-1].written
}

func (r *renderer) openInline(t inlineTag) {
	if r.opened[t] == 0 {
		r.push(inlineTags[t][0], inlineTags[t][1])
	}
	r.opened[t]++
}

func (r *renderer) closeInline(t inlineTag) {
	r.opened[t]--
	if r.opened[t] == 0 {
		r.pop()
	}
}

// text writes s as text: escaped in HTML, each line indented.
func (r *renderer) text(s string) {
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			r.flush(true)
			r.escape(s)
			return
		}
		if i > 0 {
			r.flush(true)
			r.escape(s[:i])
		}
		r.newline()
		s = s[i+1:]
	}
}

// verbatim writes s as text without indenting its lines (code, tables):
// in HTML the content of <pre> is kept exactly; in plain text its lines
// are indented like any other (under a list item, inside a quote).
func (r *renderer) verbatim(s string) {
	if s == "" {
		return
	}
	if !r.html {
		r.text(s)
		return
	}
	r.flush(false)
	r.escape(s)
	r.lineStart = false
}

func (r *renderer) newline() {
	r.flush(false)
	r.out = append(r.out, '\n')
	r.lineStart = true
}

func (r *renderer) escape(s string) {
	if !r.html {
		r.out = append(r.out, s...)
		return
	}
	r.out = appendEscaped(r.out, s, false)
}

// appendEscaped appends s with &, < and > escaped, and " too if attr.
func appendEscaped(b []byte, s string, attr bool) []byte {
	last := 0
	for i := 0; i < len(s); i++ {
		var e string
		switch s[i] {
		case '&':
			e = "&amp;"
		case '<':
			e = "&lt;"
		case '>':
			e = "&gt;"
		case '"':
			if !attr {
				continue
			}
			e = "&quot;"
		default:
			continue
		}
		b = append(b, s[last:i]...)
		b = append(b, e...)
		last = i + 1
	}
	return append(b, s[last:]...)
}

// maxIndent bounds the indentation of nested lists and (in plain text)
// quotes, in characters: deeper levels are written at the same depth, so
// that absurd nesting cannot make the output quadratic.
const maxIndent = 24

// deepen adds s to the indentation, unless that exceeds maxIndent.
func (r *renderer) deepen(s string) {
	if utf8.RuneCountInString(r.indent)+utf8.RuneCountInString(s) <= maxIndent {
		r.indent += s
	}
}

// blocks renders the children of n as blocks separated by sep newlines.
func (r *renderer) blocks(n ast.Node, sep int) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if c != n.FirstChild() {
			r.separate(sep)
		}
		r.block(c)
	}
}

func (r *renderer) block(n ast.Node) {
	switch n := n.(type) {
	case *ast.Document:
		r.blocks(n, 2)
	case *ast.Paragraph, *ast.TextBlock:
		r.inlines(n)
	case *ast.Heading:
		r.openInline(tagB)
		r.inlines(n)
		r.closeInline(tagB)
	case *ast.ThematicBreak:
		r.text(thematicBreak)
	case *ast.CodeBlock:
		r.code(n, "")
	case *ast.FencedCodeBlock:
		r.code(n, string(n.Language(r.src)))
	case *ast.HTMLBlock:
		var b strings.Builder
		r.lines(&b, n)
		if n.HasClosure() {
			b.Write(n.ClosureLine.Value(r.src))
		}
		r.text(strings.TrimRight(b.String(), "\n"))
	case *ast.Blockquote:
		r.blockquote(n)
	case *ast.List:
		r.list(n)
	case *east.Table:
		r.table(n)
	default:
		if n.Type() == ast.TypeBlock {
			r.blocks(n, 2)
		} else {
			r.inline(n)
		}
	}
}

func (r *renderer) code(n ast.Node, lang string) {
	var b strings.Builder
	r.lines(&b, n)
	content := strings.TrimRight(b.String(), "\n")
	if strings.TrimSpace(content) == "" {
		return
	}
	saved := r.indent
	if r.html {
		r.indent = "" // <pre> content is kept exactly
	}
	r.push("<pre>", "</pre>")
	if lang = safeLanguage(lang); lang != "" {
		r.push(`<code class="language-`+lang+`">`, "</code>")
	}
	r.verbatim(content)
	if lang != "" {
		r.pop()
	}
	r.pop()
	r.indent = saved
}

// lines writes the source lines of block n to b.
func (r *renderer) lines(b *strings.Builder, n ast.Node) {
	lines := n.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		b.Write(seg.Value(r.src))
	}
}

// safeLanguage returns lang if it is a plausible language name, "" if not.
func safeLanguage(lang string) string {
	if lang == "" || len(lang) > 32 {
		return ""
	}
	for i := 0; i < len(lang); i++ {
		c := lang[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '_' || c == '-' || c == '+' || c == '#' || c == '.') {
			return ""
		}
	}
	return lang
}

func (r *renderer) blockquote(n *ast.Blockquote) {
	if n.FirstChild() == nil {
		r.text(">") // a lone ">" is text, not an empty quote
		return
	}
	saved := r.indent
	if r.html {
		// Telegram has no nested blockquotes: inner ones are flattened.
		if r.quote == 0 {
			r.push("<blockquote>", "</blockquote>")
		}
		r.indent = ""
	} else {
		r.deepen(quotePrefix)
	}
	r.quote++
	r.blocks(n, 2)
	r.quote--
	if r.html && r.quote == 0 {
		r.pop()
	}
	r.indent = saved
}

func (r *renderer) list(n *ast.List) {
	sep := 1
	if !n.IsTight {
		sep = 2
	}
	num := n.Start
	for item := n.FirstChild(); item != nil; item = item.NextSibling() {
		if item != n.FirstChild() {
			r.separate(sep)
		}
		marker := bullet
		if n.IsOrdered() {
			marker = strconv.Itoa(num) + ". "
			num++
		}
		r.text(marker)
		saved := r.indent
		r.deepen(strings.Repeat(" ", utf8.RuneCountInString(marker)))
		r.blocks(item, sep)
		r.indent = saved
	}
}

func (r *renderer) table(n *east.Table) {
	var rows [][]string
	for row := n.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []string
		for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
			sub := &renderer{src: r.src, lineStart: true}
			sub.inlines(cell)
			s := strings.ReplaceAll(string(sub.out), "\n", " ")
			cells = append(cells, strings.TrimSpace(s))
		}
		rows = append(rows, cells)
	}
	r.verbatimBlock(formatTable(rows, n.Alignments))
}

// verbatimBlock writes s as a <pre> block (plain text in Plain).
func (r *renderer) verbatimBlock(s string) {
	if strings.TrimSpace(s) == "" {
		return
	}
	saved := r.indent
	if r.html {
		r.indent = "" // <pre> content is kept exactly
	}
	r.push("<pre>", "</pre>")
	r.verbatim(s)
	r.pop()
	r.indent = saved
}

// formatTable lays rows out in aligned columns separated by " | ", with a
// rule under the header row.
func formatTable(rows [][]string, aligns []east.Alignment) string {
	cols := 0
	for _, row := range rows {
		cols = max(cols, len(row))
	}
	widths := make([]int, cols)
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], displayWidth(cell))
		}
	}
	var b strings.Builder
	line := func(row []string) {
		var l strings.Builder
		for i := range cols {
			if i > 0 {
				l.WriteString(" | ")
			}
			cell := ""
			if i < len(row) {
				cell = row[i]
			}
			gap := widths[i] - displayWidth(cell)
			align := east.AlignNone
			if i < len(aligns) {
				align = aligns[i]
			}
			left := 0
			switch align {
			case east.AlignRight:
				left = gap
			case east.AlignCenter:
				left = gap / 2
			}
			l.WriteString(strings.Repeat(" ", left))
			l.WriteString(cell)
			l.WriteString(strings.Repeat(" ", gap-left))
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
	}
	for i, row := range rows {
		if i > 0 {
			b.WriteByte('\n')
		}
		line(row)
		if i == 0 && len(rows) > 0 {
			b.WriteByte('\n')
			for j := range cols {
				if j > 0 {
					b.WriteString("-+-")
				}
				b.WriteString(strings.Repeat("-", max(widths[j], 1)))
			}
		}
	}
	return b.String()
}

func (r *renderer) inlines(n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.inline(c)
	}
}

func (r *renderer) inline(n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		v := n.Segment.Value(r.src)
		if n.IsRaw() {
			r.text(string(v))
		} else {
			r.text(decode(v))
		}
		if n.SoftLineBreak() || n.HardLineBreak() {
			r.newline()
		}
	case *ast.String:
		if n.IsCode() || n.IsRaw() {
			r.text(string(n.Value))
		} else {
			r.text(decode(n.Value))
		}
	case *ast.CodeSpan:
		r.codeSpan(n)
	case *ast.Emphasis:
		t := tagI
		if n.Level >= 2 {
			t = tagB
		}
		r.openInline(t)
		r.inlines(n)
		r.closeInline(t)
	case *east.Strikethrough:
		r.openInline(tagS)
		r.inlines(n)
		r.closeInline(tagS)
	case *ast.Link:
		r.linkTo(string(util.URLEscape(n.Destination, true)), func() { r.inlines(n) })
	case *ast.Image:
		r.linkTo(string(util.URLEscape(n.Destination, true)), func() { r.inlines(n) })
	case *ast.AutoLink:
		url := string(util.URLEscape(n.URL(r.src), false))
		if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(url), "mailto:") {
			url = "mailto:" + url
		}
		label := string(n.Label(r.src))
		if !r.html {
			r.text(label) // the label is the URL already
			return
		}
		r.linkTo(url, func() { r.text(label) })
	case *ast.RawHTML:
		for i := range n.Segments.Len() {
			seg := n.Segments.At(i)
			r.text(string(seg.Value(r.src)))
		}
	case *east.TaskCheckBox:
		if n.IsChecked {
			r.text("☑ ")
		} else {
			r.text("☐ ")
		}
	default:
		r.inlines(n)
	}
}

func (r *renderer) codeSpan(n *ast.CodeSpan) {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			v := c.Segment.Value(r.src)
			if len(v) > 0 && v[len(v)-1] == '\n' {
				b.Write(v[:len(v)-1])
				b.WriteByte(' ')
			} else {
				b.Write(v)
			}
		case *ast.String:
			b.Write(c.Value)
		}
	}
	s := b.String()
	if r.link > 0 {
		// Telegram does not allow <code> inside <a>.
		r.text(s)
		return
	}
	r.openInline(tagCode)
	r.text(s)
	r.closeInline(tagCode)
}

// linkTo renders content as a link to url, or as plain content when the
// URL's scheme is not allowed or when already inside a link. In Plain, the
// URL follows the text in parentheses unless the text is the URL.
func (r *renderer) linkTo(url string, content func()) {
	if !safeURL(url) || r.link > 0 {
		r.link++
		content()
		r.link--
		return
	}
	if !r.html {
		r.flush(true)
		start := len(r.out)
		r.link++
		content()
		r.link--
		label := string(r.out[start:])
		if label == "" {
			r.text(url)
		} else if label != url && label != strings.TrimPrefix(url, "mailto:") {
			r.text(" (" + url + ")")
		}
		return
	}
	r.push(`<a href="`+string(appendEscaped(nil, url, true))+`">`, "</a>")
	r.link++
	content()
	r.link--
	if !r.topWritten() {
		r.text(url) // an empty link shows its URL
	}
	r.pop()
}

// safeURL reports whether a link to url may be kept: http and https with a
// host, tg and mailto.
func safeURL(url string) bool {
	i := strings.IndexByte(url, ':')
	if i <= 0 {
		return false
	}
	rest := url[i+1:]
	switch strings.ToLower(url[:i]) {
	case "http", "https":
		return len(rest) > 2 && strings.HasPrefix(rest, "//") && rest[2] != '/'
	case "tg", "mailto":
		return rest != ""
	}
	return false
}

// decode returns the text a Markdown text segment stands for: backslash
// escapes of punctuation removed, entity and numeric character references
// resolved (as goldmark's HTML writer does), NUL replaced by U+FFFD.
func decode(v []byte) string {
	if !hasAny(v, "\\&\x00") {
		return string(v)
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v) && util.IsPunct(v[i+1]):
			b.WriteByte(v[i+1])
			i++
		case c == 0:
			b.WriteString("\uFFFD")
		case c == '&':
			if s, n := reference(v[i:]); n > 0 {
				b.WriteString(s)
				i += n - 1
			} else {
				b.WriteByte(c)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func hasAny(v []byte, chars string) bool {
	for _, c := range v {
		if strings.IndexByte(chars, c) >= 0 {
			return true
		}
	}
	return false
}

// reference resolves the character reference at the start of v ("&amp;",
// "&#123;", "&#x1F600;") and returns its text and length, or 0 if there is
// none.
func reference(v []byte) (string, int) {
	if len(v) < 3 || v[0] != '&' {
		return "", 0
	}
	if v[1] == '#' {
		i, base, maxDigits := 2, 10, 7
		if v[2] == 'x' || v[2] == 'X' {
			i, base, maxDigits = 3, 16, 6
		}
		start := i
		for i < len(v) && i-start <= maxDigits && isDigit(v[i], base) {
			i++
		}
		if i == start || i-start > maxDigits || i >= len(v) || v[i] != ';' {
			return "", 0
		}
		n, err := strconv.ParseUint(string(v[start:i]), base, 32)
		if err != nil {
			return "", 0
		}
		return string(util.ToValidRune(rune(n))), i + 1
	}
	i := 1
	for i < len(v) && util.IsAlphaNumeric(v[i]) {
		i++
	}
	if i == 1 || i >= len(v) || v[i] != ';' {
		return "", 0
	}
	e, ok := util.LookUpHTML5EntityByName(string(v[1:i]))
	if !ok {
		return "", 0
	}
	return string(e.Characters), i + 1
}

func isDigit(c byte, base int) bool {
	if '0' <= c && c <= '9' {
		return true
	}
	return base == 16 && ('a' <= c && c <= 'f' || 'A' <= c && c <= 'F')
}
