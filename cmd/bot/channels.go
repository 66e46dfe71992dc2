package main

import (
	"context"
	"github.com/recallbot/recall/adapters/telegram"
	"github.com/recallbot/recall/adapters/whatsapp"
	"github.com/recallbot/recall/app"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/ops"
	"github.com/recallbot/recall/pipeline"
)

// telegramChannel builds the Telegram adapter from telegram.*.
func telegramChannel(cfg config.Config) app.ChannelFunc {
	return func(w app.Wiring) (app.Channel, error) {
		var menu []telegram.Command
		for _, c := range w.Commands {
			menu = append(menu, telegram.Command{Name: c.Name, Help: c.Help})
		}
		tg, err := telegram.New(telegram.Options{
			Token: cfg.Telegram.Token, APIURL: cfg.Telegram.APIURL,
			Webhook:     telegram.Webhook{URL: cfg.Telegram.Webhook.URL, Listen: cfg.Telegram.Webhook.Listen, Secret: cfg.Telegram.Webhook.Secret},
			GroupsReply: cfg.Telegram.Groups.Reply, Stream: cfg.Telegram.Stream, LinkPreviews: cfg.Telegram.LinkPreviews,
			Log: w.Log.With("channel", telegram.Channel), Commands: menu, KnownCommands: w.Known, Allowed: w.Allowed,
			OnReconnect: func() { w.Metrics.ChannelReconnected(telegram.Channel) },
			OnMigrate: func(ctx context.Context, from, to pipeline.Key) error {
				_, err := w.Store.MoveChat(ctx, from, to)
				return err
			},
		}, w.Submit, w.Accept)
		if err != nil {
			return app.Channel{}, err
		}
		// Long polling: one replica at a time (on PostgreSQL); a webhook
		// runs on every replica behind the load balancer.
		return app.Channel{Name: telegram.Channel, Sender: tg.Sender(), Run: tg.Run, Health: tg,
			Leader: cfg.Telegram.Webhook.URL == "", Restore: tg.Restore}, nil
	}
}

// whatsappChannel builds the WhatsApp adapter from whatsapp.*. Its sender
// waits for the connection, and a failure (not linked, logged out) stops
// only this channel.
func whatsappChannel(cfg config.Config) app.ChannelFunc {
	return func(w app.Wiring) (app.Channel, error) {
		wa, err := whatsapp.New(whatsapp.Options{DataDir: cfg.Data.Dir, DatabaseURL: cfg.Database.URL, GroupsReply: cfg.WhatsApp.Groups.Reply,
			BacklogWindow: cfg.WhatsApp.BacklogWindow, SplitLimit: cfg.WhatsApp.SplitLimit, ClientVersion: cfg.WhatsApp.ClientVersion,
			Allowed: w.Allowed, Log: w.Log.With("channel", whatsapp.Channel),
			Revoked: func(ctx context.Context, key pipeline.Key, id, sender string) error {
				_, err := w.Store.PurgeMessage(ctx, key, id, sender)
				return err
			},
			Replies: storedReplies(w.Store)}, w.Submit, w.AcceptStored)
		if err != nil {
			return app.Channel{}, err
		}
		// On PostgreSQL one replica holds the connection (its lease) and
		// answers WhatsApp's turns: only it can send.
		return app.Channel{Name: whatsapp.Channel, Sender: wa.Sender(), Run: wa.Run, Health: wa, Close: wa.Close,
			Leader: true, LeaderTurns: true, Yield: wa.Yield,
			Window: wa.BacklogWindow(), Connects: true}, nil
	}
}

// storedReplies lists the bot's replies among a conversation's newest
// limit messages, newest first: what a WhatsApp retry receipt is matched
// against after a restart.
func storedReplies(store *memory.Store) func(ctx context.Context, key pipeline.Key, limit int) ([]whatsapp.Reply, error) {
	return func(ctx context.Context, key pipeline.Key, limit int) ([]whatsapp.Reply, error) {
		msgs, err := store.Recent(ctx, key, limit, 0)
		if err != nil {
			return nil, err
		}
		var out []whatsapp.Reply
		for i := len(msgs) - 1; i >= 0; i-- {
			if m := msgs[i]; m.Role == memory.RoleAssistant {
				out = append(out, whatsapp.Reply{Text: m.Text, ReplyTo: m.ReplyTo})
			}
		}
		return out, nil
	}
}

var (
	_ ops.HealthReporter = (*telegram.Adapter)(nil)
	_ ops.HealthReporter = (*whatsapp.Adapter)(nil)
)
