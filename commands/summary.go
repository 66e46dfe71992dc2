package commands

// The /summary family: the two-step setup, status, on/off and summarize now.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/summary"
)

var storageChoices = []pipeline.Choice{
	{Label: "SQLite (recommended)", Data: "sqlite"},
	{Label: "JSON file", Data: "json"},
	{Label: "Cancel", Data: "cancel"},
}

func parseStorage(s string) (memory.Storage, bool) {
	switch normalize(s) {
	case "sqlite", "sql", "db", "database", "sqlite recommended", "postgres", "postgresql":
		return memory.StorageSQLite, true
	case "json", "json file", "file":
		return memory.StorageJSON, true
	}
	return "", false
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
	if !c.offersJSON() {
		return runSummaryDatabase(ctx, c, fields)
	}
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

// runSummaryDatabase is /summary on a bot with one storage, its shared
// database (PostgreSQL): there is nothing to choose but how often to
// summarize. "/summary 15" and the two-word forms work; a JSON file is
// refused with the reason.
func runSummaryDatabase(ctx context.Context, c *Call, fields []string) error {
	const use = "Use /summary to set it up step by step, or /summary <1-500>, e.g. /summary 15."
	if len(fields) > 0 {
		if storage, ok := parseStorage(fields[0]); ok {
			if storage == memory.StorageJSON {
				return usage("A separate JSON file is not available on this bot: it keeps every conversation in one shared %s database, "+
					"and a file on one machine could not be part of it. Nothing changed. %s", c.storageName(memory.StorageSQLite), use)
			}
			fields = fields[1:]
		}
	}
	switch len(fields) {
	case 0:
		return askThreshold(ctx, c, memory.StorageSQLite)
	case 1:
		n, err := parseThreshold(fields[0])
		if err != nil {
			return err
		}
		return applySummary(ctx, c, memory.StorageSQLite, n)
	}
	return usage("%s", use)
}

func askStorage(ctx context.Context, c *Call) error {
	c.startFlow(ctx, c.Key, askedStorage, "", storageStep)
	return c.ask(ctx, "Step 1 of 2 — where should I keep your memory?", storageChoices)
}

// storageStep answers /summary's step 1 (askedStorage).
func storageStep(ctx context.Context, c *Call, answer string) error {
	if isCancel(answer) {
		c.endFlow(ctx, c.Key)
		return c.Reply(ctx, "Cancelled; nothing changed.")
	}
	choice, ok := pipeline.PickChoice(answer, storageChoices)
	if ok && choice.Data == "cancel" {
		c.endFlow(ctx, c.Key)
		return c.Reply(ctx, "Cancelled; nothing changed.")
	}
	storage, ok2 := parseStorage(choice.Data)
	if !ok || !ok2 {
		return c.Reply(ctx, "Please choose 1 (SQLite) or 2 (JSON file), or send cancel.")
	}
	return askThreshold(ctx, c, storage)
}

// thresholdStep answers /summary's step 2 (askedThreshold), storage chosen.
func thresholdStep(storage memory.Storage) stepFunc {
	return func(ctx context.Context, c *Call, answer string) error {
		if isCancel(answer) {
			c.endFlow(ctx, c.Key)
			return c.Reply(ctx, "Cancelled; nothing changed.")
		}
		n, err := parseThreshold(answer)
		if err != nil {
			return c.Reply(ctx, err.Error()+" Or send cancel.")
		}
		c.endFlow(ctx, c.Key)
		return applySummary(ctx, c, storage, n)
	}
}

func askThreshold(ctx context.Context, c *Call, storage memory.Storage) error {
	c.startFlow(ctx, c.Key, askedThreshold, string(storage), thresholdStep(storage))
	st, err := c.store.Settings(ctx, c.Key.Owner())
	if err != nil {
		return err
	}
	step := "Step 2 of 2 — storage: " + c.storageName(storage) + "."
	if !c.offersJSON() {
		step = "Your memory is kept in this bot's " + c.storageName(storage) + " database."
	}
	return c.Reply(ctx, fmt.Sprintf("%s After how many of your messages should I summarize and archive the older ones? Send a number from %d to %d (now: %d). Send cancel to stop.",
		step, memory.MinThreshold, memory.MaxThreshold, st.Threshold))
}

func applySummary(ctx context.Context, c *Call, storage memory.Storage, n int) error {
	st, err := c.store.Settings(ctx, c.Key.Owner())
	if err != nil {
		return err
	}
	moving := st.Storage != storage
	st.Storage, st.Threshold, st.MemoryEnabled = storage, n, true
	if err := c.store.PutSettings(ctx, st); errors.Is(err, memory.ErrNoJSONStorage) {
		return c.Reply(ctx, fmt.Sprintf("A separate JSON file is not available on this bot: it keeps every conversation in one shared database, "+
			"and a file on one machine could not be part of it. Nothing changed. To summarize every %s in the database, send /summary sqlite %d.",
			plural(n, "message", "messages"), n))
	} else if err != nil {
		return err
	}
	msg := fmt.Sprintf("Long-term memory is configured.\nStorage: %s\nSummarize every %s.", c.storageName(storage), plural(n, "message", "messages"))
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
	fmt.Fprintf(&b, "Storage: %s\n", c.storageName(st.Storage))
	fmt.Fprintf(&b, "Summarize every: %s\n", plural(st.Threshold, "message", "messages"))
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
	if e := c.opts.Embeddings; e != nil {
		b.WriteString("\n" + embeddingsLine(ctx, e, c.Key))
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
	st.MemoryEnabled, st.Updated = on, c.opts.Now() // while off, what is written from now on is kept only in the recent window
	if err := c.store.PutSettings(ctx, st); err != nil {
		return err
	}
	if on {
		return c.Reply(ctx, fmt.Sprintf("Long-term memory is on (storage: %s, summarize every %s).", c.storageName(st.Storage), plural(st.Threshold, "message", "messages")))
	}
	return c.Reply(ctx, fmt.Sprintf("Long-term memory is off. While it is off I keep only our last %d exchanges in each conversation: "+
		"older messages you write from now on are deleted, not summarized, and I don't search the archive or learn facts. "+
		"What I stored before stays as it was (nothing was deleted); /summary_on turns memory back on.", c.opts.KeepRecent))
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
		return c.Reply(ctx, "There is nothing to summarize yet: the last exchange always stays as it is.")
	case err != nil && len(res.Created) == 0:
		c.Turn.Logger().Warn("summary_now failed", "err", err)
		return c.Reply(ctx, "I couldn't write the summary (the language model failed). Nothing was archived; please try again later.")
	}
	levels := map[int]int{}
	for _, s := range res.Created {
		levels[s.Level]++
	}
	msg := fmt.Sprintf("Done: %s archived into a new summary.", plural(res.Archived, "message", "messages"))
	for l := 2; levels[l] > 0; l++ {
		msg += fmt.Sprintf(" %d level-%d summary folded from older ones.", levels[l], l)
	}
	return c.Reply(ctx, msg+" Nothing was deleted: /search still finds everything.")
}

// embeddingsLine says how much of the conversation is embedded for search
// by meaning (memory.embeddings).
func embeddingsLine(ctx context.Context, e Embeddings, key pipeline.Key) string {
	done, total, err := e.Coverage(ctx, key)
	switch {
	case err != nil:
		return "Search by meaning: could not count the embedded messages right now"
	case total == 0:
		return fmt.Sprintf("Search by meaning (%s): nothing to embed yet", e.Model())
	}
	return fmt.Sprintf("Search by meaning (%s): %d of %d messages embedded (%d%%)", e.Model(), done, total, done*100/total)
}
