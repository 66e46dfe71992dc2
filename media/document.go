package media

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/recallbot/recall/pipeline"
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
	if !isText(name, md.MIME) {
		if strings.TrimSpace(t.In.Text) != "" {
			t.In.Text = withCaption(fmt.Sprintf("📄 [the user sent a file, %s, you cannot open]", name), t.In.Text)
			return false, nil
		}
		return true, s.refuse(ctx, t, fmt.Sprintf("📄 %s (a file I could not open)", name),
			fmt.Sprintf("I can read text files (txt, md, csv, json, code…), not %s. Paste the part you want me to read.", name))
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
	t.In.Text = withCaption(fmt.Sprintf("📄 %s:\n%s", name, body), t.In.Text)
	return false, nil
}
