package commands_test

import (
	"strings"
	"testing"
)

// One of a thing is singular: "1 day", not "1 days".
func TestPlurals(t *testing.T) {
	h := newHarness(t, &recorder{})
	got := h.reply(h.A, "/purge older 1")
	mustContain(t, "confirmation", got, "older than 1 day and")
	if strings.Contains(got, "1 days") {
		t.Errorf("confirmation %q", got)
	}
}

// /help says /context takes a question.
func TestHelpMentionsContextQuestion(t *testing.T) {
	h := newHarness(t, &recorder{})
	mustContain(t, "help", h.reply(h.A, "/help"), "/context [question]", "/cancel")
}
