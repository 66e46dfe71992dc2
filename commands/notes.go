package commands

// The notes family: /remember, /memories, /forget.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/recallbot/recall/memory"
)

func runRemember(ctx context.Context, c *Call) error {
	key, text := c.Args, ""
	if i := strings.IndexFunc(c.Args, unicode.IsSpace); i >= 0 {
		key, text = c.Args[:i], strings.TrimSpace(c.Args[i:])
	}
	if key == "" || text == "" {
		return usage("Use /remember <key> <text>, e.g. /remember city I live in Lisbon. The key is lowercase letters, digits and _.")
	}
	if refused, err := c.othersNote(ctx, key, "replace"); err != nil || refused != "" {
		if err != nil {
			return err
		}
		return c.Reply(ctx, refused)
	}
	err := c.store.RememberBy(ctx, c.Key.Owner(), c.Turn.In.UserID(), key, text)
	switch {
	case errors.Is(err, memory.ErrBadMemoryKey):
		return usage("%s. Example: /remember favourite_food pasta.", strings.TrimPrefix(err.Error(), memory.ErrBadMemoryKey.Error()+": "))
	case errors.Is(err, memory.ErrMemoryCap):
		return usage("You already have the maximum number of notes. Delete one with /forget <key> first (see /memories).")
	case err != nil:
		if strings.Contains(err.Error(), "characters") || strings.Contains(err.Error(), "empty") {
			return usage("%s.", err.Error())
		}
		return err
	}
	return c.Reply(ctx, fmt.Sprintf("Noted under %q. I'll keep it in mind.", key))
}

func runMemories(ctx context.Context, c *Call) error {
	if err := noArgs(c); err != nil {
		return err
	}
	mems, err := c.store.Memories(ctx, c.Key.Owner())
	if err != nil {
		return err
	}
	if len(mems) == 0 {
		return c.Reply(ctx, "You have no notes yet. Add one with /remember <key> <text>.")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Your notes (%d):\n", len(mems))
	for _, m := range mems {
		fmt.Fprintf(&b, "• %s: %s\n", m.Key, m.Content)
	}
	b.WriteString("Delete one with /forget <key>.")
	return c.Reply(ctx, b.String())
}

func runForget(ctx context.Context, c *Call) error {
	key := strings.TrimSpace(c.Args)
	if key == "" || strings.ContainsAny(key, " \t\n") {
		return usage("Use /forget <key>, e.g. /forget city. /memories lists your keys.")
	}
	if refused, err := c.othersNote(ctx, key, "delete"); err != nil || refused != "" {
		if err != nil {
			return err
		}
		return c.Reply(ctx, refused)
	}
	ok, err := c.store.Forget(ctx, c.Key.Owner(), key)
	if err != nil {
		return err
	}
	if !ok {
		return usage("There is no note called %q. /memories lists your keys.", key)
	}
	return c.Reply(ctx, fmt.Sprintf("Forgotten: %q.", key))
}

// othersNote returns what the sender reads when, in a group, they try to
// delete or replace (verb) note key that someone else wrote: a note is
// its author's, and only the bot's admins (access.admins) change another
// member's. A note whose author is unknown (written before notes recorded
// it) takes an admin too. "" when the change may go ahead: a private chat,
// the sender's own note, no such note, or an admin.
func (c *Call) othersNote(ctx context.Context, key, verb string) (string, error) {
	if !c.Turn.In.IsGroup {
		return "", nil
	}
	user := c.Turn.In.UserID()
	if c.isAdmin != nil && c.isAdmin(user) {
		return "", nil
	}
	mems, err := c.store.Memories(ctx, c.Key.Owner())
	if err != nil {
		return "", fmt.Errorf("reading the notes of %s: %w", c.Key.Owner(), err)
	}
	for _, m := range mems {
		if m.Key != key || m.WrittenBy(user) {
			continue
		}
		who := "another member"
		if m.Author == "" {
			who = "someone before notes recorded their author"
		}
		msg := fmt.Sprintf("The note %q was written by %s: in a group, only its author or the bot's admins can %s it.", key, who, verb)
		if verb == "replace" {
			msg += " Pick another key for your own note."
		}
		return msg, nil
	}
	return "", nil
}
