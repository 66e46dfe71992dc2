package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/summary"
)

// builtins is the command list, in the order /help and menus show it.
func builtins() []*Command {
	return []*Command{
		{Name: "start", Help: "say hello and see what I can do", Run: runStart},
		{Name: "help", Help: "list the commands", Run: runHelp},
		{Name: "summary", Usage: "[sqlite|json] [1-500]", Help: "set up long-term memory: storage and how often to summarize", Run: runSummary},
		{Name: "summary_status", Help: "show memory settings and counts", Run: runSummaryStatus},
		{Name: "summary_on", Help: "turn long-term memory on", Run: runSummaryOn},
		{Name: "summary_off", Help: "turn long-term memory off (nothing is deleted)", Run: runSummaryOff},
		{Name: "summary_now", Help: "summarize the conversation now", Run: runSummaryNow},
		{Name: "remember", Usage: "<key> <text>", Help: "keep a note, e.g. /remember city I live in Lisbon", Run: runRemember},
		{Name: "memories", Help: "list your notes", Run: runMemories},
		{Name: "forget", Usage: "<key>", Help: "delete a note", Run: runForget},
		{Name: "search", Usage: "<words>", Help: "search this conversation's history", Run: runSearch},
		{Name: "context", Help: "show what I will read before my next answer", Run: runContext},
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
	if c.endFlow(c.Key) {
		return c.Reply(ctx, "Cancelled.")
	}
	return c.Reply(ctx, "There is nothing to cancel.")
}

// ---- /summary: storage type, then threshold ----

var storageChoices = []pipeline.Choice{
	{Label: "SQLite (recommended)", Data: "sqlite"},
	{Label: "JSON file", Data: "json"},
	{Label: "Cancel", Data: "cancel"},
}

func parseStorage(s string) (memory.Storage, bool) {
	switch normalize(s) {
	case "sqlite", "sql", "db", "database", "sqlite recommended":
		return memory.StorageSQLite, true
	case "json", "json file", "file":
		return memory.StorageJSON, true
	}
	return "", false
}

func normalize(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.NewReplacer("(", "", ")", "", ".", "", "!", "").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

func parseThreshold(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < memory.MinThreshold || n > memory.MaxThreshold {
		return 0, usage("Please send a whole number from %d to %d (how many of your messages between summaries).", memory.MinThreshold, memory.MaxThreshold)
	}
	return n, nil
}

func runSummary(ctx context.Context, c *Call) error {
	fields := strings.Fields(c.Args)
	switch len(fields) {
	case 0:
		return askStorage(ctx, c)
	case 2:
		storage, ok := parseStorage(fields[0])
		if !ok {
			return usage("Storage must be sqlite or json, e.g. /summary sqlite 15.")
		}
		n, err := parseThreshold(fields[1])
		if err != nil {
			return err
		}
		return applySummary(ctx, c, storage, n)
	case 1:
		storage, ok := parseStorage(fields[0])
		if !ok {
			return usage("Use /summary to choose step by step, or /summary <sqlite|json> <1-500>, e.g. /summary sqlite 15.")
		}
		return askThreshold(ctx, c, storage)
	default:
		return usage("Use /summary to choose step by step, or /summary <sqlite|json> <1-500>, e.g. /summary sqlite 15.")
	}
}

func askStorage(ctx context.Context, c *Call) error {
	c.startFlow(c.Key, func(ctx context.Context, c *Call, answer string) error {
		if isCancel(answer) {
			c.endFlow(c.Key)
			return c.Reply(ctx, "Cancelled; nothing changed.")
		}
		choice, ok := pipeline.PickChoice(answer, storageChoices)
		if ok && choice.Data == "cancel" {
			c.endFlow(c.Key)
			return c.Reply(ctx, "Cancelled; nothing changed.")
		}
		storage, ok2 := parseStorage(choice.Data)
		if !ok || !ok2 {
			return c.Reply(ctx, "Please choose 1 (SQLite) or 2 (JSON file), or send cancel.")
		}
		return askThreshold(ctx, c, storage)
	})
	return c.ask(ctx, "Step 1 of 2 — where should I keep your memory?", storageChoices)
}

func askThreshold(ctx context.Context, c *Call, storage memory.Storage) error {
	c.startFlow(c.Key, func(ctx context.Context, c *Call, answer string) error {
		if isCancel(answer) {
			c.endFlow(c.Key)
			return c.Reply(ctx, "Cancelled; nothing changed.")
		}
		n, err := parseThreshold(answer)
		if err != nil {
			return c.Reply(ctx, err.Error()+" Or send cancel.")
		}
		c.endFlow(c.Key)
		return applySummary(ctx, c, storage, n)
	})
	st, err := c.store.Settings(ctx, c.Key.Owner())
	if err != nil {
		return err
	}
	return c.Reply(ctx, fmt.Sprintf("Step 2 of 2 — storage: %s. After how many of your messages should I summarize and archive the older ones? Send a number from %d to %d (now: %d). Send cancel to stop.",
		storageLabel(storage), memory.MinThreshold, memory.MaxThreshold, st.Threshold))
}

func applySummary(ctx context.Context, c *Call, storage memory.Storage, n int) error {
	st, err := c.store.Settings(ctx, c.Key.Owner())
	if err != nil {
		return err
	}
	moving := st.Storage != storage
	st.Storage, st.Threshold, st.MemoryEnabled = storage, n, true
	if err := c.store.PutSettings(ctx, st); err != nil {
		return err
	}
	msg := fmt.Sprintf("Long-term memory is configured.\nStorage: %s\nSummarize every %d messages.", storageLabel(storage), n)
	if moving {
		msg += "\nYour existing history was moved there; nothing was lost."
	}
	return c.Reply(ctx, msg)
}

func runSummaryStatus(ctx context.Context, c *Call) error {
	if err := noArgs(c); err != nil {
		return err
	}
	st, err := c.store.Settings(ctx, c.Key.Owner())
	if err != nil {
		return err
	}
	s, err := c.store.Status(ctx, c.Key)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Memory: %s\n", onOff(st.MemoryEnabled))
	fmt.Fprintf(&b, "Storage: %s\n", storageLabel(st.Storage))
	fmt.Fprintf(&b, "Summarize every: %d messages\n", st.Threshold)
	fmt.Fprintf(&b, "Messages since the last summary: %d\n", s.TurnsSinceSummary)
	fmt.Fprintf(&b, "Messages stored: %d (%d active, %d archived)\n", s.Total, s.Active, s.Archived)
	fmt.Fprintf(&b, "Active summaries: %d (%s)\n", s.ActiveSummaries(), levelsText(s))
	fmt.Fprintf(&b, "Highest summary level: %d", s.HighestLevel)
	if !s.LastSummary.IsZero() {
		fmt.Fprintf(&b, "\nLast summary: %s", s.LastSummary.Format("2006-01-02 15:04 MST"))
	}
	if c.sum != nil && c.sum.Running(c.Key) {
		b.WriteString("\nA summary is being written right now.")
	}
	return c.Reply(ctx, b.String())
}

func setEnabled(ctx context.Context, c *Call, on bool) error {
	if err := noArgs(c); err != nil {
		return err
	}
	st, err := c.store.Settings(ctx, c.Key.Owner())
	if err != nil {
		return err
	}
	if st.MemoryEnabled == on {
		return c.Reply(ctx, "Long-term memory is already "+onOff(on)+".")
	}
	st.MemoryEnabled = on
	if err := c.store.PutSettings(ctx, st); err != nil {
		return err
	}
	if on {
		return c.Reply(ctx, fmt.Sprintf("Long-term memory is on (storage: %s, summarize every %d messages).", storageLabel(st.Storage), st.Threshold))
	}
	return c.Reply(ctx, "Long-term memory is off: I won't summarize or search the archive. Nothing was deleted; /summary_on turns it back on.")
}

func runSummaryOn(ctx context.Context, c *Call) error  { return setEnabled(ctx, c, true) }
func runSummaryOff(ctx context.Context, c *Call) error { return setEnabled(ctx, c, false) }

func runSummaryNow(ctx context.Context, c *Call) error {
	if err := noArgs(c); err != nil {
		return err
	}
	if c.sum == nil {
		return c.Reply(ctx, "Summaries need a language model, and none is configured.")
	}
	if c.sum.Running(c.Key) {
		return c.Reply(ctx, "A summary is already being written; try /summary_status in a moment.")
	}
	res, err := c.sum.Run(ctx, c.Key)
	switch {
	case errors.Is(err, summary.ErrRunning):
		return c.Reply(ctx, "A summary is already being written; try /summary_status in a moment.")
	case errors.Is(err, summary.ErrNothingToSummarize):
		return c.Reply(ctx, "There is nothing to summarize yet: the most recent messages always stay as they are.")
	case err != nil && len(res.Created) == 0:
		c.Turn.Logger().Warn("summary_now failed", "err", err)
		return c.Reply(ctx, "I couldn't write the summary (the language model failed). Nothing was archived; please try again later.")
	}
	levels := map[int]int{}
	for _, s := range res.Created {
		levels[s.Level]++
	}
	msg := fmt.Sprintf("Done: %d messages archived into a new summary.", res.Archived)
	for l := 2; levels[l] > 0; l++ {
		msg += fmt.Sprintf(" %d level-%d summary folded from older ones.", levels[l], l)
	}
	return c.Reply(ctx, msg+" Nothing was deleted: /search still finds everything.")
}

// ---- memories ----

func runRemember(ctx context.Context, c *Call) error {
	key, text := c.Args, ""
	if i := strings.IndexFunc(c.Args, unicode.IsSpace); i >= 0 {
		key, text = c.Args[:i], strings.TrimSpace(c.Args[i:])
	}
	if key == "" || text == "" {
		return usage("Use /remember <key> <text>, e.g. /remember city I live in Lisbon. The key is lowercase letters, digits and _.")
	}
	err := c.store.Remember(ctx, c.Key.Owner(), key, text)
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
	ok, err := c.store.Forget(ctx, c.Key.Owner(), key)
	if err != nil {
		return err
	}
	if !ok {
		return usage("There is no note called %q. /memories lists your keys.", key)
	}
	return c.Reply(ctx, fmt.Sprintf("Forgotten: %q.", key))
}

// ---- search, context, export ----

func runSearch(ctx context.Context, c *Call) error {
	if c.Args == "" {
		return usage("Use /search <words>, e.g. /search holiday Lisbon.")
	}
	if len(memory.Terms(c.Args)) == 0 {
		return usage("Those are all very common words; search for something more specific, e.g. /search holiday Lisbon.")
	}
	// The blocks a turn would pull from the archive, recent messages
	// included, when the assembler can search; the store's hits otherwise.
	if s, ok := c.preview.(snippetSearcher); ok {
		snips, err := s.Search(ctx, c.Key, c.Args, 3000)
		if err != nil {
			return err
		}
		if len(snips) == 0 {
			return c.Reply(ctx, "Nothing in this conversation matches that.")
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Found %d:\n", len(snips))
		for _, sn := range snips {
			b.WriteString("\n" + assemble.FormatSnippet(sn, 200) + "\n")
		}
		return c.Reply(ctx, strings.TrimRight(b.String(), "\n"))
	}
	hits, err := c.store.Search(ctx, c.Key, memory.Query{Text: c.Args, Limit: 10, TokenBudget: 3000})
	if err != nil {
		return err
	}
	if len(hits) == 0 {
		return c.Reply(ctx, "Nothing in this conversation matches that.")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Found %d messages:\n", len(hits))
	for _, h := range hits {
		text := []rune(strings.Join(strings.Fields(h.Message.Text), " "))
		if len(text) > 200 {
			text = append(text[:200], '…')
		}
		who := "you"
		if h.Message.Role == memory.RoleAssistant {
			who = "me"
		} else if h.Message.SenderName != "" && c.Turn.In.IsGroup {
			who = h.Message.SenderName
		}
		fmt.Fprintf(&b, "• %s, %s: %s\n", h.Message.Time.Format("2006-01-02"), who, string(text))
	}
	return c.Reply(ctx, strings.TrimRight(b.String(), "\n"))
}

// snippetSearcher finds archive snippets as a turn does (chat.Responder).
type snippetSearcher interface {
	Search(ctx context.Context, key pipeline.Key, text string, budget int) ([]assemble.Snippet, error)
}

func runContext(ctx context.Context, c *Call) error {
	if c.preview == nil {
		return c.Reply(ctx, "Context preview is not available.")
	}
	text := c.Args
	if text == "" {
		text = "(your next message)"
	}
	bd, err := c.preview.Preview(ctx, c.Key, text)
	if err != nil {
		return err
	}
	return c.Reply(ctx, bd.Format())
}

func runExport(ctx context.Context, c *Call) error {
	if err := noArgs(c); err != nil {
		return err
	}
	d, err := c.store.Export(ctx, c.Key.Owner(), nil)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := memory.WriteExport(&buf, memory.NewExport(d)); err != nil {
		return err
	}
	name := "recall-export-" + safeName(c.Key.Owner()) + "-" + c.opts.Now().UTC().Format("20060102-150405") + ".json"
	caption := fmt.Sprintf("Your data: %d conversations, %d notes. Format: recall-export v1 (JSON).", len(d.Conversations), len(d.Memories))
	if fs, ok := c.Turn.Out.(pipeline.FileSender); ok {
		return fs.SendFile(ctx, c.Key, pipeline.File{Name: name, MIME: "application/json", Data: buf.Bytes()}, caption)
	}
	// Sent as is: Markdown rendering would mangle the JSON (its "_" and "*").
	_, err = c.Turn.Out.Send(ctx, pipeline.Outbound{Key: c.Key, Text: caption + "\n\n" + buf.String(), Plain: true, ReplyTo: c.Turn.In.MessageID})
	return err
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, s)
}

// ---- /purge ----

var purgeChoices = []pipeline.Choice{
	{Label: "This conversation", Data: "chat"},
	{Label: "All my data", Data: "all"},
	{Label: "Messages older than N days", Data: "older"},
	{Label: "Cancel", Data: "cancel"},
}

var yesNo = []pipeline.Choice{{Label: "Yes, delete", Data: "yes"}, {Label: "No", Data: "no"}}

func runPurge(ctx context.Context, c *Call) error {
	fields := strings.Fields(strings.ToLower(c.Args))
	if len(fields) == 0 {
		c.startFlow(c.Key, func(ctx context.Context, c *Call, answer string) error {
			ch, ok := pipeline.PickChoice(answer, purgeChoices)
			if isCancel(answer) || ok && ch.Data == "cancel" {
				c.endFlow(c.Key)
				return c.Reply(ctx, "Cancelled; nothing was deleted.")
			}
			if !ok {
				return c.Reply(ctx, "Please choose 1, 2 or 3, or send cancel.")
			}
			if ch.Data == "older" {
				return askDays(ctx, c)
			}
			return confirmPurge(ctx, c, ch.Data, 0)
		})
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

func askDays(ctx context.Context, c *Call) error {
	c.startFlow(c.Key, func(ctx context.Context, c *Call, answer string) error {
		if isCancel(answer) {
			c.endFlow(c.Key)
			return c.Reply(ctx, "Cancelled; nothing was deleted.")
		}
		n, err := parseDays(answer)
		if err != nil {
			return c.Reply(ctx, "Please send a number of days from 1 to 36500, or cancel.")
		}
		return confirmPurge(ctx, c, "older", n)
	})
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
		desc = fmt.Sprintf("messages older than %d days and the summaries made from them", days)
	}
	c.startFlow(c.Key, func(ctx context.Context, c *Call, answer string) error {
		ch, ok := pipeline.PickChoice(answer, yesNo)
		if !ok {
			switch normalize(answer) {
			case "y", "yes", "yes delete", "ja", "si", "oui":
				ch, ok = yesNo[0], true
			case "n", "no", "cancel":
				ch, ok = yesNo[1], true
			}
		}
		if !ok {
			return c.Reply(ctx, "Please answer yes or no.")
		}
		c.endFlow(c.Key)
		if ch.Data != "yes" {
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
		return c.Reply(ctx, fmt.Sprintf("Deleted %d messages, %d summaries, %d facts and %d notes. They are gone from the database, the search index and the summaries.",
			rep.Messages, rep.Summaries, rep.Facts, rep.Memories))
	})
	return c.ask(ctx, fmt.Sprintf("Delete %s? This cannot be undone.", desc), yesNo)
}
