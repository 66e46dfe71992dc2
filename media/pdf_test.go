package media_test

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/media"
	"github.com/recallbot/recall/pipeline"
)

// makePDF writes a PDF whose pages draw the given content streams
// (FlateDecode) in Helvetica, with a correct cross-reference table.
func makePDF(t *testing.T, pages ...string) []byte { return buildPDF("", 0, pages...) }

// buildPDF is makePDF with extra kids first in the page tree's root and,
// when count > 0, the root's /Count.
func buildPDF(extraKids string, count int, pages ...string) []byte {
	var objs []string
	kids := make([]string, len(pages))
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	objs = append(objs,
		"<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [%s%s] /Count %d >>", extraKids, strings.Join(kids, " "), max(count, len(pages))),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	for i, content := range pages {
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		w.Write([]byte(content))
		w.Close()
		objs = append(objs,
			fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i),
			fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.String()))
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
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// A PDF's text is read (Tj and TJ, page after page) into the message; one
// with no text, a damaged one and one over the limit get a clear answer.
func TestPDFDocuments(t *testing.T) {
	lease := makePDF(t,
		"BT /F1 12 Tf 72 720 Td (Lease agreement) Tj ET\nBT /F1 12 Tf 72 700 Td [(Rent: 9) -20 (00 EUR a month)] TJ ET",
		"BT /F1 12 Tf 72 720 Td (Deposit: two months) Tj ET")
	rec := &recorder{}
	st := media.New(rec, media.Options{MaxPDF: 64 << 10})
	doc := func(name string, data []byte, caption string) pipeline.Inbound {
		return pipeline.Inbound{Key: key, MessageID: name, Time: time.Now(), Text: caption,
			Media: &pipeline.Media{Kind: pipeline.MediaDocument, Name: name, MIME: "application/pdf", Size: int64(len(data)), Fetch: bytesOf(data)}}
	}
	got, sent := run(t, st, doc("lease.pdf", lease, "what is the deposit?"))
	if got == nil || len(sent) != 0 {
		t.Fatalf("reached the model %+v, sent %q", got, sent)
	}
	for _, want := range []string{"📄 lease.pdf (2 pages):", "Lease agreement", "Rent: 900 EUR a month", "Deposit: two months", "\nwhat is the deposit?"} {
		if !strings.Contains(got.Text, want) {
			t.Errorf("the text lacks %q:\n%s", want, got.Text)
		}
	}
	big := append(append([]byte{}, lease...), bytes.Repeat([]byte("%"), 70<<10)...)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"scan.pdf", makePDF(t, "q 100 0 0 100 0 0 cm Q"), "found no text"},
		{"broken.pdf", append([]byte("%PDF-1.4\n1 0 obj\n<<"), bytes.Repeat([]byte("(("), 100)...), "looks damaged"},
		{"cut.pdf", lease[:len(lease)/2], "looks damaged"},
		{"big.pdf", big, "too large"},
	} {
		got, sent := run(t, st, doc(tc.name, tc.data, ""))
		if got != nil || len(sent) != 1 || !strings.Contains(sent[0], tc.want) {
			t.Errorf("%s: reached the model %+v, sent %q", tc.name, got, sent)
		}
	}
}

// Whatever bytes come as a PDF, reading them neither panics nor hangs.
func FuzzPDFDocument(f *testing.F) {
	f.Add([]byte("%PDF-1.4\n"))
	f.Add(buildPDF("", 0, "BT /F1 12 Tf (hello) Tj ET"))
	st := media.New(&recorder{}, media.Options{})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := pipeline.Inbound{Key: key, MessageID: "f", Media: &pipeline.Media{Kind: pipeline.MediaDocument, Name: "x.pdf", Size: int64(len(data)), Fetch: bytesOf(data)}}
		run(t, st, in)
	})
}

// A long document is stored whole; the model reads the parts relevant to
// the question (the caption) within the budget, the beginning without one.
func TestLongDocumentPromptCarriesTheRelevantPart(t *testing.T) {
	var doc strings.Builder
	doc.WriteString("# Tenancy agreement\n\n")
	for i := range 60 {
		if i == 41 {
			doc.WriteString("§ 41. The deposit is two months of rent, paid into a separate account.\n\n")
			continue
		}
		fmt.Fprintf(&doc, "§ %d. The tenant keeps the flat clean and tidy, and reports repairs within a week. Clause %d applies.\n\n", i, i)
	}
	for doc.Len() < 40<<10 {
		doc.WriteString("Appendix: the inventory lists chairs, tables and lamps in every room of the flat.\n")
	}
	data := []byte(doc.String())
	st := media.New(&recorder{}, media.Options{MaxDocument: 1 << 20, DocumentPrompt: 500})
	in := func(caption string) pipeline.Inbound {
		return pipeline.Inbound{Key: key, MessageID: "d", Text: caption,
			Media: &pipeline.Media{Kind: pipeline.MediaDocument, Name: "lease.md", Size: int64(len(data)), Fetch: bytesOf(data)}}
	}
	got, _ := run(t, st, in("How much is the deposit?"))
	if got == nil || !strings.HasPrefix(got.Text, "📄 lease.md:\n# Tenancy agreement") || !strings.Contains(got.Text, "Appendix") {
		t.Fatalf("stored text is not the whole document: %.200q", got.Text)
	}
	if !strings.Contains(got.Prompt, "The deposit is two months of rent") || len(got.Prompt) > 2300 ||
		!strings.HasSuffix(got.Prompt, "\nHow much is the deposit?") {
		t.Fatalf("the model reads (%d bytes):\n%s", len(got.Prompt), got.Prompt)
	}
	got, _ = run(t, st, in(""))
	if !strings.Contains(got.Prompt, "# Tenancy agreement") || strings.Contains(got.Prompt, "deposit") {
		t.Fatalf("without a question the model reads:\n%s", got.Prompt)
	}
	short := []byte("Rent: 900 EUR")
	got, _ = run(t, st, pipeline.Inbound{Key: key, MessageID: "s",
		Media: &pipeline.Media{Kind: pipeline.MediaDocument, Name: "rent.txt", Size: int64(len(short)), Fetch: bytesOf(short)}})
	if got.Prompt != "" {
		t.Fatalf("a short document got a prompt of its own: %q", got.Prompt)
	}
}

// A page tree that loops (a Pages node among its own kids) ends: the
// reader's own page lookup would spin forever.
func TestPDFWithALoopingPageTree(t *testing.T) {
	looped := buildPDF("2 0 R ", 9, "BT /F1 12 Tf (only page) Tj ET")
	st := media.New(&recorder{}, media.Options{})
	got, sent := run(t, st, pipeline.Inbound{Key: key, MessageID: "l",
		Media: &pipeline.Media{Kind: pipeline.MediaDocument, Name: "loop.pdf", Size: int64(len(looped)), Fetch: bytesOf(looped)}})
	if got == nil && len(sent) == 0 {
		t.Fatal("no answer")
	}
	if got == nil || !strings.Contains(got.Text, "only page") {
		t.Fatalf("read %+v, sent %q", got, sent)
	}
}
