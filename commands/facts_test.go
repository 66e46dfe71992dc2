package commands_test

import (
	"strings"
	"testing"

	"github.com/recallbot/recall/commands"
	"github.com/recallbot/recall/memory"
)

func withFacts() harnessOpt {
	return func(_ *memory.Options, c *commands.Options) { c.Facts = true }
}

func TestFactsListForgetAndOff(t *testing.T) {
	h := newHarness(t, &recorder{}, withFacts())
	owner := h.A.Owner()
	for _, f := range []memory.Fact{
		{Content: "The user lives in Lisbon", Key: h.A.String(), Sources: []string{"41"}, Created: h.clock.Now().Add(-2e9)},
		{Content: "The user plays the piano", Key: h.A.String(), Sources: []string{"42"}, Created: h.clock.Now()},
	} {
		if _, _, err := h.store.AddFact(h.ctx, owner, f); err != nil {
			t.Fatal(err)
		}
	}
	got := h.reply(h.A, "/facts")
	mustContain(t, "/facts", got, "2 facts", "1. The user plays the piano", "from message 42", "2. The user lives in Lisbon", "/facts forget")
	mustContain(t, "bad number", h.reply(h.A, "/facts forget 3"), "There is no fact 3", "2 facts")
	mustContain(t, "no number", h.reply(h.A, "/facts forget x"), "/facts forget <number>")
	mustContain(t, "forget", h.reply(h.A, "/facts forget 1"), "Forgotten", "piano")
	if left, _ := h.store.Facts(h.ctx, owner, "piano", 0); len(left) != 0 {
		t.Fatalf("the forgotten fact is still searchable: %+v", left)
	}
	got = h.reply(h.A, "/facts")
	mustContain(t, "/facts after", got, "1 fact,", "1. The user lives in Lisbon")
	mustNotContain(t, "/facts after", got, "piano")
	// Another owner sees none of them and cannot delete them.
	mustContain(t, "B", h.reply(h.B, "/facts forget 1"), "haven't learned any facts")
	if left, _ := h.store.Facts(h.ctx, owner, "", 0); len(left) != 1 {
		t.Fatalf("another owner's /facts forget removed a fact: %d left", len(left))
	}
	mustContain(t, "off", h.reply(h.A, "/facts off"), "no longer learn")
	if !h.settings(owner).FactsOff {
		t.Fatal("/facts off was not stored")
	}
	mustContain(t, "listed while off", h.reply(h.A, "/facts"), "Learning is off")
	mustContain(t, "on", h.reply(h.A, "/facts on"), "again")
	if h.settings(owner).FactsOff {
		t.Fatal("/facts on was not stored")
	}
}

func TestFactsCommandOnlyWhenExtractionIsEnabled(t *testing.T) {
	h := newHarness(t, &recorder{})
	for _, text := range []string{"/facts", "/facts forget 1", "/facts off"} {
		got := h.reply(h.A, text)
		if strings.Contains(got, "don't know the command") {
			t.Fatalf("%s with extraction off answered %q: the README lists it", text, got)
		}
		mustContain(t, text+" with extraction off", got, "not turned fact learning on", "memory.facts.enabled", "RECALL_MEMORY_FACTS_ENABLED")
	}
	if strings.Contains(h.cmds.HelpText(), "/facts") {
		t.Fatal("/facts offered in /help with extraction off")
	}
	on := newHarness(t, &recorder{}, withFacts())
	if !strings.Contains(on.cmds.HelpText(), "/facts") {
		t.Fatal("/facts missing from /help with extraction on")
	}
}
