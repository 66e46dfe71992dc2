package media

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// maxPDFText bounds the text kept of one PDF (bytes): a book-length
// document is stored up to here, the rest dropped with a note.
const maxPDFText = 4 << 20

// isPDF reports whether a document is a PDF, by its name, type or bytes.
func isPDF(name, mime string) bool {
	return strings.EqualFold(path.Ext(name), ".pdf") || strings.EqualFold(mime, "application/pdf")
}

// Bounds of the page tree walked (a hostile file's tree may loop: the
// reader's own Page(n) would then never return).
const (
	maxPDFPages = 5000
	maxPDFDepth = 32
)

// pageList lists the pages of a page tree in order, walking at most
// maxPDFDepth levels and maxPDFPages pages.
func pageList(root pdf.Value) []pdf.Page {
	var out []pdf.Page
	nodes := 0
	var walk func(v pdf.Value, depth int)
	walk = func(v pdf.Value, depth int) {
		if depth > maxPDFDepth || len(out) >= maxPDFPages || nodes > 4*maxPDFPages {
			return
		}
		nodes++
		switch v.Key("Type").Name() {
		case "Page":
			out = append(out, pdf.Page{V: v})
		case "Pages":
			kids := v.Key("Kids")
			for i := 0; i < kids.Len(); i++ {
				walk(kids.Index(i), depth+1)
			}
		}
	}
	walk(root, 0)
	return out
}

// errNoText is a PDF with no text to extract (scanned pages, images).
var errNoText = errors.New("no text")

// pdfText extracts a PDF's text, page after page (pdf.Reader, a pure-Go
// reader: text drawn with standard, embedded or ToUnicode-mapped fonts),
// at most maxPDFPages pages. It returns the pages' count. A damaged or
// encrypted file is an error; the reader's panics on hostile input are
// turned into errors. Not handled: text in images (scans), the layout of
// columns and tables (text comes in drawing order), CID fonts without a
// ToUnicode map (their text comes out garbled).
func pdfText(data []byte) (text string, pages int, err error) {
	defer func() {
		if r := recover(); r != nil {
			text, pages, err = "", 0, fmt.Errorf("the PDF is damaged (%v)", r)
		}
	}()
	if !bytes.HasPrefix(bytes.TrimLeft(data, "\x00\t\r\n "), []byte("%PDF-")) {
		return "", 0, errors.New("not a PDF")
	}
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", 0, fmt.Errorf("reading the PDF: %w", err)
	}
	list := pageList(r.Trailer().Key("Root").Key("Pages"))
	pages = len(list)
	var b strings.Builder
	for i, p := range list {
		if b.Len() >= maxPDFText {
			break
		}
		t, err := p.GetPlainText(nil) // each page's own fonts: "F1" may differ from page to page
		if err != nil {
			return "", pages, fmt.Errorf("reading page %d of the PDF: %w", i+1, err)
		}
		if t = strings.TrimSpace(strings.ToValidUTF8(t, "")); t != "" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(t)
		}
	}
	text = b.String()
	if len(text) > maxPDFText {
		cut := maxPDFText
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + fmt.Sprintf("\n[… the rest of the PDF was not kept: it is longer than %d MB of text]", maxPDFText>>20)
	}
	if strings.TrimSpace(text) == "" {
		return "", pages, errNoText
	}
	return text, pages, nil
}
