package commands

// The archive family: /search, /context, /export.

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

func runSearch(ctx context.Context, c *Call) error {
	if c.Args == "" {
		return usage("Use /search <words>, e.g. /search holiday Lisbon.")
	}
	if len(memory.Terms(c.Args)) == 0 {
		return usage("Those are all very common words; search for something more specific, e.g. /search holiday Lisbon.")
	}
	// The blocks a turn would pull from the archive, recent messages
	// included, when the assembler can search; the store's hits otherwise.
	if s, ok := c.preview.(snippetSearcher); ok {
		snips, err := s.Search(ctx, c.Key, c.Args, 3000)
		if err != nil {
			return err
		}
		if len(snips) == 0 {
			return c.Reply(ctx, "Nothing in this conversation matches that.")
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Found %d:\n", len(snips))
		for _, sn := range snips {
			b.WriteString("\n" + assemble.FormatSnippet(sn, 200) + "\n")
		}
		return c.Reply(ctx, strings.TrimRight(b.String(), "\n"))
	}
	hits, err := c.store.Search(ctx, c.Key, memory.Query{Text: c.Args, Limit: 10, TokenBudget: 3000})
	if err != nil {
		return err
	}
	if len(hits) == 0 {
		return c.Reply(ctx, "Nothing in this conversation matches that.")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Found %s:\n", plural(len(hits), "message", "messages"))
	for _, h := range hits {
		text := []rune(strings.Join(strings.Fields(h.Message.Text), " "))
		if len(text) > 200 {
			text = append(text[:200], '…')
		}
		who := "you"
		if h.Message.Role == memory.RoleAssistant {
			who = "me"
		} else if h.Message.SenderName != "" && c.Turn.In.IsGroup {
			who = h.Message.SenderName
		}
		fmt.Fprintf(&b, "• %s, %s: %s\n", h.Message.Time.Format("2006-01-02"), who, string(text))
	}
	return c.Reply(ctx, strings.TrimRight(b.String(), "\n"))
}

// snippetSearcher finds archive snippets as a turn does (chat.Responder).
type snippetSearcher interface {
	Search(ctx context.Context, key pipeline.Key, text string, budget int) ([]assemble.Snippet, error)
}

func runContext(ctx context.Context, c *Call) error {
	if c.preview == nil {
		return c.Reply(ctx, "Context preview is not available.")
	}
	text := c.Args
	if text == "" {
		text = "(your next message)"
	}
	bd, err := c.preview.Preview(ctx, c.Key, text)
	if err != nil {
		return err
	}
	return c.Reply(ctx, bd.Format())
}

// groupExportText refuses /export in a group to anyone but its admins.
const groupExportText = "In a group, only the bot's admins or the group's admins can export its history: it holds what everyone here said, from before some members joined too. Your own data: send /export to me in a private chat."

func runExport(ctx context.Context, c *Call) error {
	if err := noArgs(c); err != nil {
		return err
	}
	if c.Turn.In.IsGroup {
		ok, err := c.groupAdmin(ctx)
		if err != nil {
			c.Turn.Logger().Warn("checking the group's admins for /export", "err", err)
			return c.Reply(ctx, "I couldn't check who the group's admins are right now; please try again in a moment.")
		}
		if !ok {
			c.Turn.Logger().Info("group export refused", "user", c.Turn.In.UserID(), "key", c.Key)
			return c.Reply(ctx, groupExportText)
		}
	}
	d, err := c.store.Export(ctx, c.Key.Owner(), nil)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := memory.WriteExport(&buf, memory.NewExport(d)); err != nil {
		return err
	}
	name := ExportFileName(c.Key.Owner(), c.opts.Now())
	caption := fmt.Sprintf("Your data: %s, %s. Format: recall-export v1 (JSON).", plural(len(d.Conversations), "conversation", "conversations"), plural(len(d.Memories), "note", "notes"))
	if fs, ok := c.Turn.Out.(pipeline.FileSender); ok {
		return fs.SendFile(ctx, c.Key, pipeline.File{Name: name, MIME: "application/json", Data: buf.Bytes()}, caption)
	}
	// Sent as is: Markdown rendering would mangle the JSON (its "_" and "*").
	_, err = c.Turn.Out.Send(ctx, pipeline.Outbound{Key: c.Key, Text: caption + "\n\n" + buf.String(), Plain: true, ReplyTo: c.Turn.In.MessageID})
	return err
}

// groupAdmin reports whether the sender is one of the bot's admins or an
// administrator of the group on its platform (pipeline.ChatAdmins; where
// the platform cannot tell, only the bot's admins are).
func (c *Call) groupAdmin(ctx context.Context) (bool, error) {
	if c.isAdmin != nil && c.isAdmin(c.Turn.In.UserID()) {
		return true, nil
	}
	ca, ok := c.Turn.Out.(pipeline.ChatAdmins)
	if !ok {
		return false, nil
	}
	return ca.IsChatAdmin(ctx, c.Key, c.Turn.In.SenderID)
}

// exportStamp is the time in an export file's name (UTC).
const exportStamp = "20060102-150405"

// ExportFileName names the file /export sends for owner at t:
// recall-export-<owner, with any character but letters, digits and "-"
// as "-">-<UTC time>.json. A channel that keeps the file (the terminal's
// data/exports) may add "-1", "-2"… before ".json" when the name is taken.
func ExportFileName(owner string, t time.Time) string {
	return "recall-export-" + safeName(owner) + "-" + t.UTC().Format(exportStamp) + ".json"
}

// IsExportOf reports whether name is a file /export made for owner (as
// ExportFileName names it, with or without the "-N" a channel adds): what
// a purge of owner's data removes from where exports are kept.
func IsExportOf(name, owner string) bool {
	rest, ok := strings.CutPrefix(name, "recall-export-"+safeName(owner)+"-")
	if !ok {
		return false
	}
	rest, ok = strings.CutSuffix(rest, ".json")
	if !ok || len(rest) < len(exportStamp) {
		return false
	}
	if _, err := time.Parse(exportStamp, rest[:len(exportStamp)]); err != nil {
		return false
	}
	n := rest[len(exportStamp):]
	if n == "" {
		return true
	}
	n, ok = strings.CutPrefix(n, "-")
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// ExportTime reads the time in the name of a file /export made (any
// owner's); false for any other name.
func ExportTime(name string) (time.Time, bool) {
	rest, ok := strings.CutSuffix(name, ".json")
	if !ok || !strings.HasPrefix(rest, "recall-export-") {
		return time.Time{}, false
	}
	for range 2 { // as named, then without the "-N" a channel adds
		if len(rest) >= len(exportStamp) {
			if t, err := time.Parse(exportStamp, rest[len(rest)-len(exportStamp):]); err == nil {
				return t, true
			}
		}
		i := strings.LastIndexByte(rest, '-')
		if i < 0 || i == len(rest)-1 || strings.Trim(rest[i+1:], "0123456789") != "" {
			return time.Time{}, false
		}
		rest = rest[:i]
	}
	return time.Time{}, false
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, s)
}
