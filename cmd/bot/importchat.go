package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/recallbot/recall/chatexport"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// maxChatExport caps the file `bot import --telegram-export/--whatsapp-export` reads.
const maxChatExport = 512 << 20

// runImportChat imports another app's chat export into the archive of one
// conversation: bot import --telegram-export result.json --key telegram:123
// (or --whatsapp-export chat.txt|chat.zip).
func runImportChat(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) (err error) {
	const usage = "usage: bot import --telegram-export FILE --key KEY, or --whatsapp-export FILE --key KEY " +
		"(FILE: Telegram Desktop's result.json, or WhatsApp's exported .txt or .zip; KEY: the conversation, e.g. telegram:123456)"
	fl := flag.NewFlagSet("import", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	tg := fl.String("telegram-export", "", "")
	wa := fl.String("whatsapp-export", "", "")
	keyText := fl.String("key", "", "")
	if err := fl.Parse(args); err != nil || fl.NArg() != 0 || (*tg == "") == (*wa == "") || *keyText == "" {
		return usageError(usage)
	}
	key, err := pipeline.ParseKey(*keyText)
	if err != nil {
		return usageError(fmt.Sprintf("--key %q: %v; %s", *keyText, err, usage))
	}
	path := *tg + *wa
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if st.Size() > maxChatExport {
		return fmt.Errorf("%s is over %d MiB", path, maxChatExport>>20)
	}
	prog := newProgress(stderr, path)
	read := &readProgress{r: f, size: st.Size(), p: prog}
	chat, err := chatexport.Read(ctx, read, st.Size(), time.Local)
	switch {
	case err == nil && *tg != "" && chat.Source != "telegram":
		err = fmt.Errorf("not Telegram Desktop's result.json (use --whatsapp-export for WhatsApp's)")
	case err == nil && *wa != "" && chat.Source != "whatsapp":
		err = fmt.Errorf("not a WhatsApp export (use --telegram-export for Telegram Desktop's result.json)")
	}
	prog.done()
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted while reading %s: nothing was imported", path)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(chat.Messages) == 0 {
		return fmt.Errorf("%s: no messages to import (%d service lines or media without text)", path, chat.Skipped)
	}
	s, err := openStore(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	counter := llm.NewCounter(cfg.LLM.Model)
	conv := chat.Conversation(key, counter.Count)
	found := chat.Describe()
	chat.Messages = nil // conv holds them now
	imported, cut, err := importInBatches(ctx, s, key, conv, newProgress(stderr, "importing"))
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %d of %d messages imported (each batch whole); run the same command again to import the rest: what is already in is skipped",
				imported, len(conv.Messages))
		}
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]any{
		"imported": imported, "found": found, "skipped": chat.Skipped, "key": key.String(),
		"cut": cut, // messages over memory.MaxMessageBytes, stored cut
	})
}

// importBatch is how many messages one transaction of bot import adds: a
// stop (SIGTERM, Ctrl-C) keeps the batches done, and loses at most one.
const importBatch = 2000

// importInBatches imports conv's messages, importBatch at a time, each
// batch in one transaction (memory.Store.Import), stopping between batches
// when ctx ends. Messages already in the store are skipped (their platform
// ids), so a second run resumes. It returns how many were added, and how
// many were over memory.MaxMessageBytes and stored cut.
func importInBatches(ctx context.Context, s *memory.Store, key pipeline.Key, conv memory.ConversationData, prog *progress) (added, cut int, err error) {
	defer prog.done()
	all := conv.Messages
	for i := 0; i < len(all); i += importBatch {
		if err := ctx.Err(); err != nil {
			return added, cut, err
		}
		part := conv
		part.Messages = all[i:min(i+importBatch, len(all))]
		rep, err := s.Import(ctx, memory.NewExport(memory.OwnerData{Owner: key.Owner(), Conversations: []memory.ConversationData{part}}))
		if err != nil {
			return added, cut, fmt.Errorf("importing messages %d–%d: %w", i+1, i+len(part.Messages), err)
		}
		added += rep.Messages
		cut += rep.Cut
		prog.set(int64(i+len(part.Messages)), int64(len(all)), "messages")
	}
	return added, cut, nil
}
