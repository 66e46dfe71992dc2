package memory

import (
	"context"
	"flag"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkPostgresSearch compares archive search on PostgreSQL with SQLite
// on the same conversation (PGBENCH_MSGS messages, 100,000 by default, all
// but the newest 100 archived; text of the archive fixture's generator):
// 500 queries, each run on both stores in turn, limit 20, token budget
// 1,500. It also reports how fast each store took the messages in (batches
// of 500 through Append). It needs RECALL_TEST_POSTGRES_URL and runs only
// when named:
//
//	RECALL_TEST_POSTGRES_URL=$(.ci/postgres) go test -run='^$' -bench=PostgresSearch -benchtime=1x ./memory/
func BenchmarkPostgresSearch(b *testing.B) {
	if f := flag.Lookup("test.bench"); f == nil || !strings.Contains(f.Value.String(), "PostgresSearch") {
		b.Skip("builds a 100,000-message conversation: select it explicitly, -bench=PostgresSearch")
	}
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("PGBENCH_MSGS")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	p, s := cfOpenPostgres(b), cfOpenSQLite(b)
	k := cfKey("telegram", "big")
	people := []string{"Ana", "Rui", "Kenji Sato"}
	g := newBenchText(5)
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	msgs := make([]Message, n)
	for i := range msgs {
		m := Message{Key: k, Role: RoleAssistant, PlatformID: strconv.Itoa(i), Time: t0.Add(time.Duration(i) * time.Second)}
		if i%2 == 0 {
			m.Role, m.SenderName, m.SenderID = RoleUser, people[i/2%len(people)], strconv.Itoa(i/2%len(people))
		}
		m.Text = g.message(m.Role, people)
		msgs[i] = m
	}
	b.StopTimer()
	ingest := map[string]float64{}
	for _, st := range []struct {
		name string
		b    Backend
	}{{"sqlite", s}, {"postgres", p}} {
		start := time.Now()
		for off := 0; off < n; off += 500 {
			if _, err := st.b.Append(ctx, msgs[off:min(off+500, n)]); err != nil {
				b.Fatal(err)
			}
		}
		ingest[st.name] = float64(n) / time.Since(start).Seconds()
		act, err := st.b.Active(ctx, k)
		if err != nil {
			b.Fatal(err)
		}
		for off := 0; off+100 < len(act); off += 1000 {
			end := min(off+1000, len(act)-100)
			if _, err := st.b.Archive(ctx, k, cfIDs(act[off:end]), Summary{Text: "chunk"}, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	// What autovacuum does soon after a bulk insert (PostgreSQL 13 and
	// later vacuum insert-only tables too): statistics, visibility map.
	if _, err := p.pool.Exec(ctx, `VACUUM ANALYZE`); err != nil {
		b.Fatal(err)
	}
	qg := newBenchText(6)
	queries := make([]string, 500)
	for i := range queries {
		queries[i] = qg.query(people)
	}
	var pd, sd []time.Duration
	var pHits, sHits, diff int
	b.StartTimer()
	for range b.N {
		for i, text := range queries {
			q := Query{Text: text, ArchivedOnly: true, Limit: 20, TokenBudget: 1500}
			run := func(be Backend) ([]Hit, time.Duration) {
				start := time.Now()
				h, err := be.Search(ctx, k, q)
				if err != nil {
					b.Fatal(err)
				}
				return h, time.Since(start)
			}
			var hp, hs []Hit
			var tp, ts time.Duration
			if i%2 == 0 {
				hp, tp = run(p)
				hs, ts = run(s)
			} else {
				hs, ts = run(s)
				hp, tp = run(p)
			}
			pd, sd = append(pd, tp), append(sd, ts)
			pHits, sHits = pHits+len(hp), sHits+len(hs)
			if !slices.EqualFunc(hp, hs, func(a, c Hit) bool { return a.Message.PlatformID == c.Message.PlatformID }) {
				diff++
			}
		}
	}
	b.StopTimer()
	pct := func(d []time.Duration, q float64) float64 {
		d = slices.Clone(d)
		slices.Sort(d)
		return float64(d[min(len(d)-1, int(q*float64(len(d))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(pd, 0.5), "pg_p50_ms")
	b.ReportMetric(pct(pd, 0.99), "pg_p99_ms")
	b.ReportMetric(pct(sd, 0.5), "sqlite_p50_ms")
	b.ReportMetric(pct(sd, 0.99), "sqlite_p99_ms")
	b.ReportMetric(float64(diff)/float64(len(pd)), "differing_results")
	b.ReportMetric(ingest["postgres"], "pg_ingest_msgs/s")
	b.ReportMetric(ingest["sqlite"], "sqlite_ingest_msgs/s")
	b.Logf("archive search on %d archived msgs, %d queries × %d: PostgreSQL p50 %.2f ms p99 %.2f ms (%.1f hits/query); SQLite p50 %.2f ms p99 %.2f ms (%.1f hits/query); %d of %d result lists differ (SQLite prunes common terms above 5,000 messages); ingest %.0f vs %.0f msgs/s",
		n-100, len(queries), b.N, pct(pd, 0.5), pct(pd, 0.99), float64(pHits)/float64(len(pd)), pct(sd, 0.5), pct(sd, 0.99), float64(sHits)/float64(len(sd)), diff, len(pd), ingest["postgres"], ingest["sqlite"])
}
