package memory

import (
	"context"
	"testing"

	"github.com/recallbot/recall/pipeline"
)

// MoveChat moves a chat's conversations (topics included), notes and
// settings to a new chat id, in either backend, and leaves nothing under
// the old one.
func TestMoveChat(t *testing.T) {
	for _, name := range []string{"sqlite", "json", "postgres"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, storage := openStoreNamed(t, t.TempDir(), name)
			from := pipeline.Key{Channel: "telegram", Chat: "-500"}
			topic := pipeline.Key{Channel: "telegram", Chat: "-500", Thread: "7"}
			to := pipeline.Key{Channel: "telegram", Chat: "-1001234500"}
			if err := s.PutSettings(ctx, Settings{Owner: from.Owner(), Storage: storage, Threshold: 15, MemoryEnabled: true}); err != nil {
				t.Fatal(err)
			}
			if err := s.Append(ctx, append(exchange(from, 1, "meet at noon", "ok"), exchange(topic, 2, "topic words", "fine")...)...); err != nil {
				t.Fatal(err)
			}
			if err := s.Remember(ctx, from.Owner(), "place", "the old mill"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.MoveChat(ctx, from, to); err != nil {
				t.Fatal(err)
			}
			if stored, _, _ := s.Lookup(ctx, to, "1"); !stored {
				t.Error("the chat's message did not move")
			}
			if stored, _, _ := s.Lookup(ctx, pipeline.Key{Channel: "telegram", Chat: to.Chat, Thread: "7"}, "2"); !stored {
				t.Error("the topic's message did not move")
			}
			if mems, err := s.Memories(ctx, to.Owner()); err != nil || len(mems) != 1 || mems[0].Content != "the old mill" {
				t.Errorf("notes = %v, %v", mems, err)
			}
			if st, err := s.Settings(ctx, to.Owner()); err != nil || st.Threshold != 15 || st.Storage != storage {
				t.Errorf("settings = %+v, %v", st, err)
			}
			old, err := s.Export(ctx, from.Owner(), nil)
			if err != nil || !old.Empty() {
				t.Errorf("left under the old id: %+v, %v", old, err)
			}
			// Moving again finds nothing and changes nothing.
			if rep, err := s.MoveChat(ctx, from, to); err != nil || rep != (ImportReport{}) {
				t.Errorf("second move = %+v, %v", rep, err)
			}
		})
	}
}
