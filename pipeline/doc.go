// Package pipeline owns the shape of a turn: the Inbound and Outbound message
// types, the conversation Key, the Handler/Middleware stage chain, and the
// dispatcher that keeps each conversation's turns in order while different
// conversations run concurrently. It imports no other project package;
// adapters, the store, the commands and the LLM client import it for its
// types, and cmd/bot wires the stages together.
//
// # A turn
//
// An adapter normalizes a platform update into an Inbound and hands it, with
// itself as the Sender, to Dispatcher.Submit. The dispatcher runs the chain
// for it in a goroutine of its own, with a context of its own, strictly after
// the conversation's previous turn. The chain is built with Chain, the first
// stage outermost:
//
//  1. access (package access): unknown senders get one clear answer with
//     their id; nothing is stored, nothing reaches an LLM.
//  2. dedupe (Dedupe): a platform message already answered in this
//     conversation is dropped, durably through the store (Seen).
//  3. rate limit (package limits): per-user messages per minute.
//  4. commands: "/…" handled and answered here; the turn ends. Then the
//     daily token quota (package limits).
//  5. session: the Key resolves the conversation; history and summaries are
//     read from the store (queued writes included) by the assembly, so
//     nothing is cached per process that a restart could lose.
//  6. persist the user message: enqueued to the write-behind writer.
//  7. assemble the context within the token budget.
//  8. LLM: typing indicator (Typer) while waiting, retries with backoff.
//  9. persist the assistant message (durably, before it is sent).
//  10. reply: Outbound, formatted and split by the adapter.
//  11. summarize in the background when the trigger holds.
//
// This package provides stage 2 and the machinery; the others live in
// the packages that own their data and plug in as Middleware or as the final
// Handler. A stage that consumes a turn returns without calling next.
//
// # Senders
//
// Sender is all an adapter must implement. Typer, Chooser, Editor,
// Streamer (and ShownStream) and FileSender are optional capabilities
// discovered by type assertion; the helpers (WithChoices, PickChoice) give
// the plain-text fallback when a platform lacks buttons.
//
// # Lifecycle
//
// Dispatcher.Run blocks until its context ends, then drains: it stops
// accepting turns, lets running and queued turns finish within a grace
// period, cancels whatever is still running after it and reports what was
// dropped. Every goroutine the dispatcher starts has returned when Run or
// Shutdown returns.
package pipeline
