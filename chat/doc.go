// Package chat owns answering a message with the language model — the stages
// after the commands: store the user's message (write-behind), assemble the
// context, call the LLM with a typing indicator, store the reply durably,
// send it, then trigger summarization and fact extraction in the background.
//
// When the adapter's Sender is a pipeline.Streamer and the model can stream
// (StreamModel), the answer is shown as it is written; the typing indicator
// stops at the first text; the complete reply is stored durably before the
// stream is finished into the final message. A stream that breaks after
// some text was shown keeps that text with a note that it was cut off: that
// is the reply stored and delivered, so the history holds what the user
// read and the message is not answered again. A failure before any text is
// handled as without streaming (a plain message; the user's message stays
// unanswered). A crash in the middle of a stream, or a stop that cancels
// the turn, leaves the partial text on the platform and nothing stored: the
// Outbox journals the message showing it (pipeline.ShownStream), the next
// start edits that message into a note (CutReplyFollows) and answers the
// message again (Pending).
package chat
