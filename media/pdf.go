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

// errNoText is a PDF with no text to extract (scanned pages, images).
var errNoText = errors.New("no text")

// pdfText extracts a PDF's text, page after page (pdf.Reader, a pure-Go
// reader: text drawn with standard, embedded or ToUnicode-mapped fonts).
// It returns the pages' count. A damaged or encrypted file is an error;
// the reader's panics on hostile input are turned into errors.
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
	pages = r.NumPage()
	var b strings.Builder
	for i := 1; i <= pages && b.Len() < maxPDFText; i++ {
		p := r.Page(i)
		if p.V.IsNull() {
			continue
		}
		t, err := p.GetPlainText(nil) // each page's own fonts: "F1" may differ from page to page
		if err != nil {
			return "", pages, fmt.Errorf("reading page %d of the PDF: %w", i, err)
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
