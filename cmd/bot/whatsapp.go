package main

import (
	"context"
	"flag"
	"io"

	"github.com/recallbot/recall/adapters/whatsapp"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/logs"
)

// runWhatsApp links (login) or unlinks (logout) the WhatsApp account.
func runWhatsApp(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) error {
	const use = "usage: bot whatsapp login [--phone +4915112345678] | bot whatsapp logout"
	if len(args) == 0 {
		return usageError(use)
	}
	opts := whatsapp.Options{DataDir: cfg.Data.Dir, DatabaseURL: cfg.Database.URL, ClientVersion: cfg.WhatsApp.ClientVersion, Log: logs.New(stderr, cfg.Log.Level, cfg.Log.Format, cfg.Secrets())}
	switch args[0] {
	case "login":
		fl := flag.NewFlagSet("whatsapp login", flag.ContinueOnError)
		fl.SetOutput(io.Discard)
		phone := fl.String("phone", "", "link with a pairing code for this phone number instead of a QR code")
		if err := fl.Parse(args[1:]); err != nil || fl.NArg() > 0 {
			return usageError(use)
		}
		return whatsapp.Login(ctx, opts, stdout, *phone)
	case "logout":
		if len(args) > 1 {
			return usageError(use)
		}
		return whatsapp.Logout(ctx, opts)
	}
	return usageError(use)
}
