package memory

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallbot/recall/memory/internal/fts"
)

// longWord is a "word" of n random lowercase letters: no stem, and
// PostgreSQL cannot compress it below its index row limit.
func longWord(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}

// cfLongWords: a message holding words longer than fts.MaxTermBytes is
// stored whole and found by its other words with the score every backend
// computes (the long word counts in its length); the long word is found by
// no search, and holds its place: a phrase does not match across it.
// (Before the bound, PostgreSQL refused such a message: "index row size
// exceeds btree maximum".)
func cfLongWords(t *testing.T, open func(t *testing.T) Backend) {
	b := open(t)
	k := cfKey("telegram", "1")
	long := longWord(1, 8000)
	// U+19B0 is a letter to Go (one query word) but no token character
	// of FTS5's Unicode 6.1 tables: the word is a phrase of two tokens.
	phrase := "river\u19b0stone"
	if p := fts.Phrases(phrase); len(p) != 1 || len(p[0]) != 2 {
		t.Fatalf("phrases of %q: %q, want one of two tokens", phrase, p)
	}
	msgs := []Message{
		cfUser(k, "1", "the river "+long+" stone", cfT0),
		cfUser(k, "2", "river stone and a boat", cfT0.Add(1)),
		cfUser(k, "3", long+" "+long, cfT0.Add(2)),
		cfUser(k, "4", "a boat on the lake", cfT0.Add(3)),
	}
	msgs[3].SenderName = "Alice " + long
	if n := cfAppend(t, b, msgs...); n != len(msgs) {
		t.Fatalf("stored %d of %d messages", n, len(msgs))
	}
	got := cfActive(t, b, k)
	if len(got) != len(msgs) || got[0].Text != msgs[0].Text || got[2].Text != msgs[2].Text {
		t.Fatalf("stored %d messages, not as written", len(got))
	}
	other := cfOtherKind(t, b)
	cfAppend(t, other, msgs...)
	for _, q := range []string{"river", "boat", "alice", phrase, long, long[:fts.MaxTermBytes+1]} {
		hits, want := cfSearch(t, b, k, Query{Text: q}), cfSearch(t, other, k, Query{Text: q})
		if len(hits) != len(want) {
			t.Fatalf("%.20q: %d hits, the other kind %d", q, len(hits), len(want))
		}
		for i := range hits {
			if hits[i].Message.PlatformID != want[i].Message.PlatformID || hits[i].Score != want[i].Score {
				t.Fatalf("%.20q: hit %d is %s (%v), the other kind's %s (%v)", q, i,
					hits[i].Message.PlatformID, hits[i].Score, want[i].Message.PlatformID, want[i].Score)
			}
		}
		switch q {
		case long, long[:fts.MaxTermBytes+1]:
			if len(hits) != 0 {
				t.Fatalf("a search of the long word found %d messages", len(hits))
			}
		case phrase:
			if len(hits) != 1 || hits[0].Message.PlatformID != "2" {
				t.Fatalf("%q found %q, want only message 2 (not across the long word)", phrase, cfHitTexts(hits))
			}
		case "river":
			if len(hits) != 2 {
				t.Fatalf("river: %d hits, want 2", len(hits))
			}
		}
	}
}

// TestSearchIndexHoldsNoLongTerm: messages_fts holds no term whose stem is
// longer than fts.MaxTermBytes (text, sender's name, repeats), and a
// message's length (the rowid's low bits, BM25's D) still counts each long
// token.
func TestSearchIndexHoldsNoLongTerm(t *testing.T) {
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := cfKey("telegram", "1")
	long := longWord(2, 100_000)
	at := strings.Repeat("b", fts.MaxTermBytes)
	m := cfUser(k, "1", "river "+long+" "+at+" "+long+" stone", cfT0)
	m.SenderName = "Alice " + long
	if _, err := s.Append(ctx, []Message{m}); err != nil {
		t.Fatal(err)
	}
	longest, rowid := searchIndexTerms(t, s)
	if prefix := len("c1x"); longest > prefix+fts.MaxTermBytes {
		t.Fatalf("messages_fts holds a term of %d bytes (bound %d after %d of prefix)", longest, fts.MaxTermBytes, prefix)
	} else if longest != prefix+len(at) {
		t.Fatalf("the longest term has %d bytes, want the %d-byte word at the bound", longest, len(at))
	}
	if n, want := ftsRowidLen(rowid), len(fts.Tokens(m.Text))+len(fts.Tokens(m.SenderName)); n != want || n != 7 {
		t.Fatalf("indexed length %d, want %d tokens (the long ones counted)", n, want)
	}
}

// searchIndexTerms reads messages_fts's vocabulary: the longest term's
// length, and the rowid of its (only) row.
func searchIndexTerms(t *testing.T, s *SQLite) (longest int, rowid int64) {
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{`CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_terms USING fts5vocab(main, messages_fts, 'row')`,
		`CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_inst USING fts5vocab(main, messages_fts, 'instance')`} {
		if _, err := s.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DB().QueryRowContext(ctx, `SELECT coalesce(max(length(CAST(term AS BLOB))), 0) FROM temp.fts_terms`).Scan(&longest); err != nil {
		t.Fatal(err)
	}
	if err := s.DB().QueryRowContext(ctx, `SELECT coalesce(max(doc), 0) FROM temp.fts_inst`).Scan(&rowid); err != nil {
		t.Fatal(err)
	}
	return longest, rowid
}

// TestMigrationDropsLongTerms: migration 0008 derives messages_fts again,
// so an index written before the bound (its long terms put back by hand
// here) holds none of them after it, and a message can still be deleted
// (a contentless row is deleted by replaying its terms: the old ones would
// fail).
func TestMigrationDropsLongTerms(t *testing.T) {
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := cfKey("telegram", "1")
	long := longWord(3, 5000)
	m := cfUser(k, "1", "river "+long+" stone "+long, cfT0)
	if _, err := s.Append(ctx, []Message{m}); err != nil {
		t.Fatal(err)
	}
	db := s.DB()
	// The row as recall_fts wrote it before the bound.
	var conv, id int64
	if err := db.QueryRowContext(ctx, `SELECT conv, id FROM messages`).Scan(&conv, &id); err != nil {
		t.Fatal(err)
	}
	p := ftsConvPrefix(conv)
	old := p + "xriver " + p + "x" + long + " " + p + "xstone " + p + "x" + long
	if _, err := db.ExecContext(ctx, `INSERT INTO messages_fts(messages_fts, rowid, text, sender, extra)
		SELECT 'delete', recall_fts(conv, id, text, sender_name, 0), recall_fts(conv, id, text, sender_name, 1),
			recall_fts(conv, id, text, sender_name, 2), recall_fts(conv, id, text, sender_name, 3) FROM messages`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO messages_fts(rowid, text, sender, extra)
		SELECT recall_fts(conv, id, text, sender_name, 0), ?, recall_fts(conv, id, text, sender_name, 2), ? FROM messages`,
		old, p+"r"+long); err != nil {
		t.Fatal(err)
	}
	if longest, _ := searchIndexTerms(t, s); longest <= len(long) {
		t.Fatalf("the old index holds no long term (longest %d)", longest)
	}
	body, err := migrationFiles.ReadFile("migrations/0008_long_terms.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, string(body)); err != nil {
		t.Fatalf("migration 0008: %v", err)
	}
	if longest, _ := searchIndexTerms(t, s); longest > len(p)+1+fts.MaxTermBytes {
		t.Fatalf("after migration 0008, messages_fts holds a term of %d bytes", longest)
	}
	hits, err := s.Search(ctx, k, Query{Text: "stone"})
	if err != nil || len(hits) != 1 {
		t.Fatalf("search after the migration: %d hits, %v", len(hits), err)
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM messages`); err != nil {
		t.Fatalf("deleting the message after the migration: %v", err)
	}
	if longest, _ := searchIndexTerms(t, s); longest != 0 {
		t.Fatalf("the deleted message left terms in messages_fts (longest %d bytes)", longest)
	}
}

// TestPostgresMigrationDropsLongTerms: PostgreSQL's migration 0011 deletes
// the postings of stems over the bound (put there by hand, as an index
// written before it held them) and their term_stats, and leaves the rest.
func TestPostgresMigrationDropsLongTerms(t *testing.T) {
	ctx := context.Background()
	p := cfOpenPostgres(t)
	k := cfKey("telegram", "1")
	if _, err := p.Append(ctx, []Message{cfUser(k, "1", "river stone", cfT0)}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", fts.MaxTermBytes+1)
	if _, err := p.pool.Exec(ctx, `INSERT INTO message_terms(conv, term, msg, tf_text, tf_sender, doc_len)
		SELECT conv, $1::bytea, msg, 1, 0, doc_len FROM message_terms LIMIT 1`, []byte(long)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.pool.Exec(ctx, `INSERT INTO term_stats(conv, term, df) SELECT conv, $1::bytea, 1 FROM message_terms LIMIT 1`, []byte(long)); err != nil {
		t.Fatal(err)
	}
	body, err := pgMigrationFiles.ReadFile("pgmigrations/0011_long_terms.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.pool.Exec(ctx, string(body)); err != nil {
		t.Fatalf("migration 0011: %v", err)
	}
	for _, table := range []string{"message_terms", "term_stats"} {
		var n, longN int
		if err := p.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE octet_length(term) > 64) FROM `+table).Scan(&n, &longN); err != nil {
			t.Fatal(err)
		}
		if n != 3 || longN != 0 {
			t.Fatalf("%s: %d rows, %d over the bound; want the 3 of river, stone and alice", table, n, longN)
		}
	}
}
