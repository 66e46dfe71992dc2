// Package telegram connects a Telegram bot to the pipeline: it receives
// updates, turns them into pipeline.Inbound values with a pure function
// (toInbound), makes them durable through the accept function before
// Telegram is told they arrived, hands them to the pipeline, and sends the
// answers (the Sender, with typing, buttons, edits and files). Every Bot API
// call goes through github.com/go-telegram/bot except getUpdates, which this
// package runs itself (see below). Formatting (Markdown → Telegram HTML,
// splitting) lives in the format subpackage.
//
// # Delivery: no update lost, none answered twice
//
// The library's poller confirms an update before its handler runs, so a crash
// loses it. This package polls itself: for each batch of getUpdates it
// normalizes every update, accepts each (chat.Intake.Accept stores what the
// LLM will answer; on failure it backs off and retries without confirming),
// submits them in order, and only then advances the offset; the next
// getUpdates confirms the batch. After a crash the unconfirmed updates come
// again: those already answered are dropped by the dedupe stage, those
// stored but unanswered are answered (the wiring also resubmits
// chat.Pending at start). In webhook mode an update is accepted before the
// 200 (500 on failure, so Telegram retries); a request without the right
// X-Telegram-Bot-Api-Secret-Token gets 401 and is not looked at. Polling mode
// deletes any webhook at start (pending updates are kept); webhook mode
// registers the webhook with the secret and leaves it registered at stop so
// Telegram keeps updates meanwhile.
//
// Network errors and 5xx are retried with exponential backoff and jitter,
// 429 after its retry_after; 401 or 404 (a bad token) stop Run with
// ErrBadToken, which names telegram.token and never contains the token; a
// 400 to getMe, deleteWebhook or setWebhook stops Run too (retrying cannot
// help). A getUpdates that does not answer within PollTimeout plus a margin
// is cancelled and sent again; a 409 is logged as another instance polling
// or a webhook being set. Health reports those failures, a store that keeps
// refusing incoming messages, and polling gone stale (no getUpdates
// completed for three poll timeouts). The webhook server caps its
// connections (connlimit) and times out slow and idle ones.
//
// # Behaviour decisions
//
//   - Conversations: Key{Channel: "telegram", Chat: chat id, Thread: topic
//     id} — Thread only for a message in a topic of a forum supergroup or of
//     a private chat with topics; the General topic and reply threads of
//     ordinary groups are the chat. A group upgraded to a supergroup gets
//     its replies in the new chat, and its memory moves (Options.OnMigrate).
//   - Groups (telegram.groups.reply): "mention" answers only messages that
//     mention the bot (@username or a text mention), reply to one of its
//     messages, are commands or press its buttons; "always" marks every
//     group message as mentioning the bot. The mention is removed from the
//     text where it addresses the bot (start or end); in the middle of a
//     sentence it is replaced by the bot's name.
//   - Commands: "/cmd@ThisBot" becomes "/cmd"; "/cmd@OtherBot" is ignored;
//     in a group a bare command the bot does not know (Options.KnownCommands)
//     is ignored too: it is most likely another bot's.
//   - Group privacy mode: getMe's can_read_all_group_messages=false is
//     logged as a warning at start (plain @mentions never arrive then).
//   - Captions of photos, videos and documents are read as the text.
//   - Edited messages are ignored: the original was answered already, and
//     the stored history keeps what the bot answered to. Answering every
//     typo fix again would flood the chat with near-identical replies.
//   - Stickers, photos without caption, voice and video notes, documents
//     without caption, locations, polls…: in a private chat the adapter
//     answers TextOnlyReply ("I can read text only for now.") directly — not
//     the LLM, nothing stored — to allowed users (Options.Allowed); in groups
//     they are ignored. At most one notice per album (none when an item has
//     a caption) and per chat every DefaultNoticeEvery.
//   - An update the library's models refuse (a variant newer than it) is
//     decoded again with only the fields the bot uses, so its text is still
//     answered; the webhook answers 200 to a body it cannot use at all.
//   - Service messages (joins, pins, title changes…), channel posts,
//     automatic forwards and messages of other bots are ignored.
//   - Button presses become an Inbound with Choice = the button's data, Text
//     = its label, MessageID = "cb:"+callback id; the query is answered at
//     once (answerCallbackQuery) in the background — every press, also one
//     the bot does not handle — and the buttons are removed from the
//     question (in a group only when the asker pressed). Keyboards are sent
//     as our own JSON (inlineKeyboard: the library's adds an empty
//     copy_text to every button). Data longer than 64 bytes is sent as a
//     short id and mapped back (in memory).
//   - Replies: the first part of an answer replies to the user's message
//     (allow_sending_without_reply); answers longer than 4096 characters are
//     split into valid HTML parts. When Telegram cannot parse the HTML
//     ("can't parse entities") the part is sent again as plain text: the
//     whole message as format.Plain of the Markdown when it is one part, else
//     that part's own text.
//   - Flood limits (pacer): one schedule per chat, shared by its topics,
//     streams and sends: DefaultChatEvery between calls, in a group at most
//     DefaultGroupPerMinute a minute and edits DefaultGroupEditEvery apart.
//     A 429 holds the whole chat for its retry_after, however long; the
//     call is then made again (only ctx ends the wait). 403 (blocked,
//     removed from the group) is logged at info and returned as ErrBlocked.
//     Typing never retries and never blocks. Link previews are off unless
//     Options.LinkPreviews.
//   - Streaming (Options.Stream; the Sender is then a pipeline.Streamer):
//     the reply is shown while the model writes it, as plain text (half
//     written Markdown is not rendered), at most one update per second
//     counted from the end of the previous one, deltas coalesced, an
//     unchanged text not sent again. In a private chat it is a draft
//     (sendMessageDraft) and Finish sends the formatted reply as a message;
//     when Telegram refuses drafts (400) the adapter stops trying them and
//     streams by edits. Elsewhere the first text is sent as a message (in
//     the topic, replying to the user's message) and edited as the text
//     grows; Finish edits it into the first formatted part and sends the
//     other parts after it. "message is not modified" is ignored; a 429
//     skips updates until retry_after, and the final edit waits it out; a
//     failed edit or send stops the showing and Finish sends the reply as
//     new messages, so nothing is lost. Updates never block the model's
//     stream: one goroutine per stream shows the text; Finish stops it.
//     The stream is a pipeline.ShownStream: the id of the message showing
//     it is reported as soon as it is sent, for the outbox's journal.
//
// # Goroutines
//
// Run owns everything it starts (the poll loop or the webhook server, button
// answers, notices, the command menu) and returns after all of it ended.
// The Sender may be used before Run and after it returned.
package telegram
