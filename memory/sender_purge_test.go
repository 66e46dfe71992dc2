package memory

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// TestPurgeSender is "/purge all" reaching into the groups a person wrote
// in, on both backends: their messages there and the bot's answers to them
// go, with the group's summary and fact built from them; the summary's other
// messages come back into play; what others said and the person's own
// chat stay.
func TestPurgeSender(t *testing.T) {
	for _, name := range []string{"sqlite", "json", "postgres"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			storage := Storage(name)
			var s *Store
			if name == "postgres" {
				s, storage = openStoreOn(t, t.TempDir(), pgTestURL(t)), StorageSQLite
			} else {
				s = openStore(t, t.TempDir())
			}
			group := pipeline.Key{Channel: "telegram", Chat: "-100", Thread: "3"}
			other := pipeline.Key{Channel: "telegram", Chat: "-200"}
			own := pipeline.Key{Channel: "telegram", Chat: "7"}
			must(t, s.PutSettings(ctx, Settings{Owner: group.Owner(), Storage: storage, Threshold: 10, MemoryEnabled: true}))
			at := time.Now().Add(-time.Hour)
			msg := func(k pipeline.Key, id, sender, text string) []Message {
				return []Message{
					{Key: k, Role: RoleUser, SenderID: sender, PlatformID: id, Text: text, Time: at},
					{Key: k, Role: RoleAssistant, ReplyTo: id, Text: "re: " + text, Time: at},
				}
			}
			must(t, s.Append(ctx, msg(group, "1", "7", "ann's secret zebra")...))
			must(t, s.Append(ctx, msg(group, "2", "8", "bob's plan")...))
			must(t, s.Append(ctx, msg(group, "3", "7", "ann again zebra")...))
			must(t, s.Append(ctx, msg(group, "4", "8", "bob later")...))
			must(t, s.Append(ctx, msg(other, "1", "7", "ann elsewhere")...))
			must(t, s.Append(ctx, msg(own, "1", "7", "ann's own chat")...))
			active, err := s.Active(ctx, group)
			must(t, err)
			if _, err := s.Archive(ctx, group, []int64{active[0].ID, active[1].ID, active[2].ID, active[3].ID}, Summary{Text: "ann's secret and bob's plan"}, 2); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.AddFact(ctx, group.Owner(), Fact{Key: group.String(), Content: "ann has a zebra", Sources: []string{"1"}}); err != nil {
				t.Fatal(err)
			}
			sc := SenderScope{Channel: "telegram", SenderID: "7", Except: own.Owner()}
			n, groups, err := s.SenderMessages(ctx, sc)
			if err != nil || n != 3 || groups != 2 {
				t.Fatalf("SenderMessages = %d in %d groups, %v; want 3 in 2", n, groups, err)
			}
			rep, err := s.PurgeSender(ctx, sc)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Messages != 6 || rep.Summaries != 1 || rep.Facts != 1 {
				t.Errorf("report %+v, want 6 messages (3 and their answers), 1 summary, 1 fact", rep)
			}
			texts := func(k pipeline.Key) string {
				d, err := s.Export(ctx, k.Owner(), &k)
				must(t, err)
				var out []string
				for _, c := range d.Conversations {
					for _, m := range c.Messages {
						out = append(out, m.Text)
					}
					for _, sm := range c.Summaries {
						out = append(out, "summary: "+sm.Text)
					}
				}
				for _, f := range d.Facts {
					out = append(out, "fact: "+f.Content)
				}
				return strings.Join(out, "|")
			}
			if got, want := texts(group), "bob's plan|re: bob's plan|bob later|re: bob later"; got != want {
				t.Errorf("group after the purge: %q, want %q", got, want)
			}
			if got := texts(other); got != "" {
				t.Errorf("other group after the purge: %q", got)
			}
			if got := texts(own); got != "ann's own chat|re: ann's own chat" {
				t.Errorf("own chat: %q", got)
			}
			st, err := s.Status(ctx, group)
			must(t, err)
			if st.Archived != 0 || st.Active != 4 {
				t.Errorf("group status %+v: bob's archived messages must be active again", st)
			}
			if hits, err := s.Search(ctx, group, Query{Text: "zebra"}); err != nil || len(hits) != 0 {
				t.Errorf("search still finds %d purged messages (%v)", len(hits), err)
			}
			if n, groups, _ := s.SenderMessages(ctx, sc); n != 0 || groups != 0 {
				t.Errorf("after the purge: %d in %d groups", n, groups)
			}
		})
	}
}
