package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/recallbot/recall/adapters/console"
	"github.com/recallbot/recall/adapters/telegram"
	"github.com/recallbot/recall/adapters/whatsapp"
	"github.com/recallbot/recall/app"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/logs"
	"github.com/recallbot/recall/sandbox"
)

// loadConfig reads --config (else RECALL_CONFIG, else config.yaml when it
// exists), the environment and the RECALL_* variables of .env in the
// working directory (config.DefaultSources).
func loadConfig(path string) (config.Config, error) {
	return config.LoadSources(config.DefaultSources(path))
}

// newApp builds the bot (package app) with the production parts, logging
// to logw, for the one-shot commands (bot search, bot context).
func newApp(ctx context.Context, cfg config.Config, logw io.Writer) (*app.App, error) {
	return app.New(ctx, cfg, app.Parts{LogWriter: logw, Version: version, WaitForVectors: true})
}

// runBot runs the chat channels until ctx ends (or, for the terminal chat,
// until end of input), with the health and metrics server on http.listen.
// Once ctx ends it stops taking updates, lets turns in flight finish
// (shutdown.timeout), then flushes the write queue.
//
// In an interactive terminal chat, Ctrl-C (intr) first stops the answer in
// flight; one when no answer runs ends the chat.
func runBot(ctx context.Context, cfg config.Config, stdin io.Reader, stdout, stderr io.Writer, workers *sandbox.Exec, intr *interrupts) error {
	terminal := !cfg.TelegramEnabled() && !cfg.WhatsApp.Enabled
	parts := app.Parts{LogWriter: stderr, Version: version, Journal: !terminal, Workers: workers}
	var logFile *os.File
	if terminal {
		// Keep the chat readable: logs go to a file beside the data.
		if err := os.MkdirAll(cfg.Data.Dir, 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(cfg.Data.Dir, "recall.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		logFile, parts.LogWriter = f, f
		defer logFile.Close()
	}
	stopDebug := startDebug(stderr) // -tags pprof only
	defer stopDebug()
	// The tokenizer's tables (~10 ms of CPU) are built beside the rest of
	// start-up, from its very beginning (the bot's counter shares them),
	// and what else a first turn would pay for is done once the bot is
	// built: not on the first user's turn.
	tables := make(chan struct{})
	go func() { defer close(tables); llm.Preload(llm.NewCounter(cfg.LLM.Model)) }()
	defer func() { <-tables }()
	a, err := app.New(ctx, cfg, parts)
	if err != nil {
		return err
	}
	preloaded := make(chan struct{})
	go func() { defer close(preloaded); <-tables; warmUp(ctx, a) }()
	defer func() { <-preloaded }()
	if c, ok := a.Model.(*llm.Client); ok {
		// Logged with the fix; the bot runs on (commands work). The
		// terminal chat logs to a file: its user reads it on stderr too.
		if err := c.CheckAtStart(ctx, a.Log); err != nil && terminal {
			fmt.Fprintln(stderr, "warning:", logs.NewRedactor(nil, cfg.Secrets()).Redact(err.Error()))
		}
	}
	stopHTTP, err := a.ServeHTTP(terminal)
	if err != nil {
		return errors.Join(err, a.Close())
	}
	stopRetention := a.StartRetention(ctx)
	// Start-up over, and after each busy spell, the free heap goes back to
	// the kernel while the bot is quiet.
	rctx, stopRelease := context.WithCancel(ctx)
	released := make(chan struct{})
	written := func() int64 { return a.Store.WriteStats().Written }
	go func() {
		defer close(released)
		trimWhenQuiet(rctx, preloaded, a.Health, botChannels(cfg), written, a.Log)
	}()
	followed := make(chan struct{})
	go func() { defer close(followed); followLiveHeap(rctx, os.Getenv) }()
	var runErr error
	if terminal {
		a.Log.Info("starting the terminal chat", "data", cfg.Data.Dir)
		interactive := isTerminal(stdin)
		if interactive {
			fmt.Fprintf(stdout, "Recall %s — terminal chat. Type /help for commands, /quit or Ctrl-C to leave (Ctrl-C while I answer stops the answer). Logs: %s\n", version, filepath.Join(cfg.Data.Dir, "recall.log"))
			if a.Model == nil {
				fmt.Fprintln(stdout, app.NotConfigured)
			}
		}
		chat := console.New(stdin, stdout, a.Handler, interactive, console.WithLog(a.Log),
			console.WithExportDir(filepath.Join(cfg.Data.Dir, app.ExportsDir)), console.IfTerminal(stdin))
		if interactive {
			// Ctrl-C stops the answer in flight; from a pipe (a script)
			// it stops the bot as SIGTERM does.
			intr.route(chat.Interrupt)
		}
		runErr = chat.Run(ctx)
		intr.route(nil)
	} else {
		var channels []app.ChannelFunc
		if cfg.TelegramEnabled() {
			channels = append(channels, telegramChannel(cfg))
		}
		if cfg.WhatsApp.Enabled {
			channels = append(channels, whatsappChannel(cfg))
		}
		runErr = a.Run(ctx, channels...)
	}
	stopRelease()
	<-released
	<-followed
	stopRetention()
	stopHTTP()
	return errors.Join(runErr, a.Close())
}

// botChannels names the chat channels cfg runs, as the health report
// names them.
func botChannels(cfg config.Config) []string {
	var out []string
	if cfg.TelegramEnabled() {
		out = append(out, telegram.Channel)
	}
	if cfg.WhatsApp.Enabled {
		out = append(out, whatsapp.Channel)
	}
	return out
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&fs.ModeCharDevice != 0
}
