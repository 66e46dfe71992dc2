package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/recallbot/recall/bench/figures"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/memory/pgtest"
)

// BenchmarkPostgresRetrievalQuality is BenchmarkRetrievalQuality on
// PostgreSQL beside SQLite, on the same conversation: recall of the 50
// planted facts by their paraphrased questions, 1,500-token budget, with
// 3,200 archived turns (both stores rank exactly) and 20,000 (both prune).
// It needs RECALL_TEST_POSTGRES_URL:
//
//	RECALL_TEST_POSTGRES_URL=$(.ci/postgres $$) go test -run='^$' -bench=PostgresRetrievalQuality -benchtime=1x ./memory/
func BenchmarkPostgresRetrievalQuality(b *testing.B) {
	for _, filler := range []int{3200, 20000} {
		b.Run(fmt.Sprint(filler), func(b *testing.B) {
			ctx := context.Background()
			b.StopTimer()
			p, err := memory.OpenPostgres(ctx, pgtest.URL(b))
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			s, err := memory.OpenSQLite(ctx, filepath.Join(b.TempDir(), "recall.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			msgs, planted := qualityConversation(filler)
			var acts [2][]memory.Message
			for i, st := range []memory.Backend{s, p} {
				for off := 0; off < len(msgs); off += 1000 {
					if _, err := st.Append(ctx, msgs[off:min(off+1000, len(msgs))]); err != nil {
						b.Fatal(err)
					}
				}
				act, err := st.Active(ctx, qualityKey)
				if err != nil {
					b.Fatal(err)
				}
				for off := 0; off < len(act); off += figures.ChunkSize {
					chunk := act[off:min(off+figures.ChunkSize, len(act))]
					if _, err := st.Archive(ctx, qualityKey, ids(chunk), memory.Summary{Text: "They chatted."}, 0); err != nil {
						b.Fatal(err)
					}
				}
				acts[i] = act
			}
			b.StartTimer()
			var found [2]int
			var missed [2][]int
			for range b.N {
				found, missed = [2]int{}, [2][]int{}
				for f, fact := range benchFacts {
					q := memory.Query{Text: fact.Question, ArchivedOnly: true, TokenBudget: 1500, Limit: 50}
					for i, st := range []memory.Backend{s, p} {
						hits, err := st.Search(ctx, qualityKey, q)
						if err != nil {
							b.Fatal(err)
						}
						if hasID(hits, acts[i][planted[f]].ID) {
							found[i]++
						} else {
							missed[i] = append(missed[i], f+1)
						}
					}
				}
			}
			n := float64(len(benchFacts))
			b.ReportMetric(float64(found[0])/n, "sqlite_recall")
			b.ReportMetric(float64(found[1])/n, "pg_recall")
			b.Logf("retrieval quality over %d archived turns: SQLite %d/%d, PostgreSQL %d/%d; SQLite missed %v, PostgreSQL missed %v",
				len(msgs), found[0], len(benchFacts), found[1], len(benchFacts), missed[0], missed[1])
		})
	}
}
