package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/recallbot/recall/bench/chattext"
	"github.com/recallbot/recall/bench/figures"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// BenchmarkSearchAfterDelete compares the archive search on two copies of
// the turn fixture (100,000 archived messages in one conversation), one of
// which had one archived message purged (the SQLite backend's purge, with
// the index's secure-delete): the same queries on both, alternating which
// goes first. Turn messages of 4 and 30 words, each written to both first
// as a turn does (turn); the same with the sender's name, "Ana", added
// (sender). Per search: the CPU time of the process and the database pages
// the search fetched (page cache hits and misses). Why a purge costs
// anything: see search_index.go.
//
//	go test -run='^$' -bench=SearchAfterDelete -benchtime=200x ./memory/
func BenchmarkSearchAfterDelete(b *testing.B) {
	ctx := context.Background()
	key := pipeline.Key{Channel: "telegram", Chat: "424242"} // the fixture's conversation
	intact, purged := openTurnFixture(b, "intact"), openTurnFixture(b, "purged")
	// FTS5's reads are compared: not the index in memory.
	defer intact.WithoutFullIndexes()()
	defer purged.WithoutFullIndexes()()
	var platformID string
	if err := purged.DB().QueryRowContext(ctx, `SELECT m.platform_id FROM messages m JOIN conversations c ON c.id = m.conv
		WHERE c.key = ? AND m.is_active = 0 AND m.role = 'user' AND m.platform_id != '' ORDER BY m.id LIMIT 1 OFFSET 25000`, key.String()).Scan(&platformID); err != nil {
		b.Fatal(err)
	}
	rep, err := memory.PurgeOneMessage(ctx, purged, key, platformID)
	if err != nil || rep.Messages == 0 {
		b.Fatalf("purging %s: %+v, %v", platformID, rep, err)
	}
	var version int
	if err := purged.DB().QueryRowContext(ctx, `SELECT v FROM messages_fts_config WHERE k = 'version'`).Scan(&version); err != nil {
		b.Fatal(err)
	}
	b.Logf("purged %s: %+v; the index's format version is now %d", platformID, rep, version)
	people := []string{"João", "Sofia", "Rui", "Helena", "Kenji"}
	sides := []*memory.SQLite{intact, purged}
	for _, c := range []struct {
		name string
		with string // added to every query
	}{{"turn", ""}, {"sender", "Ana"}} {
		b.Run(c.name, func(b *testing.B) {
			g := chattext.NewWords(77)
			var cpu [2]time.Duration
			var pages [2]int64
			n := 0
			search := func(i int, q memory.Query) {
				fetches, stop := memory.SearchPageFetches(sides[i])
				c := figures.ProcessCPU()
				if _, err := sides[i].Search(ctx, key, q); err != nil {
					b.Fatal(err)
				}
				cpu[i] += figures.ProcessCPU() - c
				_, p := fetches()
				stop()
				pages[i] += p
			}
			for range 20 { // warm both page caches alike
				q := memory.Query{Text: g.Text(8, people) + " " + c.with, Limit: 30}
				search(0, q)
				search(1, q)
			}
			cpu, pages = [2]time.Duration{}, [2]int64{}
			for b.Loop() {
				words := 4
				if n%2 == 1 {
					words = 30
				}
				text := g.Text(words, people)
				// A turn writes the user's message first (a commit drops
				// the readers' page caches).
				for i, s := range sides {
					m := memory.Message{Key: key, Role: memory.RoleUser, SenderID: "424242", SenderName: "Ana",
						PlatformID: fmt.Sprintf("after-delete-%s-%d-%d", c.name, n, i), Text: text, Time: time.Now(), Tokens: 20}
					if _, err := s.Append(ctx, []memory.Message{m}); err != nil {
						b.Fatal(err)
					}
				}
				q := memory.Query{Text: text + " " + c.with, Limit: 30}
				first := n / 2 % 2
				search(first, q)
				search(1-first, q)
				n++
			}
			ms := func(d time.Duration) float64 { return figures.MS(d) / float64(n) }
			b.ReportMetric(ms(cpu[0]), "intact_cpu_ms")
			b.ReportMetric(ms(cpu[1]), "purged_cpu_ms")
			b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "cpu_ratio")
			b.ReportMetric(float64(pages[0])/float64(n), "intact_pages/search")
			b.ReportMetric(float64(pages[1])/float64(n), "purged_pages/search")
			b.Logf("%d searches each: intact %.2f ms CPU, %.0f pages; one message purged %.2f ms CPU, %.0f pages",
				n, ms(cpu[0]), float64(pages[0])/float64(n), ms(cpu[1]), float64(pages[1])/float64(n))
		})
	}
}
