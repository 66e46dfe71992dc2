package media

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/recallbot/recall/excerpt"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/sandbox"
)

// textExts are the document types read as text.
var textExts = map[string]bool{
	".txt": true, ".md": true, ".markdown": true, ".csv": true, ".tsv": true, ".json": true, ".jsonl": true,
	".yaml": true, ".yml": true, ".toml": true, ".ini": true, ".xml": true, ".html": true, ".htm": true,
	".log": true, ".srt": true, ".vtt": true, ".tex": true, ".rst": true, ".org": true,
	".go": true, ".py": true, ".js": true, ".ts": true, ".tsx": true, ".jsx": true, ".java": true, ".kt": true,
	".c": true, ".h": true, ".cc": true, ".cpp": true, ".hpp": true, ".rs": true, ".rb": true, ".php": true,
	".sh": true, ".sql": true, ".css": true, ".swift": true, ".scala": true, ".lua": true, ".r": true, ".pl": true,
}

// isText reports whether a document is read as text, by its name or type.
func isText(name, mime string) bool {
	if textExts[strings.ToLower(path.Ext(name))] {
		return true
	}
	mime = strings.ToLower(mime)
	return strings.HasPrefix(mime, "text/") || mime == "application/json" || mime == "application/xml" ||
		mime == "application/x-yaml" || mime == "application/yaml"
}

// document reads a text document into the turn's text: "📄 notes.md:" and
// its content (with the caption after it). The whole text is stored and
// searchable; the prompt keeps what fits.
func (s *Stage) document(ctx context.Context, t *pipeline.Turn) (done bool, err error) {
	if handled, err := s.chatImport(ctx, t); handled || err != nil {
		return true, err
	}
	md := t.In.Media
	name := md.Name
	if name == "" {
		name = "document"
	}
	if isPDF(name, md.MIME) {
		return s.pdfDocument(ctx, t, name)
	}
	if !isText(name, md.MIME) {
		if strings.TrimSpace(t.In.Text) != "" {
			t.In.Text = withCaption(fmt.Sprintf("📄 [the user sent a file, %s, you cannot open]", name), t.In.Text)
			return false, nil
		}
		return true, s.refuse(ctx, t, fmt.Sprintf("📄 %s (a file I could not open)", name),
			fmt.Sprintf("I can read text files (txt, md, csv, json, code…) and PDFs, not %s. Paste the part you want me to read.", name))
	}
	if md.Size > s.opts.MaxDocument {
		return true, s.refuse(ctx, t, fmt.Sprintf("📄 %s (too large to read)", name),
			fmt.Sprintf("%s is too large for me (%d KB; at most %d KB). Send the part you need. (Operator: media.max_document_bytes sets the limit.)",
				name, md.Size>>10, s.opts.MaxDocument>>10))
	}
	if md.Fetch == nil {
		return true, reply(ctx, t, "I couldn't get that file from the platform. Please try again.")
	}
	ctx2, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	data, err := md.Fetch(ctx2, s.opts.MaxDocument)
	if err != nil {
		t.Logger().Warn("downloading a document", "err", err)
		return true, reply(ctx, t, fmt.Sprintf("I couldn't download %s (at most %d KB). Please try again.", name, s.opts.MaxDocument>>10))
	}
	if !validText(data) {
		return true, s.refuse(ctx, t, fmt.Sprintf("📄 %s (not text)", name), fmt.Sprintf("%s is not a text file I can read.", name))
	}
	body := strings.TrimSpace(strings.TrimPrefix(string(data), "\ufeff"))
	s.setDocument(t, "📄 "+name, body)
	return false, nil
}

// pdfDocument reads a PDF's text into the turn's text: "📄 lease.pdf (3
// pages):" and the text (with the caption after it). A PDF without text
// (scanned pages) or that cannot be read gets a clear answer.
func (s *Stage) pdfDocument(ctx context.Context, t *pipeline.Turn, name string) (done bool, err error) {
	md := t.In.Media
	if md.Size > s.opts.MaxPDF {
		return true, s.refuse(ctx, t, fmt.Sprintf("📄 %s (too large to read)", name),
			fmt.Sprintf("%s is too large for me (%d MB; at most %d MB). (Operator: media.max_pdf_bytes sets the limit.)",
				name, mb(md.Size), mb(s.opts.MaxPDF)))
	}
	if md.Fetch == nil {
		return true, reply(ctx, t, "I couldn't get that file from the platform. Please try again.")
	}
	ctx2, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	data, err := md.Fetch(ctx2, s.opts.MaxPDF)
	if err != nil {
		t.Logger().Warn("downloading a PDF", "err", err)
		return true, reply(ctx, t, fmt.Sprintf("I couldn't download %s (at most %d MB). Please try again.", name, mb(s.opts.MaxPDF)))
	}
	text, pages, err := s.readPDF(ctx2, data)
	switch {
	case errors.Is(err, errNoText):
		return true, s.refuse(ctx, t, fmt.Sprintf("📄 %s (a PDF with no text I could read)", name),
			fmt.Sprintf("I found no text in %s: it may be scanned pages or images. Send the text, or a photo of the page you want me to read.", name))
	case errors.Is(err, sandbox.ErrLimit) || errors.Is(err, sandbox.ErrTooBig):
		t.Logger().Info("reading a PDF", "err", err)
		return true, s.refuse(ctx, t, fmt.Sprintf("📄 %s (a PDF I could not read)", name),
			fmt.Sprintf("I couldn't read that PDF (it looks damaged or too complex): %s. Paste the part you want me to read.", name))
	case errors.Is(err, sandbox.ErrBusy):
		t.Logger().Info("reading a PDF", "err", err)
		return true, reply(ctx, t, fmt.Sprintf("I'm reading too many files right now: please send %s again in a minute.", name))
	case ctx2.Err() != nil && ctx.Err() == nil:
		t.Logger().Info("reading a PDF", "err", err)
		return true, reply(ctx, t, fmt.Sprintf("I couldn't read %s in time: I'm busy with other files. Please send it again in a minute.", name))
	case err != nil:
		t.Logger().Info("reading a PDF", "err", err)
		return true, s.refuse(ctx, t, fmt.Sprintf("📄 %s (a PDF I could not read)", name),
			fmt.Sprintf("I couldn't read %s: it looks damaged or password-protected. Paste the part you want me to read.", name))
	}
	s.setDocument(t, fmt.Sprintf("📄 %s (%s)", name, plural(pages, "page")), text)
	return false, nil
}

// setDocument makes a document's text the turn's: stored whole and
// searchable. The model reads a long one (over Options.DocumentPrompt) as
// the parts most relevant to the caption, the rest left out.
func (s *Stage) setDocument(t *pipeline.Turn, header, body string) {
	caption := t.In.Text
	t.In.Text = withCaption(header+":\n"+body, caption)
	if max := s.opts.DocumentPrompt * 4; len(body) > max { // ~4 bytes a token
		part := excerpt.Of(body, caption, max)
		if part == "" {
			part = body[:max]
			for len(part) > 0 && !utf8.ValidString(part) {
				part = part[:len(part)-1]
			}
		}
		t.In.Prompt = withCaption(fmt.Sprintf("%s — %d KB, too long to show whole; all of it is in your memory. "+
			"The parts most relevant to the user's message:\n%s", header, len(body)>>10, part), caption)
	}
}

// plural is "1 page", "3 pages".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
