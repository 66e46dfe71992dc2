package memory

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/memory/internal/fts"
	"github.com/recallbot/recall/memory/pgtest"
	"github.com/recallbot/recall/pipeline"
)

// pgTestURL gives the test a fresh schema on RECALL_TEST_POSTGRES_URL's
// server, or skips it (see pgtest).
func pgTestURL(t testing.TB) string { return pgtest.URL(t) }

func cfOpenPostgres(t testing.TB) *Postgres {
	t.Helper()
	p, err := OpenPostgres(context.Background(), pgTestURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestPostgresMigratesOnce: replicas that start together on an empty
// database all open it, and the migrations run once (without the advisory
// lock, the second CREATE TABLE fails).
func TestPostgresMigratesOnce(t *testing.T) {
	u := pgTestURL(t)
	ctx := context.Background()
	const replicas = 6
	errs := make(chan error, replicas)
	opened := make(chan *Postgres, replicas)
	start := make(chan struct{})
	for range replicas {
		go func() {
			<-start
			p, err := OpenPostgres(ctx, u)
			errs <- err
			opened <- p
		}()
	}
	close(start)
	for range replicas {
		if err := <-errs; err != nil {
			t.Errorf("opening: %v", err)
		}
		if p := <-opened; p != nil {
			t.Cleanup(func() { p.Close() })
		}
	}
	if t.Failed() {
		return
	}
	p := cfOpenPostgres(t)
	names, _ := pgMigrationFiles.ReadDir("pgmigrations")
	var rows, version int
	if err := p.pool.QueryRow(ctx, `SELECT count(*), max(version) FROM schema_version`).Scan(&rows, &version); err != nil {
		t.Fatal(err)
	}
	if rows != len(names) || version != len(names) {
		t.Fatalf("schema_version has %d rows up to %d, want %d", rows, version, len(names))
	}
}

// TestPostgresRanksLikeSQLite: the same archive ranks and scores the same
// on PostgreSQL as on SQLite, hit for hit, across conversations of
// different sizes.
func TestPostgresRanksLikeSQLite(t *testing.T) {
	p, s := cfOpenPostgres(t), cfOpenSQLite(t)
	g := newBenchText(77)
	people := []string{"Maria", "Tomás", "Zoë"}
	var msgs []Message
	for c := range 5 {
		k := cfKey("telegram", strconv.Itoa(10+c))
		for i := range 40 + 30*c {
			m := cfUser(k, fmt.Sprint(i), g.message(RoleUser, people), cfT0.Add(time.Duration(i)*time.Second))
			m.SenderName = people[(i+c)%len(people)]
			msgs = append(msgs, m)
		}
	}
	cfAppend(t, s, msgs...)
	cfAppend(t, p, msgs...)
	// Archive part of each conversation so ArchivedOnly is compared too.
	for c := range 5 {
		k := cfKey("telegram", strconv.Itoa(10+c))
		for _, b := range []Backend{s, p} {
			act := cfActive(t, b, k)
			cfArchive(t, b, k, cfIDs(act[:len(act)/2]), "half", cfT0, 0)
		}
	}
	best3 := func(b Backend, k pipeline.Key, text string) []int64 {
		var ids []int64
		for _, h := range cfSearch(t, b, k, Query{Text: text, Limit: 3}) {
			ids = append(ids, h.Message.ID)
		}
		return ids
	}
	qg := newBenchText(78)
	for c := range 5 {
		k := cfKey("telegram", strconv.Itoa(10+c))
		for i := range 30 {
			text := qg.query(people)
			// A phrase of two tokens, as a term can be one (U+19B0 is a
			// letter to the query's word split, a separator to the
			// tokenizer): two neighbouring words of a stored message.
			words := strings.Fields(msgs[(c*37+i*11)%len(msgs)].Text)
			phrase := text + " " + strings.Trim(words[0], ",.!?") + "\u19b0" + strings.Trim(words[min(1, len(words)-1)], ",.!?")
			for _, q := range []Query{{Text: text, Limit: 50}, {Text: text, Limit: 4, TokenBudget: 30}, {Text: text, ArchivedOnly: true},
				{Text: phrase, Limit: 50}, {Text: phrase, ArchivedOnly: true, Limit: 5},
				{Text: text, Limit: 5, From: cfT0.Add(20 * time.Second).Truncate(time.Millisecond), To: cfT0.Add(60 * time.Second).Truncate(time.Millisecond)},
				{Text: text, Limit: 6, TokenBudget: 40, Exclude: []int64{-1}}} {
				// Exclude -1 stands for the best three hits of each store
				// (its own ids).
				qs, qp := q, q
				if len(q.Exclude) > 0 {
					qs.Exclude, qp.Exclude = best3(s, k, text), best3(p, k, text)
				}
				hs, hp := cfSearch(t, s, k, qs), cfSearch(t, p, k, qp)
				if len(hs) != len(hp) {
					t.Fatalf("%s %+v: SQLite %d hits, PostgreSQL %d", k, q, len(hs), len(hp))
				}
				for i := range hs {
					if hs[i].Message.PlatformID != hp[i].Message.PlatformID || hs[i].Score != hp[i].Score {
						t.Fatalf("%s %+v hit %d: SQLite %s %v, PostgreSQL %s %v", k, q, i, hs[i].Message.PlatformID, hs[i].Score, hp[i].Message.PlatformID, hp[i].Score)
					}
				}
			}
		}
	}
}

// TestPostgresPurgeLeavesNoTerms: a purged message leaves nothing in the
// search index, and the conversation's statistics (N, total length) count
// only what remains.
func TestPostgresPurgeLeavesNoTerms(t *testing.T) {
	p := cfOpenPostgres(t)
	ctx := context.Background()
	k := cfKey("telegram", "1")
	cfAppend(t, p, cfUser(k, "1", "secret lisbon plans", cfT0), cfBot(k, "1", "noted, lisbon", cfT0.Add(time.Second)),
		cfUser(k, "2", "the piano is heavy", cfT0.Add(48*time.Hour)))
	terms := func(word string) int {
		t.Helper()
		var n int
		if err := p.pool.QueryRow(ctx, `SELECT count(*) FROM message_terms WHERE term = $1`, []byte(fts.Tokens(word)[0])).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	stats := func() (docs, tokens int64) {
		t.Helper()
		if err := p.pool.QueryRow(ctx, `SELECT search_docs, search_tokens FROM conversations WHERE key = $1`, k.String()).Scan(&docs, &tokens); err != nil {
			t.Fatal(err)
		}
		return
	}
	if n := terms("lisbon"); n != 2 {
		t.Fatalf("lisbon indexed in %d messages, want 2", n)
	}
	if d, tk := stats(); d != 3 || tk != (3+1)+2+(4+1) {
		t.Fatalf("statistics %d messages, %d tokens", d, tk)
	}
	if _, err := p.Purge(ctx, PurgeScope{Owner: k.Owner(), OlderThan: cfT0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if n := terms("lisbon") + terms("secret"); n != 0 {
		t.Fatalf("%d index rows of purged messages remain", n)
	}
	if d, tk := stats(); d != 1 || tk != 5 {
		t.Fatalf("statistics after purge: %d messages, %d tokens, want 1, 5", d, tk)
	}
	var stale int
	if err := p.pool.QueryRow(ctx, `SELECT count(*) FROM term_stats WHERE term = ANY($1)`, [][]byte{[]byte(fts.Tokens("lisbon")[0]), []byte(fts.Tokens("secret")[0])}).Scan(&stale); err != nil || stale != 0 {
		t.Fatalf("%d term statistics of purged words remain (%v)", stale, err)
	}
	if _, err := p.Purge(ctx, PurgeScope{Owner: k.Owner()}); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := p.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM message_terms) + (SELECT count(*) FROM term_stats) + (SELECT count(*) FROM messages) + (SELECT count(*) FROM conversations)`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d rows remain after purging the owner", left)
	}
}

// TestPostgresPrunedSearch: in a conversation big enough to prune, a
// search whose postings all fit the budget returns exactly the full
// ranking (so the stored n of every stem is right), and with a small
// budget every message holding the query's rarest word is still found.
func TestPostgresPrunedSearch(t *testing.T) {
	p := cfOpenPostgres(t)
	ctx := context.Background()
	k := cfKey("telegram", "big")
	g := newBenchText(9)
	people := []string{"Ana", "Rui"}
	var msgs []Message
	for i := range 1500 {
		m := cfUser(k, fmt.Sprint(i), g.message(RoleUser, people), cfT0.Add(time.Duration(i)*time.Second))
		if i%300 == 7 {
			m.Text += " zanzibar"
		}
		msgs = append(msgs, m)
	}
	cfAppend(t, p, msgs...)
	// Some purged, so the counts were taken from too.
	if _, err := p.Purge(ctx, PurgeScope{Owner: k.Owner(), OlderThan: cfT0.Add(100 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	qg := newBenchText(10)
	search := func(tune pgSearchTuning, q Query) []Hit {
		t.Helper()
		p.tune = &tune
		defer func() { p.tune = nil }()
		return cfSearch(t, p, k, q)
	}
	exact := pgSearchTuning{exactUpTo: 1 << 40}
	roomy := pgSearchTuning{exactUpTo: 10, budget: 1 << 40, minPer: 1}
	for range 40 {
		q := Query{Text: qg.query(people), Limit: 30}
		if a, b := search(exact, q), search(roomy, q); !sameHits(a, b) {
			t.Fatalf("%q: pruned with room for everything\n%s\nexact\n%s", q.Text, hitList(b), hitList(a))
		}
	}
	tight := pgSearchTuning{exactUpTo: 10, budget: 200, minPer: 20}
	hits := search(tight, Query{Text: "zanzibar " + qg.query(people) + " " + qg.query(people), Limit: 100})
	found := 0
	for _, h := range hits {
		if strings.Contains(h.Message.Text, "zanzibar") {
			found++
		}
	}
	if found != 4 { // 1500/300 = 5, one of them purged
		t.Fatalf("the rare word found in %d messages, want 4: %s", found, hitList(hits))
	}
}

// TestPostgresStoresBinaryText: text PostgreSQL cannot hold (NUL bytes,
// invalid UTF-8) is stored with U+FFFD in their place — the message is
// kept and found, never refused (a refused write would stall the queue).
func TestPostgresStoresBinaryText(t *testing.T) {
	p := cfOpenPostgres(t)
	k := cfKey("telegram", "1")
	m := cfUser(k, "1\x00", "lis\x00bon \xff\xfe harbour", cfT0)
	m.SenderName = "An\x00n"
	if n := cfAppend(t, p, m); n != 1 {
		t.Fatalf("stored %d messages, want 1", n)
	}
	if n := cfAppend(t, p, m); n != 0 {
		t.Fatal("a redelivery of the same message was stored again")
	}
	got := cfActive(t, p, k)
	if len(got) != 1 || got[0].Text != "lis\uFFFDbon \uFFFD harbour" || got[0].SenderName != "An\uFFFDn" {
		t.Fatalf("stored %+v", got)
	}
	if stored, _, err := p.Lookup(cfCtx, k, "1\x00"); err != nil || !stored {
		t.Fatalf("Lookup = %v, %v", stored, err)
	}
	if hits := cfSearch(t, p, k, Query{Text: "harbour"}); len(hits) != 1 {
		t.Fatalf("search found %d", len(hits))
	}
}

// TestOpenPostgresErrorsKeepThePassword: a database that cannot be reached,
// or a URL that is not one, gives an error that does not quote the
// password.
func TestOpenPostgresErrorsKeepThePassword(t *testing.T) {
	for _, u := range []string{
		"postgres://recall:hunter2-secret@127.0.0.1:1/recall?sslmode=disable&connect_timeout=2",
		"postgres://recall:hunter2-secret@127.0.0.1:1/recall?sslmode=bogus",
		"postgres://recall:hunter2-secret@127.0.0.1:notaport/recall",
	} {
		p, err := OpenPostgres(context.Background(), u)
		if err == nil {
			p.Close()
			t.Fatalf("%s: opened", u)
		}
		t.Log(err)
		if strings.Contains(err.Error(), "hunter2-secret") {
			t.Errorf("error quotes the password: %v", err)
		}
	}
}

// TestPostgresPostingsNewestFirst: postings come to ranking newest first,
// whatever order they were read in, each with its counts.
func TestPostgresPostingsNewestFirst(t *testing.T) {
	ps := pgPostings{msgs: []int64{3, 9, 1, 7}, tfText: []int32{30, 90, 10, 70}, tfSender: []int32{3, 9, 1, 7}, docLen: []int32{300, 900, 100, 700}}
	ps.newestFirst()
	want := pgPostings{msgs: []int64{9, 7, 3, 1}, tfText: []int32{90, 70, 30, 10}, tfSender: []int32{9, 7, 3, 1}, docLen: []int32{900, 700, 300, 100}}
	if !slices.Equal(ps.msgs, want.msgs) || !slices.Equal(ps.tfText, want.tfText) || !slices.Equal(ps.tfSender, want.tfSender) || !slices.Equal(ps.docLen, want.docLen) {
		t.Fatalf("got %+v, want %+v", ps, want)
	}
}

// TestPostgresSearchWithinReadsThePostingsOnce: SearchWithin returns what
// Search returns for the timed query and for the same query over all time
// (same messages, same scores, same order), exact or pruned, archive only
// or not, with excluded messages and a token budget, and ranges whose ends
// fall between a message's stored millisecond and its written time; and it
// reads the postings once for both.
func TestPostgresSearchWithinReadsThePostingsOnce(t *testing.T) {
	p := cfOpenPostgres(t)
	ctx := context.Background()
	k := cfKey("telegram", "within")
	g := newBenchText(31)
	people := []string{"Ana", "Rui", "Zoë"}
	var msgs []Message
	for i := range 600 {
		m := cfUser(k, fmt.Sprint(i), g.message(RoleUser, people), cfT0.Add(time.Duration(i)*time.Minute))
		m.SenderName = people[i%len(people)]
		msgs = append(msgs, m)
	}
	cfAppend(t, p, msgs...)
	act := cfActive(t, p, k)
	cfArchive(t, p, k, cfIDs(act[:500]), "most", cfT0, 0)
	reads := 0
	p.searchTrace = func() { reads++ }
	defer func() { p.searchTrace, p.tune = nil, nil }()
	qg := newBenchText(32)
	spans := [][2]time.Duration{{0, 30 * time.Minute}, {100 * time.Minute, 400 * time.Minute}, {250 * time.Minute, 0}, {-time.Hour, 251 * time.Minute}}
	found := 0 // timed searches that found something
	for _, tune := range []pgSearchTuning{{exactUpTo: 1 << 40}, {exactUpTo: 10, budget: 300, minPer: 20}} {
		p.tune = &tune
		for i := range 12 {
			// Two words of the message written at the range's end (or
			// start), a little before it (To is in the middle of a
			// millisecond: that message is stored in the range).
			span := spans[i%len(spans)]
			end := span[1]
			if end == 0 {
				end = span[0]
			}
			words := strings.Fields(msgs[int(end/time.Minute)].Text)
			text := qg.query(people) + " " + strings.Trim(words[0], ",.!?") + " " + strings.Trim(words[len(words)-1], ",.!?")
			q := Query{Text: text, Limit: 5 + i, From: cfT0.Add(span[0]), To: cfT0.Add(span[1]), ArchivedOnly: i%3 == 0}
			if span[0] < 0 {
				q.From = time.Time{}
			}
			if span[1] == 0 {
				q.To = time.Time{}
			}
			if i%2 == 1 {
				q.Exclude = cfIDs(act[100+i : 110+i])
			}
			if i%4 == 2 {
				q.TokenBudget = 60
			}
			reads = 0
			want := cfSearch(t, p, k, q)
			overAll := q
			overAll.From, overAll.To = time.Time{}, time.Time{}
			wantAll := cfSearch(t, p, k, overAll)
			if reads != 2 {
				t.Fatalf("two searches read the postings %d times", reads)
			}
			reads = 0
			got, gotAll, err := p.SearchWithin(ctx, k, q)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%q %v (tuning %+v)", text, span, tune)
			if len(want) > 0 {
				found++
			}
			if !sameHits(got, want) {
				t.Errorf("%s: within\n%s\nwant\n%s", name, hitList(got), hitList(want))
			}
			if !sameHits(gotAll, wantAll) || len(wantAll) == 0 {
				t.Errorf("%s: all\n%s\nwant\n%s", name, hitList(gotAll), hitList(wantAll))
			}
			if reads != 1 {
				t.Errorf("%s: SearchWithin read the postings %d times, want once", name, reads)
			}
		}
	}
	if found < 12 {
		t.Errorf("only %d of 24 timed searches found something", found)
	}
}

// TestPostgresMaxShare: on PostgreSQL too, a search that leaves out common
// words (the archive snippets' feedback search) ranks "pizza night" by
// "night" alone when "pizza" is in more than the share asked for.
func TestPostgresMaxShare(t *testing.T) {
	checkMaxShare(t, cfOpenPostgres(t))
}
