package commands_test

import (
	"strings"
	"testing"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

func TestRememberMemoriesForget(t *testing.T) {
	h := newHarness(t, &recorder{})
	steps := []struct {
		key   pipeline.Key
		text  string
		wants []string
		nots  []string
	}{
		{h.A, "/memories", []string{"no notes yet", "/remember <key> <text>"}, nil},
		{h.A, "/remember city I live in Lisbon", []string{`Noted under "city"`}, nil},
		{h.A, "/remember food\npasta al forno", []string{`Noted under "food"`}, nil},
		{h.A, "/remember   pet_2    a cat   called Miso  ", []string{`Noted under "pet_2"`}, nil},
		{h.A, "/memories", []string{"Your notes (3)", "city: I live in Lisbon", "food: pasta al forno", "pet_2: a cat   called Miso", "/forget <key>"}, nil},
		{h.A, "/remember city I moved to Porto", []string{`Noted under "city"`}, nil},
		// Memories belong to the owner: another topic of the same chat sees them.
		{h.A2, "/memories", []string{"Your notes (3)", "city: I moved to Porto"}, []string{"Lisbon"}},
		{h.A, "/forget city", []string{`Forgotten: "city"`}, nil},
		{h.A, "/memories", []string{"Your notes (2)", "food: pasta al forno"}, []string{"city"}},
		{h.A, "/forget city", []string{`no note called "city"`, "/memories"}, []string{"Forgotten"}},
		{h.A2, "/forget food", []string{`Forgotten: "food"`}, nil},
		{h.A, "/forget@RecallBot pet_2", []string{`Forgotten: "pet_2"`}, nil},
		{h.A, "/memories", []string{"no notes yet"}, []string{"food", "pet_2"}},
	}
	for _, s := range steps {
		got := h.reply(s.key, s.text)
		mustContain(t, s.text, got, s.wants...)
		mustNotContain(t, s.text, got, s.nots...)
	}
}

func TestRememberLongestAllowed(t *testing.T) {
	h := newHarness(t, &recorder{})
	key := strings.Repeat("k", memory.MaxMemoryKeyLen)
	text := strings.Repeat("é", memory.MaxMemoryContent)
	mustContain(t, "longest", h.reply(h.A, "/remember "+key+" "+text), "Noted")
	mems, err := h.store.Memories(h.ctx, h.A.Owner())
	if err != nil || len(mems) != 1 || mems[0].Key != key || mems[0].Content != text {
		t.Fatalf("Memories = %d, %v", len(mems), err)
	}
}

func TestMemoryCap(t *testing.T) {
	h := newHarness(t, &recorder{}, withMaxMemories(2))
	h.reply(h.A, "/remember one first")
	h.reply(h.A, "/remember two second")
	got := h.reply(h.A, "/remember three third")
	mustContain(t, "cap", got, "maximum", "/forget <key>", "/memories")
	// Changing an existing note is not a new one.
	mustContain(t, "update at the cap", h.reply(h.A, "/remember two changed"), "Noted")
	// Another owner has their own allowance.
	mustContain(t, "other owner", h.reply(h.B, "/remember three third"), "Noted")
	h.reply(h.A, "/forget one")
	mustContain(t, "after forget", h.reply(h.A, "/remember three third"), "Noted")
	mems, err := h.store.Memories(h.ctx, h.A.Owner())
	if err != nil || len(mems) != 2 {
		t.Fatalf("Memories = %+v, %v", mems, err)
	}
}

func TestMemoriesAreIsolatedByOwner(t *testing.T) {
	h := newHarness(t, &recorder{})
	h.reply(h.A, "/remember secret_plan the surprise party is on friday")
	for _, k := range []pipeline.Key{h.B, h.WA, h.X} {
		got := h.reply(k, "/memories")
		mustContain(t, k.String(), got, "no notes yet")
		mustNotContain(t, k.String(), got, "secret_plan", "surprise")
		mustContain(t, k.String()+" forget", h.reply(k, "/forget secret_plan"), "no note called")
	}
	got := h.reply(h.A, "/memories")
	mustContain(t, "owner", got, "secret_plan: the surprise party is on friday")
	// B's notes stay B's.
	h.reply(h.B, "/remember secret_plan B's own plan")
	mustNotContain(t, "A after B", h.reply(h.A, "/memories"), "B's own plan")
	mustNotContain(t, "B", h.reply(h.B, "/memories"), "surprise")
}
