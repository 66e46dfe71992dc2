package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/recallbot/recall/memory/internal/fts"
	"github.com/recallbot/recall/pipeline"
)

// A message deleted for everyone leaves the bot's memory as a purge of
// one message (with the bot's reply to it): its text is gone from the messages, the search and the
// files, the summary built from its chunk goes too (its other messages
// come back into play), and nothing else is touched. Another sender's
// message is not removed. On PostgreSQL, no table keeps a trace: not the
// messages, not the search postings or their stems' counts, not the
// conversation's search totals.
func TestPurgeMessage(t *testing.T) {
	for _, name := range []string{"sqlite", "json", "postgres"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s, storage := openStoreNamed(t, dir, name)
			pg := s.pg
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
			if pg != nil {
				if len(pgTraces(t, pg, secret)) == 0 {
					t.Fatal("control failed: the secret is not in the database before the purge")
				}
			} else if len(fileHas(t, secret, files...)) == 0 {
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
			if pg != nil {
				if found := pgTraces(t, pg, secret); len(found) > 0 {
					t.Errorf("the deleted text left traces in PostgreSQL: %v", found)
				}
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

// pgTraces lists where a word stays in a PostgreSQL store: any text of the
// messages or summaries, its stems in the search postings or their counts,
// and conversation search totals that still count a message that is gone.
func pgTraces(t *testing.T, p *Postgres, word string) []string {
	t.Helper()
	ctx := context.Background()
	var stems [][]byte
	for _, st := range fts.Tokens(word) {
		stems = append(stems, []byte(st))
	}
	var out []string
	for _, q := range []struct {
		name, sql string
		arg       any
	}{
		{"messages", `SELECT count(*) FROM messages WHERE strpos(text, $1) > 0`, word},
		{"summaries", `SELECT count(*) FROM summaries WHERE strpos(text, $1) > 0`, word},
		{"facts", `SELECT count(*) FROM facts WHERE strpos(content, $1) > 0 OR strpos(norm, $1) > 0`, word},
		{"message_terms", `SELECT count(*) FROM message_terms WHERE term = ANY($1)`, stems},
		{"term_stats", `SELECT count(*) FROM term_stats WHERE term = ANY($1)`, stems},
		{"conversations' search totals", `SELECT count(*) FROM conversations c WHERE $1 AND
			(search_docs, search_tokens) <> (SELECT count(*), coalesce(sum(search_len), 0) FROM messages m WHERE m.conv = c.id)`, true},
	} {
		var n int
		if err := p.pool.QueryRow(ctx, q.sql, q.arg).Scan(&n); err != nil {
			t.Fatalf("looking for traces in %s: %v", q.name, err)
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%s (%d rows)", q.name, n))
		}
	}
	return out
}
