package pipeline

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// Key names one conversation: a chat on a channel, optionally a thread (a forum
// topic) inside it. It is the identity under which history, summaries and
// settings are stored, and it survives restarts.
type Key struct {
	Channel string // "telegram", "whatsapp", "console"
	Chat    string // the platform's chat id
	Thread  string // forum topic / thread id; "" when the chat has none
}

// ErrBadKey is returned by ParseKey for text that is not a key.
var ErrBadKey = errors.New("malformed conversation key")

// String renders the key as channel:chat:thread, e.g. "telegram:123:7" or
// "whatsapp:4915112345678@s.whatsapp.net:". Colons inside the chat id are kept;
// the thread is everything after the last colon.
func (k Key) String() string {
	return k.Channel + ":" + k.Chat + ":" + k.Thread
}

// Owner is the scope that owns settings, memories and storage for this
// conversation: the channel and chat ("telegram:123"). In a private chat that is
// the user; in a group it is the group. Topics of one group share an owner.
func (k Key) Owner() string {
	return k.Channel + ":" + k.Chat
}

// LogValue keeps keys readable in structured logs.
func (k Key) LogValue() slog.Value { return slog.StringValue(k.String()) }

// IsZero reports whether the key is empty.
func (k Key) IsZero() bool { return k == Key{} }

// Validate reports whether the key can be stored: a channel of lowercase
// letters, a non-empty chat id, and no control characters.
func (k Key) Validate() error {
	if k.Channel == "" || k.Chat == "" {
		return fmt.Errorf("%w: channel and chat are required (%q)", ErrBadKey, k.String())
	}
	for _, r := range k.Channel {
		if r < 'a' || r > 'z' {
			return fmt.Errorf("%w: channel %q must be lowercase letters", ErrBadKey, k.Channel)
		}
	}
	if strings.ContainsAny(k.Thread, ":") {
		return fmt.Errorf("%w: thread %q must not contain ':'", ErrBadKey, k.Thread)
	}
	for _, r := range k.Chat + k.Thread {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: control character in %q", ErrBadKey, k.String())
		}
	}
	return nil
}

// ParseKey parses "channel:chat:thread" (the thread may be empty, and
// "channel:chat" without a thread is accepted). Chat ids may themselves hold
// colons; the channel ends at the first colon and the thread starts after the
// last one when three or more parts are present.
func ParseKey(s string) (Key, error) {
	channel, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Key{}, fmt.Errorf("%w: %q has no ':'", ErrBadKey, s)
	}
	k := Key{Channel: channel, Chat: rest}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		k.Chat, k.Thread = rest[:i], rest[i+1:]
	}
	if err := k.Validate(); err != nil {
		return Key{}, err
	}
	return k, nil
}
