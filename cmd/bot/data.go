package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// openStore opens the store alone, for the data subcommands: existing for
// those that only read (they refuse a directory without data instead of
// creating an empty store there).
func openStore(ctx context.Context, cfg config.Config, existing bool) (*memory.Store, error) {
	return memory.Open(ctx, memory.Options{
		Dir: cfg.Data.Dir, MaxMemories: cfg.Memory.MaxMemories, Existing: existing, DatabaseURL: cfg.Database.URL,
		Defaults: memory.Settings{MemoryEnabled: cfg.Memory.EnabledByDefault, Storage: memory.Storage(cfg.Memory.Storage), Threshold: cfg.Memory.Threshold},
	})
}

// storeExists refuses a data directory without a store, unless the data
// is in PostgreSQL (database.url): then any data directory will do.
func storeExists(cfg config.Config) error {
	if cfg.Database.URL != "" {
		return nil
	}
	return memory.StoreExists(cfg.Data.Dir)
}

func closeStore(s *memory.Store, err *error) {
	if cerr := s.Close(context.Background()); cerr != nil && *err == nil {
		*err = cerr
	}
}

func runImport(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) (err error) {
	if len(args) > 0 && strings.HasPrefix(args[0], "-") {
		return runImportChat(ctx, cfg, args, stdout, stderr)
	}
	if len(args) != 1 {
		return usageError("usage: bot import FILE (a recall-export JSON file, e.g. from bot export)")
	}
	f, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer f.Close()
	e, err := memory.ReadExport(f)
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	e.Recount(llm.NewCounter(cfg.LLM.Model).Count) // as the bot counts its own messages
	s, err := openStore(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	rep, err := s.Import(ctx, e)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]any{"imported": rep, "owners": len(e.Owners)})
}

func runExport(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) (err error) {
	const usage = "usage: bot export [--user OWNER] [--key KEY]"
	fl := flag.NewFlagSet("export", flag.ContinueOnError)
	fl.SetOutput(io.Discard) // the error is returned with the usage, to run's stderr
	user := fl.String("user", "", "only this owner, e.g. telegram:123456")
	keyArg := fl.String("key", "", "only this conversation, e.g. telegram:123456:")
	if err := fl.Parse(args); err != nil {
		return usageError(flagProblem(err) + usage)
	}
	if fl.NArg() > 0 {
		return usageError(fmt.Sprintf("unexpected argument %q\n%s", fl.Arg(0), usage))
	}
	s, err := openStore(ctx, cfg, true)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	var e memory.Export
	switch {
	case *keyArg != "":
		k, err := pipeline.ParseKey(*keyArg)
		if err != nil {
			return usageError(err.Error() + "\n" + usage)
		}
		d, err := s.Export(ctx, k.Owner(), &k)
		if err != nil {
			return err
		}
		e = memory.NewExport(d)
	case *user != "":
		d, err := s.Export(ctx, *user, nil)
		if err != nil {
			return err
		}
		e = memory.NewExport(d)
	default:
		if e, err = s.ExportAll(ctx); err != nil {
			return err
		}
	}
	return memory.WriteExport(stdout, e)
}

// flagProblem is a flag parse error as a line to print before the usage
// ("" for -h, which only asks for the usage).
func flagProblem(err error) string {
	if errors.Is(err, flag.ErrHelp) {
		return ""
	}
	return err.Error() + "\n"
}

func keyAndText(name string, args []string) (pipeline.Key, string, error) {
	usage := fmt.Sprintf("usage: bot %s --key KEY TEXT", name)
	fl := flag.NewFlagSet(name, flag.ContinueOnError)
	fl.SetOutput(io.Discard) // the error is returned with the usage, to run's stderr
	keyArg := fl.String("key", "", "conversation key, e.g. telegram:123456:")
	if err := fl.Parse(args); err != nil {
		return pipeline.Key{}, "", usageError(flagProblem(err) + usage)
	}
	if *keyArg == "" || fl.NArg() == 0 {
		return pipeline.Key{}, "", usageError(usage)
	}
	k, err := pipeline.ParseKey(*keyArg)
	if err != nil {
		return k, "", usageError(err.Error() + "\n" + usage)
	}
	return k, strings.Join(fl.Args(), " "), nil
}

// runSearch prints the archive snippets the conversation's next prompt
// would carry for the text, exactly as the turn assembles them.
func runSearch(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) (err error) {
	k, text, err := keyAndText("search", args)
	if err != nil {
		return err
	}
	if err := storeExists(cfg); err != nil {
		return err
	}
	a, err := newApp(ctx, cfg, io.Discard)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := a.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	p, err := a.Responder.Prompt(ctx, k, text)
	if err != nil {
		return err
	}
	out := struct {
		Key      string             `json:"key"`
		Query    string             `json:"query"`
		Terms    []string           `json:"terms"`
		Snippets []assemble.Snippet `json:"snippets"`
		Tokens   int                `json:"tokens"`
		Notes    []string           `json:"notes,omitempty"`
	}{Key: k.String(), Query: text, Terms: memory.Terms(text), Snippets: p.Breakdown.Snippets, Notes: p.Breakdown.Notes}
	if out.Snippets == nil {
		out.Snippets = []assemble.Snippet{}
	}
	for _, s := range out.Snippets {
		out.Tokens += s.Tokens
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func runContext(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) (err error) {
	k, text, err := keyAndText("context", args)
	if err != nil {
		return err
	}
	if err := storeExists(cfg); err != nil {
		return err
	}
	a, err := newApp(ctx, cfg, io.Discard)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := a.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	p, err := a.Responder.Prompt(ctx, k, text)
	if err != nil {
		return err
	}
	// llm.Message has no JSON tags; print the chat format's field names.
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	msgs := make([]message, len(p.Messages))
	for i, m := range p.Messages {
		msgs[i] = message{m.Role, m.Content}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"key": k.String(), "breakdown": p.Breakdown, "messages": msgs})
}
