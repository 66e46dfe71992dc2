package memory

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// ExportFormat and ExportVersion identify Recall's export documents.
const (
	ExportFormat  = "recall-export"
	ExportVersion = 1
)

// Export is the documented export/import format (see docs/operations.md, "Export format"):
//
//	{"format":"recall-export","version":1,"exported_at":"…","owners":[OwnerData…]}
//
// An OwnerData holds one owner's settings, memories, facts and conversations;
// each conversation holds its messages and summaries. The JSON backend stores
// exactly one OwnerData per file.
type Export struct {
	Format   string      `json:"format"`
	Version  int         `json:"version"`
	Exported time.Time   `json:"exported_at"`
	Owners   []OwnerData `json:"owners"`
}

// OwnerData is everything stored for one owner.
type OwnerData struct {
	Owner         string             `json:"owner"`
	Settings      *Settings          `json:"settings,omitempty"`
	Memories      []UserMemory       `json:"memories,omitempty"`
	Facts         []Fact             `json:"facts,omitempty"`
	Conversations []ConversationData `json:"conversations,omitempty"`
}

// ConversationData is one conversation's messages and summaries.
type ConversationData struct {
	Key               string    `json:"key"` // pipeline.Key.String()
	TurnsSinceSummary int       `json:"turns_since_summary"`
	LastSummary       time.Time `json:"last_summary,omitempty"`
	Messages          []Message `json:"messages"`
	Summaries         []Summary `json:"summaries,omitempty"`
}

// ImportReport counts what an import added (duplicates are not counted).
type ImportReport struct {
	Messages  int `json:"messages"`
	Summaries int `json:"summaries"`
	Memories  int `json:"memories"`
	Facts     int `json:"facts"`
	// Cut counts the messages over MaxMessageBytes, stored cut (CutText).
	Cut int `json:"cut,omitempty"`
}

// Add sums two reports.
func (r ImportReport) Add(o ImportReport) ImportReport {
	return ImportReport{r.Messages + o.Messages, r.Summaries + o.Summaries, r.Memories + o.Memories, r.Facts + o.Facts, r.Cut + o.Cut}
}

// NewExport wraps owners in an export document stamped now.
func NewExport(owners ...OwnerData) Export {
	return Export{Format: ExportFormat, Version: ExportVersion, Exported: time.Now().UTC(), Owners: owners}
}

// Empty reports whether the owner has no data at all.
func (d OwnerData) Empty() bool {
	return d.Settings == nil && len(d.Memories) == 0 && len(d.Facts) == 0 && len(d.Conversations) == 0
}

// Validate checks an owner's data before import: every key parses and belongs
// to the owner, roles and levels are valid, memory keys follow the rules.
func (d OwnerData) Validate() error {
	if d.Owner == "" {
		return fmt.Errorf("%w: owner is empty", ErrBadImport)
	}
	if d.Settings != nil {
		if d.Settings.Owner != "" && d.Settings.Owner != d.Owner {
			return fmt.Errorf("%w: settings of %q inside owner %q", ErrBadImport, d.Settings.Owner, d.Owner)
		}
		if d.Settings.Storage != "" && !d.Settings.Storage.Valid() {
			return fmt.Errorf("%w: owner %q: storage_type %q", ErrBadImport, d.Owner, d.Settings.Storage)
		}
		if d.Settings.Threshold < 0 || d.Settings.Threshold > MaxThreshold {
			return fmt.Errorf("%w: owner %q: summary_every_n %d", ErrBadImport, d.Owner, d.Settings.Threshold)
		}
	}
	for _, m := range d.Memories {
		if err := ValidateMemoryKey(m.Key); err != nil {
			return fmt.Errorf("%w: owner %q: %v", ErrBadImport, d.Owner, err)
		}
	}
	for _, c := range d.Conversations {
		k, err := pipeline.ParseKey(c.Key)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrBadImport, err)
		}
		if k.Owner() != d.Owner {
			return fmt.Errorf("%w: conversation %q does not belong to owner %q", ErrBadImport, c.Key, d.Owner)
		}
		for _, m := range c.Messages {
			if !m.Role.Valid() {
				return fmt.Errorf("%w: conversation %q: role %q", ErrBadImport, c.Key, m.Role)
			}
		}
		for _, s := range c.Summaries {
			if s.Level < 1 {
				return fmt.Errorf("%w: conversation %q: summary level %d", ErrBadImport, c.Key, s.Level)
			}
		}
	}
	return nil
}

// WriteExport encodes an export document, indented.
func WriteExport(w io.Writer, e Export) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(e)
}

// ReadExport decodes and validates an export document. Unknown fields are
// rejected so a wrong file is not half-imported, and so is a message whose
// role is not user or assistant: the bot stores no other, and a "system"
// message from a file would speak with the system prompt's authority in
// every later prompt. Token counts in the file are not trusted: see Recount.
func ReadExport(r io.Reader) (Export, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var e Export
	if err := dec.Decode(&e); err != nil {
		return Export{}, fmt.Errorf("%w: %v", ErrBadImport, err)
	}
	if e.Format != ExportFormat {
		return Export{}, fmt.Errorf("%w: format %q, want %q", ErrBadImport, e.Format, ExportFormat)
	}
	if e.Version != ExportVersion {
		return Export{}, fmt.Errorf("%w: version %d, want %d", ErrBadImport, e.Version, ExportVersion)
	}
	for _, d := range e.Owners {
		for _, c := range d.Conversations {
			for i, m := range c.Messages {
				if m.Role != RoleUser && m.Role != RoleAssistant {
					return Export{}, fmt.Errorf("%w: conversation %q, message %d (%s, %q): role %q: a message in a file must be from the user or the assistant",
						ErrBadImport, c.Key, i+1, m.Time.Format(time.RFC3339), preview(m.Text), m.Role)
				}
			}
		}
		if err := d.Validate(); err != nil {
			return Export{}, err
		}
	}
	return e, nil
}

// Recount sets the token count of every message and summary of e from its
// text with count, the bot's own counter: a count from a file may be
// anything (2^63-1 made /context report an absurd prompt).
func (e *Export) Recount(count func(text string) int) {
	for i := range e.Owners {
		for j := range e.Owners[i].Conversations {
			c := &e.Owners[i].Conversations[j]
			for k := range c.Messages {
				c.Messages[k].Tokens = count(c.Messages[k].Text)
			}
			for k := range c.Summaries {
				c.Summaries[k].Tokens = count(c.Summaries[k].Text)
			}
		}
	}
}

// preview is the start of a text, to name a message in an error.
func preview(s string) string {
	r := []rune(s)
	if len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}
