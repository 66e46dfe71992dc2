package memory

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// TestTermDocs: a conversation's messages are counted per word as the
// search reads it ("moving" counts "moved"), a stopword counts -1, another
// conversation's messages are not counted, and a word found in more than
// the share asked for stops being counted past it.
func TestTermDocs(t *testing.T) {
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	key, other := cfKey("telegram", "1"), cfKey("telegram", "2")
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var msgs []Message
	for i, text := range []string{"we moved to Lisbon", "moving again?", "Lisbon is sunny", "pizza", "pizza again", "pizza tonight",
		"bread", "bread and cheese", "good night", "night"} {
		msgs = append(msgs, Message{Key: key, Role: RoleUser, SenderName: "Ana", Text: text, Time: t0.Add(time.Duration(i) * time.Minute)})
	}
	msgs = append(msgs, Message{Key: other, Role: RoleUser, SenderName: "Rui", Text: "Lisbon Lisbon, moving", Time: t0})
	if _, err := s.Append(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	docs, n, err := s.TermDocs(ctx, key, []string{"moves", "lisbon", "the", "paris", "pizza"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{2, 2, -1, 0, 3}; docs != 10 || !equalInts(n, want) {
		t.Errorf("TermDocs = %d messages, %v; want 10, %v", docs, n, want)
	}
	// "pizza" is in 3 of 10: counting stops past a fifth.
	if _, n, err := s.TermDocs(ctx, key, []string{"pizza", "lisbon"}, 0.2); err != nil || n[0] <= 2 || n[1] != 2 {
		t.Errorf("TermDocs up to a fifth = %v, %v; want more than 2 for pizza, 2 for lisbon", n, err)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTermDocsNotCounted: a JSON owner's store cannot count (the
// assembler's feedback is then off), and says so with ErrNoTermDocs.
func TestTermDocsNotCounted(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	key := pipeline.Key{Channel: "telegram", Chat: "5"}
	set := Settings{Owner: key.Owner(), MemoryEnabled: true, Storage: StorageJSON, Threshold: 10}
	conv := ConversationData{Key: key.String(), Messages: []Message{{Role: RoleUser, SenderName: "Ana", Text: "Lisbon", Time: time.Now()}}}
	if _, err := st.Import(ctx, NewExport(OwnerData{Owner: key.Owner(), Settings: &set, Conversations: []ConversationData{conv}})); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.TermDocs(ctx, key, []string{"lisbon"}, 1); !errors.Is(err, ErrNoTermDocs) {
		t.Errorf("TermDocs on a JSON owner: %v, want ErrNoTermDocs", err)
	}
}
