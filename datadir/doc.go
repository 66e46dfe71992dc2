// Package datadir owns the data directory's lock: one process at a time
// writes a data directory (the bot, `bot import`, `bot whatsapp login`), so
// two never interleave their writes to the crash journal, the JSON files or
// the WhatsApp session. The lock is an flock(2) on the file recall.lock in
// the directory, which also holds the holder's PID for the message a second
// writer gets; the kernel releases it when the holder exits, however it
// exits (a crash or kill -9 leaves no stale lock). Subcommands that only
// read (export, search, context, backup) take no lock and run beside the bot.
package datadir
