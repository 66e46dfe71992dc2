package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
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
func runImportChat(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) (err error) {
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
	data, err := readCapped(path, maxChatExport)
	if err != nil {
		return err
	}
	var chat chatexport.Chat
	if *tg != "" {
		chat, err = chatexport.ParseTelegram(data)
	} else if strings.HasPrefix(string(data[:min(len(data), 4)]), "PK\x03\x04") {
		chat, err = chatexport.ParseWhatsAppZip(data, time.Local)
	} else {
		chat, err = chatexport.ParseWhatsApp(string(data), time.Local)
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
	rep, err := s.Import(ctx, memory.NewExport(memory.OwnerData{Owner: key.Owner(), Conversations: []memory.ConversationData{conv}}))
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]any{
		"imported": rep.Messages, "found": chat.Describe(), "skipped": chat.Skipped, "key": key.String(),
	})
}

// readCapped reads a file of at most max bytes.
func readCapped(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is over %d MiB", path, max>>20)
	}
	return data, nil
}
