// Package chat owns answering a message with the language model — the stages
// after the commands: store the user's message (write-behind), assemble the
// context, call the LLM with a typing indicator, store the reply durably,
// send it, then trigger summarization and fact extraction in the background.
package chat
