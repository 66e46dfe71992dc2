// Package mediatest makes hostile files for tests: small files that ask a
// parser for a core forever or for gigabytes (a PDF whose cross-reference
// table points back at itself, decompression bombs in PDF, PNG, JSON and
// zip form). They are generated, never stored.
package mediatest

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
)

// pdf writes a one-page PDF drawing content (FlateDecode, written by
// write) with a correct cross-reference table; trailer adds to the
// trailer's dictionary (%d: the table's offset).
func pdf(write func(io.Writer), trailer string) []byte {
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	write(w)
	_ = w.Close()
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.String()),
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	if strings.Contains(trailer, "%d") {
		trailer = fmt.Sprintf(trailer, xref)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R %s>>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, trailer, xref)
	return b.Bytes()
}

// TextPDF is a one-page PDF saying text.
func TextPDF(text string) []byte {
	return pdf(func(w io.Writer) { fmt.Fprintf(w, "BT /F1 12 Tf 72 720 Td (%s) Tj ET", text) }, "")
}

// LoopPDF is a PDF of under 1 KB whose cross-reference table's /Prev
// points back at itself: a reader following the chain never ends.
func LoopPDF() []byte {
	return pdf(func(w io.Writer) { io.WriteString(w, "BT /F1 12 Tf 72 720 Td (loop) Tj ET") }, "/Prev %d ")
}

// BombPDF is a PDF whose one page's compressed content draws inflated
// bytes of text (about 8 MB of file for a GB of text: compressed at
// zlib's fastest, twice the size of its best and ten times as quick to
// make, which counts under -race).
func BombPDF(inflated int) []byte {
	line := "(" + strings.Repeat("All work and no play makes Jack a dull boy. ", 20) + ") Tj\n"
	return pdf(func(w io.Writer) {
		io.WriteString(w, "BT /F1 12 Tf 72 720 Td\n")
		chunk := []byte(strings.Repeat(line, 1<<20/len(line)+1))
		for n := 0; n < inflated; n += len(chunk) {
			_, _ = w.Write(chunk)
		}
		io.WriteString(w, "ET")
	}, "")
}

// BombPNG is a black PNG of w×h pixels, RGBA at 8 bits a channel or 16
// when deep: a few hundred KB that decode to w×h×4 (or ×8) bytes.
func BombPNG(w, h int, deep bool) []byte {
	depth, bpp := byte(8), 4
	if deep {
		depth, bpp = 16, 8
	}
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
		crc := crc32.NewIEEE()
		crc.Write([]byte(typ))
		crc.Write(data)
		b.WriteString(typ)
		b.Write(data)
		_ = binary.Write(&b, binary.BigEndian, crc.Sum32())
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = depth, 6 // RGBA
	chunk("IHDR", ihdr)
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	row := make([]byte, 1+w*bpp) // filter 0, black transparent
	for range h {
		_, _ = zw.Write(row)
	}
	_ = zw.Close()
	chunk("IDAT", z.Bytes())
	chunk("IEND", nil)
	return b.Bytes()
}

// BombJSON is a Telegram Desktop export (result.json) whose messages list
// holds n empty objects: 3 bytes each, a few hundred in memory decoded
// whole.
func BombJSON(n int) []byte {
	var b bytes.Buffer
	b.Grow(40 + 3*n)
	b.WriteString(`{"name":"x","messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("{}")
	}
	b.WriteString("]}")
	return b.Bytes()
}

// BombZip is a WhatsApp export zip ("WhatsApp Chat with Bomb.zip") whose
// chat text inflates to size bytes of lines.
func BombZip(size int) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	f, _ := zw.Create("WhatsApp Chat with Bomb.txt")
	line := []byte(strings.Repeat("a", 79) + "\n")
	chunk := bytes.Repeat(line, 1<<20/len(line))
	for n := 0; n < size; n += len(chunk) {
		_, _ = f.Write(chunk[:min(len(chunk), size-n)])
	}
	_ = zw.Close()
	return b.Bytes()
}
