package memory

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/recallbot/recall/pipeline"
)

const cutNote = "\n[… cut: the message was "

func TestCutText(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		cut        bool
		was        string
	}{
		{"empty", "", false, ""},
		{"at the bound", strings.Repeat("a", MaxMessageBytes), false, ""},
		{"one byte over", strings.Repeat("a", MaxMessageBytes+1), true, "4 MB"},
		{"30 MB", strings.Repeat("x", 30<<20), true, "30 MB"},
		// Four-byte runes across the cut point: the cut must not split one.
		{"emoji", strings.Repeat("🧠", MaxMessageBytes/4+7), true, "4 MB"},
		{"emoji shifted", "ab" + strings.Repeat("🧠", MaxMessageBytes/4+7), true, "4 MB"},
		{"not UTF-8", strings.Repeat("\xff", MaxMessageBytes+10), true, "4 MB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := CutText(tc.text)
			if cut != tc.cut {
				t.Fatalf("cut = %v, want %v", cut, tc.cut)
			}
			if !cut {
				if got != tc.text {
					t.Fatal("text within the bound was changed")
				}
				return
			}
			if len(got) > MaxMessageBytes {
				t.Errorf("cut text is %d bytes, over the bound %d", len(got), MaxMessageBytes)
			}
			i := strings.LastIndex(got, cutNote)
			if i < 0 {
				t.Fatalf("no note in the cut text's tail %q", got[max(0, len(got)-200):])
			}
			head, note := got[:i], got[i:]
			if !strings.HasPrefix(tc.text, head) || len(head) < MaxMessageBytes-200 {
				t.Errorf("kept %d bytes that are not the text's head", len(head))
			}
			if want := cutNote + tc.was + "; Recall keeps at most 4 MB of one message]"; note != want {
				t.Errorf("note %q, want %q", note, want)
			}
			if utf8.ValidString(tc.text) && !utf8.ValidString(got) {
				t.Error("cutting valid UTF-8 made it invalid")
			}
		})
	}
}

// manyWords returns n bytes of three words repeated: FTS5 keeps each
// word's positions in one growing list, which costs SQLite far more memory
// than one long word (or many distinct words).
func manyWords(n int, seed string) string {
	return strings.Repeat(seed+" other text ", n/len(seed)+1)[:n]
}

// TestHugeMessageIsStoredCut appends a 30 MB message through the write
// queue: SQLite's indexing of it ran out of memory and the driver panicked,
// taking the process down (the test binary with it).
func TestHugeMessageIsStoredCut(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	k := pipeline.Key{Channel: "telegram", Chat: "42"}
	text := "needle " + manyWords(30<<20, "word")
	must(t, s.Enqueue(Message{Key: k, Role: RoleUser, PlatformID: "1", Text: text}))
	// Read-your-writes shows the cut text while it is queued.
	if p := s.w.pendingFor(k); len(p) != 1 || len(p[0].Text) > MaxMessageBytes {
		t.Fatalf("queued message not cut (%d pending)", len(p))
	}
	must(t, s.Flush(ctx))
	got, err := s.Recent(ctx, k, 0, 0)
	must(t, err)
	if len(got) != 1 {
		t.Fatalf("stored %d messages, want 1", len(got))
	}
	m := got[0]
	if len(m.Text) > MaxMessageBytes || !strings.Contains(m.Text, cutNote+"30 MB;") {
		t.Fatalf("stored %d bytes ending %q", len(m.Text), m.Text[max(0, len(m.Text)-120):])
	}
	if !strings.HasPrefix(text, m.Text[:strings.LastIndex(m.Text, cutNote)]) {
		t.Error("the stored head is not the message's head")
	}
	if m.Tokens > MaxMessageBytes/3 {
		t.Errorf("tokens %d counted for the whole message, not the cut one", m.Tokens)
	}
	hits, err := s.Search(ctx, k, Query{Text: "needle"})
	must(t, err)
	if len(hits) != 1 {
		t.Errorf("search for the head's word found %d, want 1", len(hits))
	}
}

// TestBigMessagesInOneBatch appends 24 messages at the bound in one
// call: in one SQLite statement (one JSON parameter of 96 MB, parsed and
// indexed inside the connection's memory) they exhausted it and the driver
// panicked; statements split by bytes (maxStatementBytes) keep them in one
// transaction.
func TestBigMessagesInOneBatch(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("indexes 96 MB: about 20 s, minutes under -race (run it without -short and -race)")
	}
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	k := pipeline.Key{Channel: "telegram", Chat: "42"}
	var msgs []Message
	for i := range 24 {
		msgs = append(msgs, Message{Key: k, Role: RoleUser, PlatformID: fmt.Sprint(i), Text: manyWords(MaxMessageBytes, fmt.Sprint("word", i))})
	}
	must(t, s.Append(ctx, msgs...))
	got, err := s.sqlite.Recent(ctx, k, 0, 0)
	must(t, err)
	if len(got) != len(msgs) {
		t.Fatalf("stored %d messages, want %d", len(got), len(msgs))
	}
	for i := range got {
		if got[i].Text != msgs[i].Text {
			t.Errorf("message %d changed (%d → %d bytes)", i, len(msgs[i].Text), len(got[i].Text))
		}
	}
}

// cfHugeMessages: every backend stores a message over MaxMessageBytes cut,
// whether appended or imported, and an import counts it.
func cfHugeMessages(t *testing.T, open func(t *testing.T) Backend) {
	b := open(t)
	k := cfKey("telegram", "huge")
	text := strings.Repeat("é", MaxMessageBytes/2+100) // 4 MiB + 200 bytes
	cfAppend(t, b, cfUser(k, "1", text, cfT0))
	rep, err := b.Import(cfCtx, OwnerData{Owner: k.Owner(), Conversations: []ConversationData{{
		Key: k.String(), Messages: []Message{cfUser(k, "2", text, cfT0.Add(time.Second)), cfUser(k, "3", "small", cfT0.Add(2*time.Second))},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cut != 1 || rep.Messages != 2 {
		t.Errorf("import report %+v, want 2 messages, 1 cut", rep)
	}
	d := cfExport(t, b, k.Owner(), &k)
	if len(d.Conversations) != 1 {
		t.Fatalf("%d conversations exported, want 1", len(d.Conversations))
	}
	got := d.Conversations[0].Messages
	if len(got) != 3 {
		t.Fatalf("%d messages, want 3", len(got))
	}
	for _, m := range got[:2] {
		if len(m.Text) > MaxMessageBytes || !strings.HasSuffix(m.Text, "; Recall keeps at most 4 MB of one message]") || !utf8.ValidString(m.Text) {
			t.Errorf("message %s: %d bytes, tail %q", m.PlatformID, len(m.Text), m.Text[max(0, len(m.Text)-100):])
		}
	}
	if got[2].Text != "small" {
		t.Errorf("small message changed: %q", got[2].Text)
	}
}
