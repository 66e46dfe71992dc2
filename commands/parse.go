package commands

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Parsed is a command line split into its parts.
type Parsed struct {
	Name string // lowercased, without "/" and "@bot"
	Bot  string // the @BotName suffix, "" when absent
	Args string // the rest, trimmed
}

// Parse splits "/Cmd@BotName  some args". ok is false when text is not a
// command: it must start with "/" followed by a letter; names are letters,
// digits and "_" (at most 32, as on Telegram).
func Parse(text string) (Parsed, bool) {
	text = strings.TrimLeft(text, " \t\r\n")
	if !strings.HasPrefix(text, "/") || !utf8.ValidString(text) {
		return Parsed{}, false
	}
	// The name ends at the first white space of any kind: "/summary\nsqlite 15"
	// and "/summary\u00a0sqlite" are the command summary with arguments.
	head, args := text[1:], ""
	if i := strings.IndexFunc(head, unicode.IsSpace); i >= 0 {
		head, args = head[:i], head[i:]
	}
	name, bot, _ := strings.Cut(head, "@")
	if name == "" || len(name) > 32 {
		return Parsed{}, false
	}
	for i, r := range name {
		if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')) || (i == 0 && !unicode.IsLetter(r)) {
			return Parsed{}, false
		}
	}
	return Parsed{Name: strings.ToLower(name), Bot: bot, Args: strings.TrimSpace(args)}, true
}

// ForBot reports whether a command addressed with @bot is meant for botName
// (a command without @ is meant for every bot in the chat).
func (p Parsed) ForBot(botName string) bool {
	return p.Bot == "" || botName == "" || strings.EqualFold(p.Bot, strings.TrimPrefix(botName, "@"))
}
