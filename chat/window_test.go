package chat

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
)

// TestMemoryOffKeepsOnlyTheRecentWindow is /summary_off as a user reads
// it: while memory is off nothing they write is kept beyond the
// conversation's recent window (seed 002 keeps it in memory only) — older
// messages written since it went off are deleted, not archived, gone from
// search too — while what was stored before it went off stays. Both
// storage backends.
func TestMemoryOffKeepsOnlyTheRecentWindow(t *testing.T) {
	for _, storage := range []memory.Storage{memory.StorageSQLite, memory.StorageJSON} {
		t.Run(string(storage), func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, llmtest.Echo("echo: "), Options{KeepRecent: 2})
			before := time.Now().Add(-time.Hour)
			must(t, f.store.PutSettings(ctx, memory.Settings{Owner: key.Owner(), Storage: storage, Threshold: 10, MemoryEnabled: true}))
			must(t, f.store.Append(ctx,
				memory.Message{Key: key, Role: memory.RoleUser, PlatformID: "old", Text: "kept from before: lighthouse", Time: before},
				memory.Message{Key: key, Role: memory.RoleAssistant, ReplyTo: "old", Text: "noted", Time: before}))
			st, err := f.store.Settings(ctx, key.Owner())
			must(t, err)
			st.MemoryEnabled, st.Updated = false, time.Now().Add(-time.Minute) // /summary_off
			must(t, f.store.PutSettings(ctx, st))

			for i := 1; i <= 5; i++ {
				if err := f.turn(t, inbound(fmt.Sprint(i), fmt.Sprintf("secret number %d zebra%d", i, i)), &recorder{}); err != nil {
					t.Fatal(err)
				}
			}
			must(t, f.store.Flush(ctx))
			d, err := f.store.Export(ctx, key.Owner(), &key)
			must(t, err)
			var texts []string
			for _, c := range d.Conversations {
				for _, m := range c.Messages {
					texts = append(texts, m.Text)
				}
			}
			want := "kept from before: lighthouse|noted|secret number 4 zebra4|echo: secret number 4 zebra4|secret number 5 zebra5|echo: secret number 5 zebra5"
			if got := strings.Join(texts, "|"); got != want {
				t.Errorf("stored while memory is off:\n%s\nwant\n%s", got, want)
			}
			for _, word := range []string{"zebra1", "zebra3"} {
				if hits, err := f.store.Search(ctx, key, memory.Query{Text: word}); err != nil || len(hits) != 0 {
					t.Errorf("search %q finds %d messages (%v) after they left the window", word, len(hits), err)
				}
			}
			if hits, err := f.store.Search(ctx, key, memory.Query{Text: "lighthouse"}); err != nil || len(hits) != 1 {
				t.Errorf("search finds %d of what was stored before memory went off (%v)", len(hits), err)
			}
		})
	}
}
