// Command bot runs Recall: `bot` starts the chat (the terminal when no chat
// platform is configured); subcommands import, export, back up, search, show
// the context the bot would assemble, check a running bot's health, and
// print the version.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/recallbot/recall/datadir"
	"github.com/recallbot/recall/logs"
	"github.com/recallbot/recall/media"
	"github.com/recallbot/recall/sandbox"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usageText = `Recall — a self-hosted AI chat bot that never forgets.

Usage:
  bot [--config FILE]                      run the bot (terminal chat when no platform is configured)
  bot import FILE                          merge an export file into the store (idempotent)
  bot export [--user OWNER] [--key KEY]    print data as JSON (everything, one owner, or one conversation)
  bot backup FILE                          copy the database to a new FILE while the bot runs
  bot allow CODE|ID                        let a user in (a pairing code from the log, or telegram:123…); works beside the running bot
  bot deny CODE|ID                         shut a user out, or turn a pairing request down (no argument: list who waits)
  bot purge --user ID | --conversation KEY | --older-than DAYS [--yes]
                                           delete a user's data (their messages in groups too), a conversation, or old
                                           messages, as /purge does; asks y/N first; the bot must be stopped
  bot migrate [--to|--from postgres://…]   apply the database's migrations and exit; --to: copy the data directory into PostgreSQL,
                                           --from: back into an empty data directory's SQLite (both verified, resumable)
  bot whatsapp login [--phone +49…]        link the bot to a WhatsApp account (QR code, or a pairing code with --phone)
  bot whatsapp logout                      unlink it and delete the session
  bot healthcheck                          exit 0 when the running bot's /healthz (http.listen) answers 200
  bot search --key KEY TEXT                search a conversation's archive; prints JSON
  bot context --key KEY TEXT               show the context assembled for TEXT; prints JSON
  bot reindex                              embed the stored messages for search by meaning (memory.embeddings); resumable
  bot version                              print the version

Configuration: config.yaml in the working directory (or --config FILE, or the
file RECALL_CONFIG names), and environment variables RECALL_<KEY> (e.g.
RECALL_LLM_API_KEY, RECALL_DATA_DIR), also read from .env in the working
directory (the environment wins). A variable set to "" sets its key to empty
(RECALL_HTTP_LISTEN= turns the health server off).

Stopping: the first SIGINT or SIGTERM stops taking messages and lets work in
progress finish (shutdown.timeout), then exits 0; a second one exits at once
with code 130.
`

func main() {
	// First: when this process is a worker parsing a PDF or an image for
	// the bot, it does that and exits here (package sandbox).
	workers := sandbox.Serve(media.Jobs())
	tuneRuntime(os.Getenv) // memory limit, heap profiler off
	restrictUmask()        // files the bot creates are 0600, directories 0700 (docs/design.md)
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, workers))
}

// run runs the command in args; workers re-executes this program to parse
// outside files (sandbox.Serve).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, workers *sandbox.Exec) int {
	global := flag.NewFlagSet("bot", flag.ContinueOnError)
	global.SetOutput(stderr)
	global.Usage = func() { fmt.Fprint(stderr, usageText) }
	cfgPath := global.String("config", "", "configuration file (default: config.yaml if present)")
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	rest := global.Args()
	cmd := ""
	if len(rest) > 0 {
		cmd, rest = rest[0], rest[1:]
	}
	if cmd == "version" {
		fmt.Fprintln(stdout, "recall", version)
		return 0
	}
	if cmd == "help" {
		fmt.Fprint(stdout, usageText)
		return 0
	}
	switch cmd {
	case "", "import", "export", "backup", "search", "context", "healthcheck", "whatsapp", "allow", "deny", "reindex", "migrate", "purge":
	default:
		// Before the configuration is read: a typo is named as such even
		// when the configuration is broken too.
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", cmd, usageText)
		return 2
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		fmt.Fprintln(stderr, "configuration error:", err)
		return 2
	}
	if writesData(cmd) {
		// One writer per data directory; a second one stops here, before
		// it touches anything. The kernel releases the lock on any exit.
		lock, err := datadir.Acquire(cfg.Data.Dir)
		if err != nil {
			var held *datadir.LockedError
			if cmd == "purge" && errors.As(err, &held) {
				err = errors.New(purgeLockedText(held))
			}
			fmt.Fprintln(stderr, "error:", err)
			return 1
		}
		defer func() { _ = lock.Release() }() // the kernel releases it at exit anyway
	}
	intr := &interrupts{}
	ctx, stop := shutdownContext(stderr, os.Exit, intr)
	defer stop()
	switch cmd {
	case "":
		err = runBot(ctx, cfg, stdin, stdout, stderr, workers, intr)
	case "import":
		err = runImport(ctx, cfg, rest, stdout, stderr)
	case "export":
		err = runExport(ctx, cfg, rest, stdout)
	case "backup":
		err = runBackup(ctx, cfg, rest, stdout)
	case "healthcheck":
		err = runHealthcheck(ctx, cfg, rest, stdout)
	case "whatsapp":
		err = runWhatsApp(ctx, cfg, rest, stdout, stderr)
	case "allow", "deny":
		err = runAccess(ctx, cfg, cmd == "allow", rest, stdout)
	case "search":
		err = runSearch(ctx, cfg, rest, stdout)
	case "context":
		err = runContext(ctx, cfg, rest, stdout)
	case "reindex":
		err = runReindex(ctx, cfg, rest, stderr)
	case "migrate":
		err = runMigrate(ctx, cfg, rest, stdout, stderr)
	case "purge":
		err = runPurge(ctx, cfg, rest, stdin, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", cmd, usageText)
		return 2
	}
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(stderr, err)
			return 2
		}
		// Not through the logger: redacted here (an error may quote a URL
		// that holds the bot token).
		fmt.Fprintln(stderr, "error:", logs.NewRedactor(nil, cfg.Secrets()).Redact(err.Error()))
		return 1
	}
	return 0
}

// writesData reports whether subcommand cmd writes the data directory and
// so must hold its lock. export, search, context and backup only read, and
// run beside a running bot; healthcheck asks the bot over HTTP; migrate
// takes the lock itself when it touches the directory (not to migrate
// PostgreSQL beside running replicas).
func writesData(cmd string) bool {
	switch cmd {
	case "", "import", "whatsapp", "reindex", "purge":
		return true
	}
	return false
}

type usageError string

func (e usageError) Error() string { return string(e) }
