package telegram

import "errors"

var (
	// ErrBlocked is returned by sends when Telegram answers 403: the user
	// blocked the bot, or the bot was removed from the group. It is logged at
	// info level; nothing is wrong with the bot.
	ErrBlocked = errors.New("telegram: the user blocked the bot or removed it from the chat")

	// ErrBadToken is returned by Run when the Bot API rejects the token (401)
	// or does not know it (404). The error never contains the token.
	ErrBadToken = errors.New("telegram: the Bot API rejected the bot token; check telegram.token (RECALL_TELEGRAM_TOKEN)")
)
