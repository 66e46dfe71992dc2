package commands

// The /purge family: what to delete, then a yes/no confirmation.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

var purgeChoices = []pipeline.Choice{
	{Label: "This conversation", Data: "chat"},
	{Label: "All my data", Data: "all"},
	{Label: "Messages older than N days", Data: "older"},
	{Label: "Cancel", Data: "cancel"},
}

var yesNo = []pipeline.Choice{{Label: "Yes, delete", Data: "yes"}, {Label: "No", Data: "no"}}

// withGroups is the question of "/purge all" in a private chat when the
// person also wrote in groups: their messages there are theirs too.
var withGroups = []pipeline.Choice{
	{Label: "Yes, and in the groups too", Data: "groups"},
	{Label: "Yes, only my own chats", Data: "yes"},
	{Label: "No", Data: "no"},
}

func runPurge(ctx context.Context, c *Call) error {
	fields := strings.Fields(strings.ToLower(c.Args))
	if len(fields) == 0 {
		c.startFlow(ctx, c.Key, askedPurgeWhat, "", purgeWhatStep)
		return c.ask(ctx, "What should I delete? This cannot be undone.", purgeChoices)
	}
	switch {
	case len(fields) == 1 && (fields[0] == "chat" || fields[0] == "conversation" || fields[0] == "this"):
		return confirmPurge(ctx, c, "chat", 0)
	case len(fields) == 1 && fields[0] == "all":
		return confirmPurge(ctx, c, "all", 0)
	case len(fields) == 2 && fields[0] == "older":
		n, err := parseDays(fields[1])
		if err != nil {
			return err
		}
		return confirmPurge(ctx, c, "older", n)
	case len(fields) == 1 && fields[0] == "older":
		return usage("Say how many days: /purge older 30 deletes messages older than 30 days.")
	}
	return usage("Use /purge chat (this conversation), /purge all (all your data) or /purge older <days>, e.g. /purge older 30.")
}

func parseDays(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(s), "d"))
	if err != nil || n < 1 || n > 36500 {
		return 0, usage("The number of days must be a whole number from 1 to 36500, e.g. /purge older 30.")
	}
	return n, nil
}

// purgeWhatStep answers /purge's first question (askedPurgeWhat).
func purgeWhatStep(ctx context.Context, c *Call, answer string) error {
	ch, ok := pipeline.PickChoice(answer, purgeChoices)
	if isCancel(answer) || ok && ch.Data == "cancel" {
		c.endFlow(ctx, c.Key)
		return c.Reply(ctx, "Cancelled; nothing was deleted.")
	}
	if !ok {
		return c.Reply(ctx, "Please choose 1, 2 or 3, or send cancel.")
	}
	if ch.Data == "older" {
		return askDays(ctx, c)
	}
	return confirmPurge(ctx, c, ch.Data, 0)
}

// daysStep answers /purge's "older than how many days" (askedPurgeDays).
func daysStep(ctx context.Context, c *Call, answer string) error {
	if isCancel(answer) {
		c.endFlow(ctx, c.Key)
		return c.Reply(ctx, "Cancelled; nothing was deleted.")
	}
	n, err := parseDays(answer)
	if err != nil {
		return c.Reply(ctx, "Please send a number of days from 1 to 36500, or cancel.")
	}
	return confirmPurge(ctx, c, "older", n)
}

func askDays(ctx context.Context, c *Call) error {
	c.startFlow(ctx, c.Key, askedPurgeDays, "", daysStep)
	return c.Reply(ctx, "Delete messages older than how many days? Send a number, or cancel.")
}

func confirmPurge(ctx context.Context, c *Call, what string, days int) error {
	var desc string
	switch what {
	case "chat":
		desc = "everything in this conversation (messages, summaries, facts)"
	case "all":
		desc = "ALL your data: every conversation, your notes, facts and settings"
	default:
		desc = fmt.Sprintf("messages older than %s and the summaries made from them", plural(days, "day", "days"))
	}
	choices, question := yesNo, fmt.Sprintf("Delete %s? This cannot be undone.", desc)
	sender := memory.SenderScope{Channel: c.Key.Channel, SenderID: c.Turn.In.SenderID, Except: c.Key.Owner()}
	if what == "all" && !c.Turn.In.IsGroup && sender.SenderID != "" {
		n, groups, err := c.store.SenderMessages(ctx, sender)
		if err != nil {
			c.Turn.Logger().Warn("counting the messages of a /purge all in groups", "err", err)
		}
		if n > 0 {
			choices = withGroups
			question = fmt.Sprintf("Delete %s? Also your %s in %s (with my answers to them, and the group summaries built from them)? This cannot be undone.",
				desc, plural(n, "message", "messages"), plural(groups, "group", "groups"))
		}
	}
	groups := len(choices) == len(withGroups)
	args := fmt.Sprintf("%s %d %s", what, days, map[bool]string{true: "groups", false: "own"}[groups])
	c.startFlow(ctx, c.Key, askedPurgeConfirm, args, purgeConfirmStep(what, days, groups))
	return c.ask(ctx, question, choices)
}

// purgeConfirmStep answers /purge's confirmation (askedPurgeConfirm) of
// what (chat, all, older than days), with the choice to purge the
// sender's messages in groups too when groups.
func purgeConfirmStep(what string, days int, groups bool) stepFunc {
	choices := yesNo
	if groups {
		choices = withGroups
	}
	return func(ctx context.Context, c *Call, answer string) error {
		sender := memory.SenderScope{Channel: c.Key.Channel, SenderID: c.Turn.In.SenderID, Except: c.Key.Owner()}
		ch, ok := pipeline.PickChoice(answer, choices)
		if !ok {
			switch normalize(answer) {
			case "y", "yes", "yes delete", "ja", "si", "oui":
				ch, ok = pipeline.Choice{Data: "yes"}, true
			case "n", "no", "cancel":
				ch, ok = pipeline.Choice{Data: "no"}, true
			case "groups", "all", "both", "everything":
				ok = len(choices) == len(withGroups)
				ch = pipeline.Choice{Data: "groups"}
			}
		}
		if !ok {
			if len(choices) == len(withGroups) {
				return c.Reply(ctx, "Please answer 1 (also in the groups), 2 (only your own chats) or no.")
			}
			return c.Reply(ctx, "Please answer yes or no.")
		}
		c.endFlow(ctx, c.Key)
		if ch.Data != "yes" && ch.Data != "groups" {
			return c.Reply(ctx, "Cancelled; nothing was deleted.")
		}
		scope := memory.PurgeScope{Owner: c.Key.Owner()}
		switch what {
		case "chat":
			scope.Key = c.Key
		case "older":
			scope.OlderThan = c.opts.Now().Add(-time.Duration(days) * 24 * time.Hour)
		}
		rep, err := c.store.Purge(ctx, scope)
		if err != nil {
			return err
		}
		if c.opts.AfterPurge != nil {
			// Replies still waiting to be delivered go too (the delivery
			// journal), and kept photos: nothing purged stays on disk.
			if err := c.opts.AfterPurge(scope); err != nil {
				c.Turn.Logger().Warn("forgetting the purged conversation's undelivered replies", "err", err)
			}
		}
		msg := fmt.Sprintf("Deleted %s, %s, %s and %s. They are gone from the database, the search index and the summaries.",
			plural(rep.Messages, "message", "messages"), plural(rep.Summaries, "summary", "summaries"), plural(rep.Facts, "fact", "facts"), plural(rep.Memories, "note", "notes"))
		if ch.Data == "groups" {
			g, err := c.store.PurgeSender(ctx, sender)
			if err != nil {
				return err
			}
			msg += fmt.Sprintf(" In the groups: deleted %d messages (yours and my answers to them), %d summaries and %d facts built from them, and %s you wrote there.",
				g.Messages, g.Summaries, g.Facts, plural(g.Memories, "note", "notes"))
		}
		return c.Reply(ctx, msg)
	}
}
