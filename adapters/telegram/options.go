package telegram

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// DefaultAPIURL is Telegram's Bot API server.
const DefaultAPIURL = "https://api.telegram.org"

// DefaultPollTimeout is how long one getUpdates call waits for updates.
const DefaultPollTimeout = 30 * time.Second

// Options configure an Adapter. Token is required; every other zero value
// means the default.
type Options struct {
	// Token is the bot token from @BotFather (telegram.token). It never
	// appears in logs or errors.
	Token string
	// APIURL is the Bot API server (DefaultAPIURL): a self-hosted one, or a
	// fake in tests.
	APIURL string
	// Webhook, when its URL is set, receives updates instead of long polling.
	Webhook Webhook
	// GroupsReply is GroupsReplyMention (default) or GroupsReplyAlways.
	GroupsReply string
	// Stream shows replies while the model writes them (the Sender is then
	// a pipeline.Streamer): as a draft in private chats while Telegram
	// accepts drafts, else as a message edited at most once a second, in
	// plain text, until it is edited into the formatted reply.
	Stream bool
	// LinkPreviews shows the preview of a link under messages; off (the
	// default) sends every message and edit with previews disabled.
	LinkPreviews bool
	// HTTPClient makes the API calls (default: a client without timeout;
	// every call has its own deadline). Its Timeout is ignored for
	// getUpdates, which waits up to PollTimeout on purpose.
	HTTPClient *http.Client
	// Log receives the adapter's logs; nil discards.
	Log *slog.Logger
	// Commands are registered as the bot's command menu (setMyCommands) at
	// start; empty leaves the menu alone.
	Commands []Command
	// KnownCommands are the names (without "/") of every command the bot
	// runs, hidden ones included; empty means the names of Commands. In a
	// group, a command not among them is answered only when written
	// /cmd@ThisBot: "/weather" is usually meant for another bot. Empty
	// with empty Commands: every command goes on.
	KnownCommands []string
	// PollTimeout is how long one getUpdates call waits (DefaultPollTimeout);
	// rounded to whole seconds, at least one.
	PollTimeout time.Duration
	// Allowed, when set, decides who gets the direct "text only" answer to a
	// sticker or a photo in a private chat (access.allowed_users): strangers
	// get nothing from the adapter itself. Text messages always go to the
	// pipeline, whose access stage answers strangers.
	Allowed func(userID string) bool
	// OnMigrate, when set, moves what is stored for a group to the
	// supergroup it was upgraded to (memory.Store.MoveChat); it is called
	// when the upgrade's service message arrives, before the messages after
	// it are handled. Replies are sent to the new chat either way.
	OnMigrate func(ctx context.Context, from, to pipeline.Key) error
	// OnReconnect, when set, is called each time receiving updates works
	// again after failing (metrics).
	OnReconnect func()
}

// Webhook configures webhook delivery (telegram.webhook.*).
type Webhook struct {
	URL    string // public https URL Telegram posts updates to; "" means long polling
	Listen string // local address the webhook server listens on, e.g. ":8443"
	Secret string // secret_token Telegram sends in X-Telegram-Bot-Api-Secret-Token; required with URL
}

// Command is one entry of the bot's command menu.
type Command struct {
	Name string // without "/"
	Help string // one line
}
