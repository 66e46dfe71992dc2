package commands_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/commands"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

func TestSearch(t *testing.T) {
	h := newHarness(t, &recorder{})
	old := h.clock.Now().Add(-48 * time.Hour)
	h.seed(h.A, old, "We planned the lighthouse trip to Lisbon", "pasta recipe with basil")
	h.seed(h.B, old, "lighthouse of h.B, private")
	h.seed(h.A2, old, "lighthouse in another topic")

	got := h.reply(h.A, "/search lighthouse")
	mustContain(t, "A", got, "Found 1 message:", "We planned the lighthouse trip to Lisbon", old.Format("2006-01-02"), "you:")
	mustNotContain(t, "A", got, "h.B", "another topic", "pasta")

	got = h.reply(h.B, "/search LIGHTHOUSE")
	mustContain(t, "B", got, "lighthouse of h.B, private")
	mustNotContain(t, "B", got, "Lisbon", "another topic")

	mustContain(t, "topic", h.reply(h.A2, "/search lighthouse"), "another topic")
	mustContain(t, "no match", h.reply(h.A, "/search zebra"), "Nothing in this conversation matches")
	mustContain(t, "other conversation's word", h.reply(h.A, "/search private"), "Nothing in this conversation matches")
	mustContain(t, "assistant", h.reply(h.A, "/search answer"), "me:")

	// Archived messages are still found.
	active, err := h.store.Active(h.ctx, h.A)
	if err != nil || len(active) != 4 {
		t.Fatalf("Active: %d, %v", len(active), err)
	}
	if _, err := h.store.Archive(h.ctx, h.A, []int64{active[0].ID, active[1].ID}, memory.Summary{Text: "a trip"}, 1); err != nil {
		t.Fatalf("Archive: %v", err)
	}
	mustContain(t, "archived", h.reply(h.A, "/search the lighthouse, please"), "We planned the lighthouse trip to Lisbon")
}

func TestSearchShortensLongMessages(t *testing.T) {
	h := newHarness(t, &recorder{})
	long := "needle " + strings.Repeat("word ", 200)
	h.seed(h.A, h.clock.Now(), long)
	got := h.reply(h.A, "/search needle")
	if len([]rune(got)) > 400 || !strings.Contains(got, "…") {
		t.Errorf("a long hit is not shortened (%d characters): %q", len([]rune(got)), got)
	}
}

func TestExport(t *testing.T) {
	seed := func(h *harness) {
		h.seed(h.A, h.clock.Now(), "my export_marker message")
		h.seed(h.A2, h.clock.Now(), "a *starred* note_with_underscores in topic two")
		h.seed(h.B, h.clock.Now(), "someone else's words")
		h.reply(h.A, "/remember city Lisbon")
	}
	check := func(t *testing.T, h *harness, data []byte) {
		t.Helper()
		e, err := memory.ReadExport(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("ReadExport: %v\n%s", err, data)
		}
		if e.Format != memory.ExportFormat || e.Version != memory.ExportVersion || len(e.Owners) != 1 {
			t.Fatalf("export: format %q version %d owners %d", e.Format, e.Version, len(e.Owners))
		}
		d := e.Owners[0]
		if d.Owner != h.A.Owner() {
			t.Errorf("owner %q, want %q", d.Owner, h.A.Owner())
		}
		if len(d.Memories) != 1 || d.Memories[0].Key != "city" {
			t.Errorf("memories: %+v", d.Memories)
		}
		texts := map[string]bool{}
		for _, c := range d.Conversations {
			for _, m := range c.Messages {
				texts[m.Text] = true
			}
		}
		for _, want := range []string{"my export_marker message", "a *starred* note_with_underscores in topic two", "answer 0"} {
			if !texts[want] {
				t.Errorf("export lacks %q: %v", want, texts)
			}
		}
		if texts["someone else's words"] || bytes.Contains(data, []byte("someone else")) {
			t.Error("export holds another owner's messages")
		}
	}

	t.Run("as a file", func(t *testing.T) {
		out := &fileSender{}
		h := newHarness(t, out)
		seed(h)
		before := len(out.Sent())
		if handled, _ := h.send(h.A, "/export"); !handled {
			t.Fatal("/export not handled")
		}
		if n := len(out.Sent()) - before; n != 0 {
			t.Errorf("%d text replies besides the file", n)
		}
		files := out.Files()
		if len(files) != 1 {
			t.Fatalf("%d files sent, want 1", len(files))
		}
		f := files[0]
		if f.Key != h.A || f.File.MIME != "application/json" || !strings.HasSuffix(f.File.Name, ".json") || !strings.HasPrefix(f.File.Name, "recall-export-") {
			t.Errorf("file: key %v name %q mime %q", f.Key, f.File.Name, f.File.MIME)
		}
		if strings.ContainsAny(f.File.Name, ":/@ ") {
			t.Errorf("file name %q is not safe", f.File.Name)
		}
		mustContain(t, "caption", f.Caption, "2 conversations", "1 note.", "recall-export")
		check(t, h, f.File.Data)
	})
	t.Run("as text", func(t *testing.T) {
		h := newHarness(t, &recorder{})
		seed(h)
		handled, outs := h.send(h.A, "/export")
		if !handled || len(outs) != 1 {
			t.Fatalf("/export: handled=%v replies=%d", handled, len(outs))
		}
		if !outs[0].Plain {
			t.Error("the JSON is sent as Markdown; it must be sent as is")
		}
		caption, doc, ok := strings.Cut(outs[0].Text, "\n\n")
		if !ok {
			t.Fatalf("no caption: %q", outs[0].Text)
		}
		mustContain(t, "caption", caption, "2 conversations", "1 note.")
		check(t, h, []byte(doc))
	})
	t.Run("nothing stored", func(t *testing.T) {
		out := &fileSender{}
		h := newHarness(t, out)
		h.reply(h.B, "/remember x y")
		h.send(h.A, "/export")
		files := out.Files()
		if len(files) != 1 {
			t.Fatalf("%d files", len(files))
		}
		e, err := memory.ReadExport(bytes.NewReader(files[0].File.Data))
		if err != nil {
			t.Fatalf("ReadExport: %v", err)
		}
		for _, d := range e.Owners {
			if d.Owner != h.A.Owner() || len(d.Memories) != 0 || len(d.Conversations) != 0 {
				t.Errorf("empty export holds %+v", d)
			}
		}
	})
}

// searchingPreviewer can also search as a turn does (chat.Responder).
type searchingPreviewer struct {
	fakePreviewer
	snips []assemble.Snippet
	asked string
}

func (s *searchingPreviewer) Search(_ context.Context, _ pipeline.Key, text string, _ int) ([]assemble.Snippet, error) {
	s.asked = text
	return s.snips, nil
}

// TestSearchShowsExchanges: with a responder that searches as a turn does,
// /search shows the exchanges it found: the date, then each message with
// its speaker, the answer next to the question.
func TestSearchShowsExchanges(t *testing.T) {
	h := newHarness(t, &recorder{})
	at := time.Date(2026, 3, 3, 18, 0, 0, 0, time.UTC)
	sp := &searchingPreviewer{snips: []assemble.Snippet{{Messages: []assemble.SnippetMessage{
		{ID: 1, Role: memory.RoleUser, Sender: "Anna", Time: at, Text: "what are you bringing to the housewarming?", Hit: true},
		{ID: 2, Role: memory.RoleUser, Sender: "Ben", Time: at.Add(time.Minute), Text: "Lasagna!"},
	}}}}
	h.cmds = commands.New(h.store, h.sum, sp, commands.Options{BotName: "RecallBot", Now: h.clock.Now})
	got := h.reply(h.A, "/search housewarming")
	mustContain(t, "exchange", got, "Found 1:", "[Tue 2026-03-03] Anna: what are you bringing to the housewarming?\nBen: Lasagna!")
	if sp.asked != "housewarming" {
		t.Errorf("searched for %q", sp.asked)
	}
	sp.snips = nil
	mustContain(t, "nothing", h.reply(h.A, "/search zebra"), "Nothing in this conversation matches")
}

func TestContext(t *testing.T) {
	h := newHarness(t, &recorder{})
	h.prev.bd.Total, h.prev.bd.Budget = 120, 8000
	got := h.reply(h.A, "/context")
	mustContain(t, "/context", got, "120 of 8000 tokens")
	h.reply(h.A, "/context what about Lisbon?")
	if got := strings.Join(h.prev.texts, "|"); got != "(your next message)|what about Lisbon?" {
		t.Errorf("previewed texts: %q", got)
	}
}

// newCommandsWithoutModel is what runs when no LLM is configured: no

// IsExportOf recognizes the files /export named for an owner, with the
// "-N" a channel adds when the name is taken, and nobody else's.
func TestIsExportOf(t *testing.T) {
	at := time.Date(2026, 11, 29, 8, 30, 0, 0, time.UTC)
	name := commands.ExportFileName("telegram:12", at)
	if name != "recall-export-telegram-12-20261129-083000.json" {
		t.Fatalf("ExportFileName = %q", name)
	}
	for _, tc := range []struct {
		name, owner string
		want        bool
	}{
		{name, "telegram:12", true},
		{"recall-export-telegram-12-20261129-083000-3.json", "telegram:12", true},
		{name, "telegram:1", false},
		{name, "telegram:-12", false},
		{commands.ExportFileName("telegram:123", at), "telegram:12", false},
		{commands.ExportFileName("telegram:12-20261129-083000", at), "telegram:12", false},
		{"recall-export-telegram-12-20261129-083000-.json", "telegram:12", false},
		{"recall-export-telegram-12-20261129-083000.json.bak", "telegram:12", false},
		{"recall-export-telegram-12-notes.json", "telegram:12", false},
	} {
		if got := commands.IsExportOf(tc.name, tc.owner); got != tc.want {
			t.Errorf("IsExportOf(%q, %q) = %v, want %v", tc.name, tc.owner, got, tc.want)
		}
	}
}

// ExportTime reads the time from any owner's export file name, with or
// without the "-N" a channel adds.
func TestExportTime(t *testing.T) {
	at := time.Date(2026, 11, 29, 8, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{commands.ExportFileName("telegram:-12", at), true},
		{"recall-export-whatsapp-49151-s-whatsapp-net-20261129-083000-12.json", true},
		{"recall-export-telegram-12-20261129-083000-.json", false},
		{"recall-export-telegram-12.json", false},
		{"notes-20261129-083000.json", false},
	} {
		got, ok := commands.ExportTime(tc.name)
		if ok != tc.ok || ok && !got.Equal(at) {
			t.Errorf("ExportTime(%q) = %v, %v; want ok=%v", tc.name, got, ok, tc.ok)
		}
	}
}
