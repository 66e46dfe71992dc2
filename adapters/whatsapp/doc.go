// Package whatsapp connects a linked WhatsApp account (go.mau.fi/whatsmeow,
// the multi-device web protocol) to the pipeline. It owns the session store
// (<data.dir>/whatsapp.db, SQLite through the same driver as the memory
// store, 0600), linking and unlinking the account (Login, Logout), the
// connection and its events (Adapter.Run), turning messages into
// pipeline.Inbound values with a pure function (toInbound), and sending the
// answers (the Adapter is the pipeline.Sender, Typer, Chooser and
// FileSender), with Markdown rendered for WhatsApp and long replies split
// (format.go, split.go). Everything goes through Client, a narrow interface
// in front of *whatsmeow.Client, so tests run on a fake.
//
// # Linking
//
// Login prints QR codes in the terminal (WhatsApp → Settings → Linked
// devices → Link a device) or, given a phone number, a pairing code to type
// on that phone. The device appears as "Recall" among the phone's linked
// devices. Logout unlinks it and deletes the session. Run without a session
// returns ErrNotLinked at once, saying to run `bot whatsapp login`; the
// other channels keep running.
//
// # Delivery: no message lost, none answered twice
//
// whatsmeow is set to acknowledge a message only after the event handler
// returned true (SynchronousAck), and to keep its decrypted text until then
// (EnableDecryptedEventBuffer). The handler normalizes the message, makes
// it durable with accept (chat.Intake.AcceptStored), submits it to the dispatcher
// and returns; the LLM never runs inside it. When accept fails (also
// while storage is failing: a message is acknowledged only once it is on
// disk), when the handler panics, or when
// the pipeline is shutting down, the handler returns false: the message is
// not acknowledged and WhatsApp delivers it again after the next connect,
// which the adapter forces after a backoff. A
// redelivery of a message already handed to the pipeline in this process
// is dropped by the adapter (an in-process set of the last 4096 messages);
// across restarts the dedupe stage drops what is stored and answered, and
// the wiring resubmits what was accepted but never answered (chat.Pending,
// with the same backlog window).
//
// # Behaviour decisions
//
//   - Conversations: Key{Channel: "whatsapp", Chat: the chat JID
//     ("4915112345678@s.whatsapp.net" or "120363…@g.us"), Thread: ""}. The
//     sender id is the phone number ("4915112345678"), so access lists name
//     users "whatsapp:4915112345678".
//   - LIDs: WhatsApp increasingly names people by a @lid id instead of their
//     phone number. A @lid sender — and a direct chat on a @lid JID — is
//     mapped to the phone number (the message's own alternative address,
//     else the session's LID map), so a person is one user and one
//     conversation whichever id arrives. A LID that cannot be mapped stays
//     as it is ("123456789@lid" as chat and sender id).
//   - Text: plain and extended text, and the captions of images, videos and
//     documents. Everything else — the bot's own messages, status updates
//     (status@broadcast), broadcast lists, newsletters, other bots,
//     protocol messages (history sync notices), reactions, polls, edits,
//     stickers and media without caption — is ignored. A message its sender
//     deletes for everyone (a revoke) is removed from memory with the bot's
//     reply to it (Options.Revoked, memory.Store.PurgeMessage). History sync
//     is not imported (the blobs are not even downloaded).
//   - Groups (whatsapp.groups.reply): "mention" answers messages that
//     mention the bot (by phone number or LID), quote one of its messages,
//     or are commands; every group message still reaches the pipeline (a
//     number answering a /summary question needs no mention). "always"
//     marks every group message as mentioning the bot. The bot's
//     "@<number>" is removed where it addresses the bot (start or end) and
//     replaced by its name in the middle of a sentence.
//   - Replies: in a group the first message of an answer quotes the user's
//     message (when it arrived in this process); in a direct chat answers
//     are not quoted. Choices (/summary, /purge) are a numbered list,
//     answered with the number (no buttons: Buttons() is false).
//   - Offline backlog: a message older than whatsapp.backlog_window (default
//     10 minutes) when it arrives — queued by WhatsApp while the bot was
//     offline — is accepted (stored in the history, so the bot knows it was
//     said) but not answered: answering a stale question late surprises
//     more than it helps. Younger queued messages are answered in order.
//   - Formatting: Markdown becomes WhatsApp formatting: **bold** → *bold*,
//     *italic* and _italic_ → _italic_, ~~strike~~ → ~strike~, inline code
//     and code blocks → ```monospace```, headings → a bold line, list items
//     "• " (numbers kept), links "text (url)", quotes "> ", tables one row a
//     line. A literal *, _, ~ or ` that could format by accident is wrapped
//     in invisible word joiners (U+2060); inside words ("snake_case") it is
//     left alone. Spans do not cross lines (WhatsApp does not format across
//     them): they are closed at a line end and reopened.
//   - Splitting: replies longer than whatsapp.split_limit (default 16000
//     characters) are split at a paragraph break, else a line break, else
//     between words; a span open at a cut is closed and reopened in the next
//     message.
//   - Typing: "typing…" (chat presence composing) while the LLM works, sent
//     at most every 10 seconds, "paused" once the answer is sent. The
//     account is "unavailable" (the phone keeps its notifications) except
//     while it types, when it is "available" (WhatsApp shows typing only
//     then). Read receipts (blue ticks) are sent for messages the bot
//     answers.
//   - Sending: every part of a reply has one message id, derived from the
//     chat, the message answered, the part's place and its text, and used
//     on every attempt (a retry after a dropped socket, the outbox after a
//     reconnect or a restart): the recipient shows it once. Parts are a
//     second or so apart, and all chats share a budget of 30 messages a
//     minute (bursts of 10), to stay clear of anti-spam bans. A reply
//     carries the chat's disappearing-messages timer. A send that cannot
//     reach WhatsApp fails with pipeline.ErrNotDelivered: the outbox keeps
//     the reply and sends it again once the connection is back. Retry
//     receipts (a device that could not decrypt a reply) are answered from
//     the replies sent in this process.
//   - Unreadable messages: a direct message that could not be decrypted,
//     and of which no readable copy came within 2 minutes, is answered
//     "I couldn't read your last message, please send it again."
//   - Connection: whether sends can go out is whatsmeow's own state
//     (IsConnected and IsLoggedIn), never a flag kept from events: its
//     keepalive reconnect sends no Disconnected event. whatsmeow reconnects
//     by itself (the wait grows 2 seconds per failed attempt, capped at 2
//     minutes); besides, the adapter reconnects when keepalives have gone
//     unanswered for 90 seconds (a silent socket), when the connection has
//     been down for 5 minutes (a watchdog), and after a message could not
//     be stored (so WhatsApp delivers it again soon). Sends wait up to 2
//     minutes for a reconnection.
//   - Client version: the login payload carries the WhatsApp Web version
//     set in store.BaseClientPayload (SetWAVersion alone changes only the
//     registration's build hash): at start the adapter sets it to
//     whatsapp.client_version when given, else to web.whatsapp.com's
//     current one (15 s timeout), else to the last one WhatsApp accepted
//     (<data.dir>/whatsapp-version). A 405 "client outdated" fetches it
//     again and reconnects; a 405 that persists stops this channel with an
//     *OutdatedError saying what to do (log and /healthz).
//   - Bans and refusals: a temporary ban stops the channel until its expiry
//     (reason and expiry in the log and /healthz), then it reconnects; an
//     unknown refusal is retried after 5 minutes. LoggedOut (the device was
//     removed on the phone) stops this channel with ErrLoggedOut;
//     StreamReplaced (another copy of the bot took the session) stops it
//     with ErrStreamReplaced.
//   - The phone: WhatsApp unlinks a companion whose phone has been offline
//     for about 14 days; after 12 days without a sign of the phone (a
//     message or receipt it sent) the log and /healthz warn.
//   - /export is sent as a document (application/json) with its file name.
//   - Logs: whatsmeow's own debug output (protocol dumps, which can carry
//     message text) is logged below slog's Debug level.
//
// # Goroutines
//
// Run owns the event handler's background work (read receipts, presence,
// the unreadable-message notices), the watchdog and the waits for a ban's
// expiry, and returns after they ended. The whatsmeow connection outlives Run until
// Close, so turns still in the dispatcher at shutdown can send their
// replies. The Sender may be used before Run (sends wait for the
// connection) and until Close.
package whatsapp
