package memory

// Benchmarks of the store. Every comparison is measured side by side in one
// run and reported with b.ReportMetric; nothing here asserts on time.
//
//	go test -run='^$' -bench=Ingest -benchtime=3x ./memory/
//	go test -run='^$' -bench=SearchArchive -benchtime=1x ./memory/   # builds the 1M fixture once
//	go test -run='^$' -bench=RecentWindow -benchtime=2s ./memory/
//	go test -run='^$' -bench=RetrievalQuality -benchtime=1x ./memory/
//
// BenchmarkSearchArchive and BenchmarkRecentWindow need the 1M-message
// fixture (see bigFixtureDir); they skip unless the -bench pattern contains
// "Archive" or "Recent", so -bench=. never starts the build.

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// benchLikeSearch is seed 002's archive search, as one SQL query: every
// keyword (Terms of the text) is a `text LIKE '%kw%'`, the score is how many
// keywords a message contains, ties go to the most recent. The token budget is
// applied as ours does (budgetHits: hits in rank order while they fit).
func benchLikeSearch(ctx context.Context, db *sql.DB, key pipeline.Key, q Query) ([]Hit, error) {
	terms := Terms(q.Text)
	if len(terms) == 0 {
		return nil, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	var score, filter strings.Builder
	args := []any{key.String()}
	for i, t := range terms {
		if i > 0 {
			score.WriteString(" + ")
			filter.WriteString(" OR ")
		}
		p := "?" + strconv.Itoa(i+2)
		score.WriteString("(m.text LIKE " + p + ")")
		filter.WriteString("m.text LIKE " + p)
		args = append(args, "%"+t+"%")
	}
	archived := ""
	if q.ArchivedOnly {
		archived = " AND m.is_active = 0"
	}
	query := `SELECT ` + msgColumns + `, ` + score.String() + ` AS score FROM messages m
		WHERE m.conv = (SELECT id FROM conversations WHERE key = ?1)` + archived + ` AND (` + filter.String() + `)
		ORDER BY score DESC, m.id DESC LIMIT ` + strconv.Itoa(limit+len(q.Exclude))
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	msgs, scores, err := scanMessages(rows, key, true)
	if err != nil {
		return nil, err
	}
	hits := make([]Hit, len(msgs))
	for i := range msgs {
		hits[i] = Hit{Message: msgs[i], Score: scores[i]}
	}
	return budgetHits(hits, q), nil
}

// pct returns the p-th percentile (0 < p ≤ 1, nearest rank) of d.
func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms64(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us64(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// requireSelected skips a benchmark that needs the 1M fixture unless the
// -bench pattern names it, so -bench=. does not start a minutes-long build.
func requireSelected(b *testing.B, word string) {
	b.Helper()
	f := flag.Lookup("test.bench")
	if f == nil || !strings.Contains(f.Value.String(), word) {
		b.Skipf("needs the 1M-message fixture: select it explicitly, e.g. -bench=%s", word)
	}
}

// ingestRows are n messages: user+assistant exchanges spread round-robin over
// convs conversations.
func ingestRows(convs, n int) []Message {
	g := newBenchText(11)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	msgs := make([]Message, 0, n)
	for i := 0; len(msgs) < n; i++ {
		key := pipeline.Key{Channel: "telegram", Chat: strconv.Itoa(500 + i%convs)}
		at := t0.Add(time.Duration(i) * time.Second)
		pid := strconv.Itoa(i)
		people := []string{benchNames[i%convs], benchNames[(i%convs+7)%len(benchNames)]}
		msgs = append(msgs,
			Message{Key: key, Role: RoleUser, SenderID: "7", SenderName: people[0], PlatformID: pid, Text: g.message(RoleUser, people), Time: at},
			Message{Key: key, Role: RoleAssistant, PlatformID: "a" + pid, ReplyTo: pid, Text: g.message(RoleAssistant, people), Time: at.Add(time.Second)})
	}
	return msgs[:n]
}

func countMessages(b *testing.B, db *sql.DB) int {
	b.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM messages`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// ingestWriter stores msgs through the write-behind writer: Store.Enqueue of
// every exchange, then Flush. It returns the time from the first Enqueue to
// the end of Flush.
func ingestWriter(b *testing.B, dir string, msgs []Message) time.Duration {
	ctx := context.Background()
	st, err := Open(ctx, Options{Dir: dir, QueueSize: len(msgs) + 1})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close(ctx)
	start := time.Now()
	for i := 0; i < len(msgs); i += 2 {
		if err := st.Enqueue(msgs[i], msgs[i+1]); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	d := time.Since(start)
	if n := countMessages(b, st.SQLite().r); n != len(msgs) {
		b.Fatalf("writer stored %d messages, want %d", n, len(msgs))
	}
	return d
}

// ingestRaw stores the same rows with plain batched INSERTs into the same
// schema: conversations first, then one transaction per 1000 messages with a
// prepared statement. The FTS triggers fire as they do for the writer.
// ingestRawBatch is the fastest raw insert we know: one INSERT … SELECT
// FROM json_each statement per 1,000 rows (FTS5 flushes once per statement).
func ingestRawBatch(b *testing.B, dir string, msgs []Message) time.Duration {
	return ingestRawWith(b, dir, msgs, true)
}

func ingestRaw(b *testing.B, dir string, msgs []Message) time.Duration {
	return ingestRawWith(b, dir, msgs, false)
}

func ingestRawWith(b *testing.B, dir string, msgs []Message, oneStatement bool) time.Duration {
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(dir, "recall.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	db := s.DB()
	start := time.Now()
	convs := map[pipeline.Key]int64{}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range msgs {
		if _, ok := convs[m.Key]; ok {
			continue
		}
		var id int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO conversations(key, owner, created_at) VALUES (?, ?, ?) RETURNING id`,
			m.Key.String(), m.Key.Owner(), time.Now().UnixMilli()).Scan(&id); err != nil {
			b.Fatal(err)
		}
		convs[m.Key] = id
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	for off := 0; off < len(msgs) && oneStatement; off += 1000 {
		var rows [][]any
		for _, m := range msgs[off:min(off+1000, len(msgs))] {
			rows = append(rows, []any{convs[m.Key], string(m.Role), m.SenderID, m.SenderName, m.PlatformID, m.ReplyTo,
				m.Text, m.Time.UnixMilli(), estimateTokens(m.Text), 1, 0})
		}
		doc, _ := json.Marshal(rows)
		if _, err := db.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
			b.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, strings.Replace(sqlInsertBatch, " RETURNING conv, role", "", 1), string(doc)); err != nil {
			b.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `COMMIT`); err != nil {
			b.Fatal(err)
		}
	}
	for off := 0; off < len(msgs) && !oneStatement; off += 1000 {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		ins, err := tx.PrepareContext(ctx, `INSERT INTO messages(conv, role, sender_id, sender_name, platform_id, reply_to, text, created_at, tokens, is_active, chunk_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0)`)
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range msgs[off:min(off+1000, len(msgs))] {
			if _, err := ins.ExecContext(ctx, convs[m.Key], string(m.Role), m.SenderID, m.SenderName, m.PlatformID, m.ReplyTo,
				m.Text, m.Time.UnixMilli(), estimateTokens(m.Text)); err != nil {
				b.Fatal(err)
			}
		}
		ins.Close()
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	d := time.Since(start)
	if n := countMessages(b, db); n != len(msgs) {
		b.Fatalf("raw insert stored %d messages, want %d", n, len(msgs))
	}
	return d
}

// BenchmarkIngest compares the write-behind writer with a raw batched INSERT
// of the same 20,000 messages (50 conversations) into fresh databases, both
// sides in every iteration, alternating which goes first.
func BenchmarkIngest(b *testing.B) {
	const convs, perSide = 50, 20_000
	msgs := ingestRows(convs, perSide)
	var writerD, rawD, batchD time.Duration
	for i := 0; i < b.N; i++ {
		bdir, err := os.MkdirTemp("", "recall-ingest-batch-")
		if err != nil {
			b.Fatal(err)
		}
		batchD += ingestRawBatch(b, bdir, msgs)
		os.RemoveAll(bdir)
		wdir, err := os.MkdirTemp("", "recall-ingest-writer-")
		if err != nil {
			b.Fatal(err)
		}
		rdir, err := os.MkdirTemp("", "recall-ingest-raw-")
		if err != nil {
			b.Fatal(err)
		}
		if i%2 == 0 {
			writerD += ingestWriter(b, wdir, msgs)
			rawD += ingestRaw(b, rdir, msgs)
		} else {
			rawD += ingestRaw(b, rdir, msgs)
			writerD += ingestWriter(b, wdir, msgs)
		}
		os.RemoveAll(wdir)
		os.RemoveAll(rdir)
	}
	total := float64(perSide * b.N)
	w, r, rb := total/writerD.Seconds(), total/rawD.Seconds(), total/batchD.Seconds()
	b.ReportMetric(w, "writer_msgs/s")
	b.ReportMetric(r, "raw_msgs/s")
	b.ReportMetric(rb, "raw_batch_msgs/s")
	b.ReportMetric(w/r, "ratio")
	b.ReportMetric(w/rb, "ratio_vs_batch")
	b.Logf("ingest of %d msgs × %d: writer %.0f msgs/s; raw row-by-row INSERT %.0f msgs/s (ratio %.2f); raw one-statement batches %.0f msgs/s (ratio %.2f); target ≥ 0.8",
		perSide, b.N, w, r, w/r, rb, w/rb)
}

// openFixture opens the cached 1M-message store.
func openFixture(b *testing.B) *Store {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	dir := bigFixtureDir(b)
	st, err := Open(context.Background(), Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close(context.Background()) })
	return st
}

// searchQueries are 500 queries: 490 of 1–4 Zipf-drawn content words (one in
// ten with a name of the big conversation), then the hostile ones.
func searchQueries() []string {
	hostile := benchHostileQueries()
	g := newBenchText(2024)
	var qs []string
	for len(qs) < 500-len(hostile) {
		qs = append(qs, g.query(bigPeople))
	}
	// Spread the hostile queries through the run.
	for i, h := range hostile {
		at := (i + 1) * len(qs) / (len(hostile) + 1)
		qs = slices.Insert(qs, at, h)
	}
	return qs
}

// BenchmarkSearchArchive compares our archive search (SQLite.Search: FTS5,
// BM25) with seed 002's LIKE scan on the 100,000 archived messages of the big
// conversation of the 1M fixture: 500 queries, each run by both, alternating
// which goes first. Limit 20, token budget 1,500.
func BenchmarkSearchArchive(b *testing.B) {
	requireSelected(b, "Archive")
	st := openFixture(b)
	ctx := context.Background()
	sq := st.SQLite()
	queries := searchQueries()
	ours := func(text string) ([]Hit, error) {
		return sq.Search(ctx, bigKey, Query{Text: text, ArchivedOnly: true, Limit: 20, TokenBudget: 1500})
	}
	like := func(text string) ([]Hit, error) {
		return benchLikeSearch(ctx, sq.r, bigKey, Query{Text: text, ArchivedOnly: true, Limit: 20, TokenBudget: 1500})
	}
	logPlan(b, sq, queries[0])
	// Warm up both (page cache, prepared statements).
	for _, q := range queries[:10] {
		if _, err := ours(q); err != nil {
			b.Fatal(err)
		}
		if _, err := like(q); err != nil {
			b.Fatal(err)
		}
	}
	type sample struct {
		q    int
		d    time.Duration
		hits int
	}
	var oursS, likeS []sample
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for qi, q := range queries {
			runOurs := func() {
				t := time.Now()
				h, err := ours(q)
				if err != nil {
					b.Fatalf("ours %q: %v", q, err)
				}
				oursS = append(oursS, sample{qi, time.Since(t), len(h)})
			}
			runLike := func() {
				t := time.Now()
				h, err := like(q)
				if err != nil {
					b.Fatalf("like %q: %v", q, err)
				}
				likeS = append(likeS, sample{qi, time.Since(t), len(h)})
			}
			if (qi+i)%2 == 0 {
				runOurs()
				runLike()
			} else {
				runLike()
				runOurs()
			}
		}
	}
	b.StopTimer()
	durs := func(s []sample) []time.Duration {
		out := make([]time.Duration, len(s))
		for i, x := range s {
			out[i] = x.d
		}
		return out
	}
	od, ld := durs(oursS), durs(likeS)
	o50, o99, l50, l99 := pct(od, 0.5), pct(od, 0.99), pct(ld, 0.5), pct(ld, 0.99)
	b.ReportMetric(ms64(o50), "ours_p50_ms")
	b.ReportMetric(ms64(o99), "ours_p99_ms")
	b.ReportMetric(ms64(l50), "like_p50_ms")
	b.ReportMetric(ms64(l99), "like_p99_ms")
	b.ReportMetric(float64(l99)/float64(o99), "p99_speedup")
	meanHits := func(s []sample) float64 {
		n := 0
		for _, x := range s {
			n += x.hits
		}
		return float64(n) / float64(len(s))
	}
	b.Logf("archive search, %d queries × %d on %d archived msgs (1M store): ours p50 %.2f ms p99 %.2f ms max %.1f ms (%.1f hits/query); LIKE p50 %.1f ms p99 %.1f ms (%.1f hits/query); p99 speedup %.0f×",
		len(queries), b.N, bigArchived, ms64(o50), ms64(o99), ms64(slices.Max(od)), meanHits(oursS), ms64(l50), ms64(l99), meanHits(likeS), float64(l99)/float64(o99))
	slices.SortFunc(oursS, func(a, b sample) int { return int(b.d - a.d) })
	for _, s := range oursS[:min(5, len(oursS))] {
		q := queries[s.q]
		if len(q) > 60 {
			q = q[:60] + fmt.Sprintf("… (%d bytes)", len(queries[s.q]))
		}
		b.Logf("  slow (ours): %.1f ms, %d terms, %d hits: %q", ms64(s.d), len(Terms(queries[s.q])), s.hits, q)
	}
}

// logPlan logs SQLite's plans for the statements SQLite.Search runs per
// term: its text doclist and its other doclist.
func logPlan(b *testing.B, sq *SQLite, text string) {
	b.Helper()
	ctx := context.Background()
	conv, err := convID(ctx, sq.r, bigKey)
	if err != nil {
		b.Fatal(err)
	}
	terms := Terms(text)
	if len(terms) == 0 {
		return
	}
	stem := ftsTokens(terms[0])[0]
	var plan []string
	for _, st := range []struct {
		query string
		args  []any
	}{
		{sqlTermRows, []any{matchTerm(ftsTerm(ftsConvPrefix(conv), ftsKindText, stem))}},
		{sqlTermOther, []any{matchTerm(ftsTerm(ftsConvPrefix(conv), ftsKindRest, stem)), nil}},
	} {
		rows, err := sq.r.QueryContext(ctx, `EXPLAIN QUERY PLAN `+st.query, st.args...)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				b.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
	}
	b.Logf("query plans of SQLite.Search (per term): %s", strings.Join(plan, " | "))
}

// BenchmarkRecentWindow measures Store.Recent(key, 8, 3000) — the context
// window of every turn — on the big conversation and on a small one.
func BenchmarkRecentWindow(b *testing.B) {
	requireSelected(b, "Recent")
	st := openFixture(b)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		key  pipeline.Key
	}{{"big", bigKey}, {"small", smallKey}} {
		b.Run(c.name, func(b *testing.B) {
			for range 20 { // warm up
				if _, err := st.Recent(ctx, c.key, 8, 3000); err != nil {
					b.Fatal(err)
				}
			}
			d := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t := time.Now()
				msgs, err := st.Recent(ctx, c.key, 8, 3000)
				d = append(d, time.Since(t))
				if err != nil || len(msgs) == 0 {
					b.Fatalf("Recent: %d messages, %v", len(msgs), err)
				}
			}
			b.StopTimer()
			b.ReportMetric(us64(pct(d, 0.5)), "p50_us")
			b.ReportMetric(us64(pct(d, 0.99)), "p99_us")
			b.Logf("Recent(%s, 8, 3000) over %d calls: p50 %.0f µs, p99 %.0f µs", c.key, len(d), us64(pct(d, 0.5)), us64(pct(d, 0.99)))
		})
	}
}

// BenchmarkRetrievalQuality measures recall on a 3,200-turn conversation
// between Maria and Tomás with 50 planted facts, all archived: for each fact,
// a paraphrased question; a hit is the planted turn among the snippets that
// fit a 1,500-token budget. Ours (FTS5 BM25, porter stemming) vs the LIKE scan.
func BenchmarkRetrievalQuality(b *testing.B) {
	ctx := context.Background()
	b.StopTimer()
	s, err := OpenSQLite(ctx, filepath.Join(b.TempDir(), "recall.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	msgs, planted := qualityConversation(3200)
	if _, err := s.Append(ctx, msgs); err != nil {
		b.Fatal(err)
	}
	act, err := s.Active(ctx, qualityKey)
	if err != nil {
		b.Fatal(err)
	}
	if len(act) != len(msgs) {
		b.Fatalf("stored %d of %d messages", len(act), len(msgs))
	}
	for off := 0; off < len(act); off += benchChunkSize {
		chunk := act[off:min(off+benchChunkSize, len(act))]
		if _, err := s.Archive(ctx, qualityKey, benchIDs(chunk), Summary{Text: "They chatted."}, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.StartTimer()
	var oursFound, likeFound int
	var oursMissed, likeMissed []int
	for i := 0; i < b.N; i++ {
		oursFound, likeFound, oursMissed, likeMissed = 0, 0, nil, nil
		for f, fact := range benchFacts {
			q := Query{Text: fact.Question, ArchivedOnly: true, TokenBudget: 1500, Limit: 50}
			want := act[planted[f]].ID
			oh, err := s.Search(ctx, qualityKey, q)
			if err != nil {
				b.Fatal(err)
			}
			lh, err := benchLikeSearch(ctx, s.r, qualityKey, q)
			if err != nil {
				b.Fatal(err)
			}
			if hasID(oh, want) {
				oursFound++
			} else {
				oursMissed = append(oursMissed, f+1)
			}
			if hasID(lh, want) {
				likeFound++
			} else {
				likeMissed = append(likeMissed, f+1)
			}
		}
	}
	n := float64(len(benchFacts))
	b.ReportMetric(float64(oursFound)/n, "ours_recall")
	b.ReportMetric(float64(likeFound)/n, "like_recall")
	b.Logf("retrieval quality, %d questions over %d archived turns (budget 1,500 tokens): ours %d/%d (%.2f), LIKE %d/%d (%.2f); ours missed facts %v; LIKE missed %v",
		len(benchFacts), len(msgs), oursFound, len(benchFacts), float64(oursFound)/n, likeFound, len(benchFacts), float64(likeFound)/n, oursMissed, likeMissed)
}

func hasID(hits []Hit, id int64) bool {
	for _, h := range hits {
		if h.Message.ID == id {
			return true
		}
	}
	return false
}

func benchIDs(msgs []Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}
