package chat

import (
	"context"
	"testing"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// TestSearchShowsExchanges: /search (through the responder) finds what a
// turn would find, as exchanges: the message that matches with the reply
// that answers it, though the reply shares no word with the search.
func TestSearchShowsExchanges(t *testing.T) {
	f := newFixture(t, nil, Options{})
	ctx := context.Background()
	key := pipeline.Key{Channel: "telegram", Chat: "-100"}
	t0 := time.Date(2026, 3, 3, 18, 0, 0, 0, time.UTC)
	if err := f.store.Append(ctx,
		memory.Message{Key: key, Role: memory.RoleUser, SenderID: "1", SenderName: "Anna", PlatformID: "1", Text: "what are you bringing to the housewarming?", Time: t0},
		memory.Message{Key: key, Role: memory.RoleUser, SenderID: "2", SenderName: "Ben", PlatformID: "2", Text: "Lasagna!", Time: t0.Add(time.Minute)},
	); err != nil {
		t.Fatal(err)
	}
	snips, err := f.resp.Search(ctx, key, "housewarming", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(snips) != 1 || len(snips[0].Messages) != 2 || snips[0].Messages[1].Sender != "Ben" || snips[0].Messages[1].Text != "Lasagna!" {
		t.Errorf("snippets %+v, want Anna's question with Ben's answer", snips)
	}
}
