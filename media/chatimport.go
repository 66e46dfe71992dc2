package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/recallbot/recall/chatexport"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// Confirmer asks the sender a yes/no question and runs yes on yes
// (commands.Commands.Confirm).
type Confirmer interface {
	Confirm(ctx context.Context, t *pipeline.Turn, question, yesLabel, noText string, yes func(ctx context.Context) (string, error)) error
}

// Importer adds exported data to the store (memory.Store).
type Importer interface {
	Import(ctx context.Context, e memory.Export) (memory.ImportReport, error)
}

// Imports configure "bring your history": a chat export sent as a document
// is offered for import into the conversation's archive.
type Imports struct {
	Confirm Confirmer
	Store   Importer
	Count   func(string) int // tokens of a message
	// MaxBytes is the largest export read (default 20 MiB, what Telegram
	// lets a bot download): a larger one is refused from the size the
	// platform gives, before it is downloaded.
	MaxBytes int64
	Location *time.Location // WhatsApp's local times (default time.Local)
}

// looksLikeExport reports whether a document's name is that of a chat
// export: Telegram Desktop's result.json, WhatsApp's "WhatsApp Chat with
// ….txt", "_chat.txt" or the .zip holding it.
func looksLikeExport(name string) bool {
	low := strings.ToLower(path.Base(name))
	return low == "result.json" || strings.HasPrefix(low, "whatsapp chat") || low == "_chat.txt" ||
		(strings.HasSuffix(low, ".zip") && strings.Contains(low, "whatsapp"))
}

// chatImport offers a chat export for import; false when the document is
// not one (it is then read like any document).
func (s *Stage) chatImport(ctx context.Context, t *pipeline.Turn) (handled bool, err error) {
	im := s.opts.Imports
	md := t.In.Media
	if im == nil || im.Confirm == nil || im.Store == nil || !looksLikeExport(md.Name) || md.Fetch == nil {
		return false, nil
	}
	maxBytes := im.MaxBytes
	if maxBytes <= 0 {
		maxBytes = 20 << 20
	}
	if md.Size > maxBytes {
		return true, reply(ctx, t, fmt.Sprintf("That chat export is too large for me to import here (%d MB; at most %d MB). The operator can import it with: bot import --telegram-export FILE --key %s (or --whatsapp-export).",
			mb(md.Size), mb(maxBytes), t.In.Key))
	}
	ctx2, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	select {
	case s.exports <- struct{}{}:
		defer func() { <-s.exports }()
	case <-ctx2.Done():
		if ctx.Err() != nil {
			return true, ctx.Err()
		}
		return true, reply(ctx, t, fmt.Sprintf("I'm reading too many files right now: please send %s again in a minute.", md.Name))
	}
	data, err := md.Fetch(ctx2, maxBytes)
	if err != nil {
		t.Logger().Warn("downloading a chat export", "err", err)
		return true, reply(ctx, t, "I couldn't download that file. Please try again.")
	}
	loc := im.Location
	if loc == nil {
		loc = time.Local
	}
	chat, err := chatexport.Read(ctx2, bytes.NewReader(data), int64(len(data)), loc)
	switch {
	case errors.Is(err, chatexport.ErrNotExport) || (err == nil && len(chat.Messages) == 0):
		return false, nil // not an export after all: read it as a document
	case err != nil && ctx.Err() == nil:
		t.Logger().Info("reading a chat export", "err", err)
		return true, s.refuse(ctx, t, fmt.Sprintf("📄 %s (a chat export I could not import)", md.Name),
			fmt.Sprintf("I couldn't import %s: %v.", md.Name, err))
	case err != nil:
		return true, err
	}
	key := t.In.Key
	question := fmt.Sprintf("I found %s in %s. Import them into this chat's memory? They become searchable history I can recall; nothing else changes.",
		chat.Describe(), md.Name)
	return true, im.Confirm.Confirm(ctx, t, question, "Yes, import", "Not imported.", func(ctx context.Context) (string, error) {
		conv := chat.Conversation(key, im.Count)
		rep, err := im.Store.Import(ctx, memory.NewExport(memory.OwnerData{Owner: key.Owner(), Conversations: []memory.ConversationData{conv}}))
		if err != nil {
			return "", fmt.Errorf("importing a chat export: %w", err)
		}
		reply := fmt.Sprintf("Imported %d messages.", rep.Messages)
		if rep.Messages < len(conv.Messages) {
			reply = fmt.Sprintf("Imported %d messages (%d were already in my memory).", rep.Messages, len(conv.Messages)-rep.Messages)
		}
		if rep.Cut > 0 {
			reply += fmt.Sprintf(" %s longer than %d MB: I kept the first %d MB of each.",
				plural(rep.Cut, "message"), memory.MaxMessageBytes>>20, memory.MaxMessageBytes>>20)
		}
		return reply + " Ask me about them any time.", nil
	})
}
