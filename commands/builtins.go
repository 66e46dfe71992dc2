package commands

import (
	"context"
	"strings"
)

// builtins is the command list, in the order /help and menus show it.
func builtins() []*Command {
	return []*Command{
		{Name: "start", Help: "say hello and see what I can do", Run: runStart},
		{Name: "help", Help: "list the commands", Run: runHelp},
		{Name: "summary", Usage: "[sqlite|json] [1-500]", Help: "set up long-term memory: storage and how often to summarize", Run: runSummary},
		{Name: "summary_status", Help: "show memory settings and counts", Run: runSummaryStatus},
		{Name: "summary_on", Help: "turn long-term memory on", Run: runSummaryOn},
		{Name: "summary_off", Help: "turn long-term memory off: from then on only our last few exchanges are kept (nothing earlier is deleted)", Run: runSummaryOff},
		{Name: "summary_now", Help: "summarize the conversation now, all but the last exchange", Run: runSummaryNow},
		{Name: "remember", Usage: "<key> <text>", Help: "keep a note, e.g. /remember city I live in Lisbon", Run: runRemember},
		{Name: "memories", Help: "list your notes", Run: runMemories},
		{Name: "forget", Usage: "<key>", Help: "delete a note", Run: runForget},
		{Name: "search", Usage: "<words>", Help: "search this conversation's history", Run: runSearch},
		{Name: "context", Usage: "[question]", Help: "show what I would read before answering (the notes, summaries and archive I'd use), e.g. /context where did I park?", Run: runContext},
		{Name: "export", Help: "download your data as a JSON file", Run: runExport},
		{Name: "purge", Usage: "[chat|all|older <days>]", Help: "delete this conversation, all your data, or old messages", Run: runPurge},
		{Name: "cancel", Help: "cancel the current question", Run: runCancel},
	}
}

func noArgs(c *Call) error {
	if c.Args != "" {
		return usage("/%s takes no arguments; send just /%s.", c.Name, c.Name)
	}
	return nil
}

func runStart(ctx context.Context, c *Call) error {
	return c.Reply(ctx, "Hi! I'm Recall, an assistant that remembers our conversations. Just write to me.\n\n"+c.HelpText())
}

func runHelp(ctx context.Context, c *Call) error { return c.Reply(ctx, c.HelpText()) }

func runCancel(ctx context.Context, c *Call) error {
	if c.endFlow(ctx, c.Key) {
		return c.Reply(ctx, "Cancelled.")
	}
	return c.Reply(ctx, "There is nothing to cancel.")
}

func normalize(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.NewReplacer("(", "", ")", "", ".", "", "!", "").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}
