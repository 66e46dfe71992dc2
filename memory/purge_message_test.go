package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/recallbot/recall/pipeline"
)

// A message deleted for everyone leaves the bot's memory as a purge of
// one message (with the bot's reply to it): its text is gone from the messages, the search and the
// files, the summary built from its chunk goes too (its other messages
// come back into play), and nothing else is touched. Another sender's
// message is not removed.
func TestPurgeMessage(t *testing.T) {
	for _, storage := range []Storage{StorageSQLite, StorageJSON} {
		t.Run(string(storage), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s := openStore(t, dir)
			secret := "zqxrevoked9931"
			key := pipeline.Key{Channel: "whatsapp", Chat: "4915112345678@s.whatsapp.net"}
			if storage == StorageJSON {
				must(t, s.PutSettings(ctx, Settings{Owner: key.Owner(), Storage: StorageJSON, Threshold: 10, MemoryEnabled: true}))
			}
			for i := range 10 {
				text := "ordinary words number " + fmt.Sprint(i)
				if i == 2 {
					text = "oops my pin is " + secret
				}
				must(t, s.Enqueue(exchange(key, i, text, "noted")...))
			}
			must(t, s.Flush(ctx))
			act, err := s.Active(ctx, key)
			must(t, err)
			_, err = s.Archive(ctx, key, ids(act[:8]), Summary{Text: "User shared their pin " + secret}, 4)
			must(t, err)
			must(t, s.sqlite.Checkpoint(ctx))
			files := []string{filepath.Join(dir, "recall.db"), filepath.Join(dir, "recall.db-wal"), s.json.Path(key.Owner())}
			if len(fileHas(t, secret, files...)) == 0 {
				t.Fatal("control failed: the secret is not on disk before the purge")
			}
			if rep, err := s.PurgeMessage(ctx, key, "2", "someone-else"); err != nil || rep.Messages != 0 {
				t.Fatalf("another sender's delete purged %+v (%v)", rep, err)
			}
			rep, err := s.PurgeMessage(ctx, key, "2", "7")
			must(t, err)
			if rep.Messages != 2 || rep.Summaries != 1 {
				t.Errorf("report %+v, want the message, the reply to it and the summary built from them", rep)
			}
			if found := fileHas(t, secret, files...); len(found) > 0 {
				t.Errorf("the deleted text is still in %v", found)
			}
			if hits, _ := s.Search(ctx, key, Query{Text: secret}); len(hits) != 0 {
				t.Errorf("search still finds the deleted text: %v", hits)
			}
			st, err := s.Status(ctx, key)
			must(t, err)
			if st.Total != 18 {
				t.Errorf("%d messages left, want 18", st.Total)
			}
			act, err = s.Active(ctx, key)
			must(t, err)
			if len(act) != 18 {
				t.Errorf("%d active messages, want 18 (the summarized ones back in play)", len(act))
			}
			if rep, err := s.PurgeMessage(ctx, key, "2", ""); err != nil || rep.Messages != 0 {
				t.Errorf("purging again: %+v, %v", rep, err)
			}
		})
	}
}
