package commands

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/recallbot/recall/memory"
)

// FactStore is what /facts needs beyond Store: the facts the bot extracted,
// and deleting one. memory.Store has it; /facts is offered only when
// fact extraction is enabled (Options.Facts) and the store has it.
type FactStore interface {
	Facts(ctx context.Context, owner, text string, limit int) ([]memory.Fact, error)
	ForgetFact(ctx context.Context, owner string, id int64) (bool, error)
}

// factsOffText answers /facts when the operator has not turned fact
// learning on (memory.facts.enabled is false).
const factsOffText = "I don't learn facts about you on this bot: the operator has not turned fact learning on. " +
	"They can, with `memory.facts.enabled: true` in config.yaml (or `RECALL_MEMORY_FACTS_ENABLED=true`) and a restart. " +
	"What you ask me to remember with /remember works either way."

// maxListedFacts caps /facts; the numbers it shows are what /facts forget takes.
const maxListedFacts = 50

func factsCommand() *Command {
	return &Command{Name: "facts", Usage: "[forget <n>|off|on]",
		Help: "list what I learned about you, forget one fact, or stop learning", Run: runFacts}
}

func runFacts(ctx context.Context, c *Call) error {
	fs := c.store.(FactStore)
	owner := c.Key.Owner()
	verb, rest, _ := strings.Cut(strings.TrimSpace(c.Args), " ")
	switch strings.ToLower(verb) {
	case "":
		return listFacts(ctx, c, fs, owner)
	case "forget", "delete", "remove":
		n, err := strconv.Atoi(strings.TrimSpace(rest))
		if err != nil || n < 1 {
			return usage("Use /facts forget <number>, with a number from the /facts list.")
		}
		facts, err := fs.Facts(ctx, owner, "", maxListedFacts)
		if err != nil {
			return err
		}
		if n > len(facts) {
			if len(facts) == 0 {
				return c.Reply(ctx, "I haven't learned any facts about you.")
			}
			return usage("There is no fact %d: the list has %s. Send /facts to see it.", n, plural(len(facts), "fact", "facts"))
		}
		f := facts[n-1]
		if _, err := fs.ForgetFact(ctx, owner, f.ID); err != nil {
			return err
		}
		return c.Reply(ctx, fmt.Sprintf("Forgotten: “%s”. It will not be used again.", f.Content))
	case "off", "on":
		st, err := c.store.Settings(ctx, owner)
		if err != nil {
			return err
		}
		st.FactsOff = strings.EqualFold(verb, "off")
		if err := c.store.PutSettings(ctx, st); err != nil {
			return err
		}
		if st.FactsOff {
			return c.Reply(ctx, "I will no longer learn facts from our conversations, and the facts I have are not used in my answers. They stay listed in /facts until you forget them; /facts on turns learning back on.")
		}
		return c.Reply(ctx, "I'll learn facts from our conversations again, and use them in my answers.")
	}
	return usage("Use /facts to list what I learned, /facts forget <number>, or /facts off / on.")
}

func listFacts(ctx context.Context, c *Call, fs FactStore, owner string) error {
	facts, err := fs.Facts(ctx, owner, "", maxListedFacts)
	if err != nil {
		return err
	}
	st, err := c.store.Settings(ctx, owner)
	if err != nil {
		return err
	}
	state := ""
	if st.FactsOff {
		state = "\n\nLearning is off (/facts on turns it back on)."
	}
	if len(facts) == 0 {
		return c.Reply(ctx, "I haven't learned any facts about you yet."+state)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "What I learned (%s, newest first):\n", plural(len(facts), "fact", "facts"))
	for i, f := range facts {
		fmt.Fprintf(&b, "%d. %s — %s", i+1, f.Content, f.Updated.Local().Format("2 Jan 2006"))
		if len(f.Sources) > 0 {
			fmt.Fprintf(&b, ", from message %s", f.Sources[0])
		}
		if f.Key != "" && f.Key != c.Key.String() {
			b.WriteString(" (another chat)")
		}
		b.WriteByte('\n')
	}
	b.WriteString("\nRemove one with /facts forget <number>; stop learning with /facts off.")
	b.WriteString(state)
	return c.Reply(ctx, b.String())
}
