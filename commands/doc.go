// Package commands owns what users can ask of the bot with a slash command:
// /start, /help, /summary and its relatives, /remember, /memories, /forget,
// /search, /context, /export, /purge, /cancel. Commands are declared as data
// in one list and parsed by one parser ("/cmd@BotName args", any case). The
// multi-step flows (/summary's storage-then-threshold, /purge's yes/no) are
// per conversation, cancellable and expire.
package commands
