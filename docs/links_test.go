package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The Markdown files whose links are checked, from the repository's root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "DEVELOPERS.md"}
	docs, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	return files
}

var (
	fence    = regexp.MustCompile("(?m)^ {0,3}(```|~~~)")
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	// [text](target) and ![alt](target); a target ends at a space or ")".
	inlineLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	heading    = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
)

// prose returns a Markdown file's lines, those of fenced code blocks
// blanked (so an index is still the line's number less one).
func prose(text string) []string {
	lines := strings.Split(text, "\n")
	in := false
	for i, line := range lines {
		if fence.MatchString(line) {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return lines
}

// slug is GitHub's anchor for a heading's text: inline Markdown dropped,
// lower case, every character but letters, digits, spaces, hyphens and
// underscores removed, spaces turned into hyphens.
func slug(text string) string {
	text = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(text, "$1") // links: their text
	text = strings.NewReplacer("`", "", "*", "", "<", "", ">", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// anchors returns the anchors GitHub gives a Markdown file's headings (a
// repeated slug gets -1, -2, …).
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range prose(text) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[s+"-"+itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Quick start":                         "quick-start",
		"Scaling out (PostgreSQL)":            "scaling-out-postgresql",
		"Voice notes, photos and documents":   "voice-notes-photos-and-documents",
		"`go test -short`: the fast path":     "go-test--short-the-fast-path",
		"Telegram says 409 (Conflict)":        "telegram-says-409-conflict",
		"What is stored, and how users erase": "what-is-stored-and-how-users-erase",
		"Figures: how they are measured":      "figures-how-they-are-measured",
		"Search's complexity budget (#17)":    "searchs-complexity-budget-17",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
	a := anchors("# A\n## A\n```\n# Not a heading\n```\n### A\n")
	for _, want := range []string{"a", "a-1", "a-2"} {
		if !a[want] {
			t.Errorf("anchors: no %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Errorf("a line in a code block was taken for a heading")
	}
}

// Every relative link of the README, DEVELOPERS.md and docs/ points to a file
// that exists, and every #anchor to a heading of its file.
func TestLinks(t *testing.T) {
	root := ".."
	texts := map[string]string{}
	read := func(rel string) (string, bool) {
		if s, ok := texts[rel]; ok {
			return s, true
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return "", false
		}
		texts[rel] = string(b)
		return string(b), true
	}
	checked := 0
	for _, file := range markdownFiles(t) {
		text, ok := read(file)
		if !ok {
			t.Fatalf("%s is missing", file)
		}
		for n, line := range prose(text) {
			line = codeSpan.ReplaceAllString(line, "")
			for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				rel := file
				if path != "" {
					rel = filepath.Clean(filepath.Join(filepath.Dir(file), path))
					if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
						t.Errorf("%s (line %d): link %q: %s does not exist", file, n+1, target, rel)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(rel, ".md") {
					t.Errorf("%s: link %q: an anchor into a file that is not Markdown", file, target)
					continue
				}
				dst, _ := read(rel)
				if !anchors(dst)[anchor] {
					t.Errorf("%s (line %d): link %q: %s has no heading with the anchor #%s", file, n+1, target, rel, anchor)
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d relative links found: is the link pattern still right?", checked)
	}
}
