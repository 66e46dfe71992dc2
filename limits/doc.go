// Package limits owns what a user may cost the bot: a per-user rate limit
// (limits.messages_per_minute, Rate) and a daily LLM token quota
// (limits.tokens_per_day, Quota). Both are pipeline stages; 0 means
// unlimited and the stage passes every turn on. The admins (and the terminal
// user) are exempt.
//
// Place them in the chain as
//
//	access → dedupe → Rate → commands → Quota → the responder
//
// The rate limit counts every message addressed to the bot, commands
// included — it guards the bot against floods, and a command costs work too —
// and sits after dedupe, so a platform's redelivery is not counted twice.
// The quota counts only what reaches the LLM, so it sits after the commands:
// with today's tokens used, /search, /export and the rest keep working.
//
// A refused message is not answered, nothing reaches the LLM, and it is not
// kept: where a channel made it durable on arrival (chat.Intake) the stage
// removes that copy again (Discarder), so it is neither in the history nor
// answered after a restart. The user is told why and when they can write
// again, once per stretch of refusals (the rate limit: until a message gets
// through; the quota: at most once an hour); other refused messages are
// dropped silently.
package limits
