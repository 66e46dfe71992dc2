package whatsapp

import (
	"context"
	"log/slog"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// Channel is the pipeline channel name of WhatsApp conversations.
const Channel = "whatsapp"

// Group reply policies (Options.GroupsReply, whatsapp.groups.reply).
const (
	GroupsReplyMention = string(pipeline.GroupReplyMention) // answer only when mentioned, replied to or commanded
	GroupsReplyAlways  = string(pipeline.GroupReplyAlways)  // answer every group message
)

// Defaults for Options.
const (
	DefaultBacklogWindow = 10 * time.Minute
	DefaultSplitLimit    = 16000
	// minSplitLimit keeps room for the markers closed and reopened at a split.
	minSplitLimit = 100
)

// Reply is a stored reply of the bot: its text and the platform id of the
// message it answered ("" for a message that answered none).
type Reply struct {
	Text    string
	ReplyTo string
}

// Options configure an Adapter, Login and Logout. Zero values mean the
// defaults.
type Options struct {
	// DataDir holds the session store, SessionPath(DataDir) (data.dir).
	DataDir string
	// DatabaseURL (database.url), when set, keeps the session store in
	// that PostgreSQL database (whatsmeow's own whatsmeow_* tables, beside
	// Recall's) instead of DataDir, so whichever replica holds the
	// connection (RunLeader) has the linked device's keys.
	DatabaseURL string
	// GroupsReply is GroupsReplyMention (default) or GroupsReplyAlways
	// (whatsapp.groups.reply).
	GroupsReply string
	// BacklogWindow: a message older than this when it arrives (queued by
	// WhatsApp while the bot was offline) is stored but not answered
	// (whatsapp.backlog_window). 0 means DefaultBacklogWindow; a negative
	// value answers queued messages of any age.
	BacklogWindow time.Duration
	// SplitLimit is the longest message sent, in characters; longer replies
	// are split (whatsapp.split_limit). 0 means DefaultSplitLimit; at least
	// 100.
	SplitLimit int
	// ClientVersion forces the WhatsApp Web version the client presents
	// ("2.3000.1031234567", whatsapp.client_version); "" fetches the
	// current one at start (and after a 405), falling back to the last one
	// WhatsApp accepted (VersionFile in DataDir).
	ClientVersion string
	// LatestVersion returns WhatsApp Web's current version. nil: fetched
	// from web.whatsapp.com with the real client, not at all with Client.
	LatestVersion LatestVersionFunc
	// Allowed reports whether a user ("whatsapp:4915112345678") may talk to
	// the bot; nil allows everyone. Only the adapter's own messages (a
	// request to send an unreadable message again) ask it: access to the
	// chat is the pipeline's.
	Allowed func(userID string) bool
	// Revoked removes a message its sender deleted for everyone from the
	// bot's memory (memory.Store.PurgeMessage): the conversation, the
	// message's id, who deleted it. nil ignores deletions.
	Revoked func(ctx context.Context, key pipeline.Key, platformID, senderID string) error
	// Replies returns the bot's newest stored replies in a conversation
	// (at most limit, newest first; others may be mixed in and are
	// skipped), so a retry receipt for a reply sent before a restart is
	// answered (the parts' ids are derived from the reply). nil: only the
	// messages this process sent are found.
	Replies func(ctx context.Context, key pipeline.Key, limit int) ([]Reply, error)
	// Log receives the adapter's logs; nil discards.
	Log *slog.Logger
	// Client replaces the whatsmeow client (tests). When nil, New opens the
	// session store in DataDir and builds the real client.
	Client Client
}
