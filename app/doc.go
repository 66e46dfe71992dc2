// Package app owns the wiring of the whole bot: it builds every part from a
// configuration plus the injectable outside parts (the model, the clock, the
// log, the chat channels) — store, metrics and health, assembly, summaries,
// the responder, commands, access, rate and token limits, the chain of
// stages, the dispatcher, the intake and the delivery journal — and runs a
// set of chat channels with one loop (replies left unsent → messages left
// unanswered → health → run, per channel). cmd/bot is a thin call into it;
// the adapters' tests, the fault tests and the benchmarks build the bot
// through it too, so what they exercise is what runs.
//
// app knows no chat platform: a channel is handed in as a ChannelFunc that
// builds the adapter from the Wiring (so an adapter's own tests may build
// the bot through app).
package app
