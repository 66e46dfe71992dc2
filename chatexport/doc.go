// Package chatexport reads the chat histories people export from their
// messaging apps — Telegram Desktop's "Export chat history" JSON
// (result.json) and WhatsApp's "Export chat" text (.txt, or the .zip that
// holds it, without media) — into messages Recall can import into a
// conversation's archive. Parsing is pure and never trusts the file: any
// input gives messages or a clear error, never a panic.
package chatexport
