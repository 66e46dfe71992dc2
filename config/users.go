package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/recallbot/recall/pipeline"
)

// Channels whose users access.allowed_users and access.admins name; each
// adapter writes its users' ids (pipeline.Inbound.UserID) as checked here.
const (
	channelTelegram = "telegram" // adapters/telegram: the user's numeric id
	channelWhatsApp = "whatsapp" // adapters/whatsapp/normalize.go senderID
	channelConsole  = "console"  // pipeline.ConsoleUser
)

var (
	// userRE matches access entries "channel:id": a lowercase channel name,
	// a colon, and a non-empty id without whitespace.
	userRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*:\S+$`)
	// tgUserRE matches a Telegram id as the adapter writes it: a signed
	// integer without "+" or leading zeros.
	tgUserRE = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)
	// waUserRE matches a WhatsApp id: the phone number in international
	// form, digits only, or the "…@lid" id of a user whose number the
	// bot could not learn.
	waUserRE = regexp.MustCompile(`^([1-9][0-9]{4,14}|[0-9]{1,25}@lid)$`)
)

// userProblem says what is wrong with an access entry ("telegram:123456"),
// or returns "" when it names a user as its channel writes them.
func userProblem(entry string) string {
	if !userRE.MatchString(entry) {
		return fmt.Sprintf("must be \"channel:id\" with a lowercase channel (e.g. telegram:123456, console:local), got %q", entry)
	}
	channel, id, _ := strings.Cut(entry, ":")
	switch channel {
	case channelTelegram:
		if _, err := strconv.ParseInt(id, 10, 64); err != nil || !tgUserRE.MatchString(id) {
			return fmt.Sprintf("a Telegram user id is a number (e.g. telegram:123456; the bot tells a user theirs when it refuses them), got %q", entry)
		}
	case channelWhatsApp:
		if !waUserRE.MatchString(id) {
			return fmt.Sprintf("a WhatsApp user id is the phone number in international form, digits only without + or spaces (e.g. whatsapp:4915112345678), got %q", entry)
		}
	case channelConsole:
		if entry != pipeline.ConsoleUser {
			return fmt.Sprintf("the terminal's user is %s, got %q", pipeline.ConsoleUser, entry)
		}
	default:
		return fmt.Sprintf("the channel must be %s, %s or %s, got %q", channelTelegram, channelWhatsApp, channelConsole, entry)
	}
	return ""
}
