package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// pgCheckSearchCounts compares every conversation's search totals (BM25's
// N and N * avgdl, kept by the messages triggers) with its messages.
func pgCheckSearchCounts(t *testing.T, p *Postgres, when string) {
	t.Helper()
	rows, err := p.pool.Query(context.Background(), `SELECT c.key, c.search_docs, c.search_tokens, count(m.id), coalesce(sum(m.search_len), 0)
		FROM conversations c LEFT JOIN messages m ON m.conv = c.id GROUP BY c.id ORDER BY c.key`)
	must(t, err)
	defer rows.Close()
	for rows.Next() {
		var key string
		var docs, tokens, n, sum int64
		must(t, rows.Scan(&key, &docs, &tokens, &n, &sum))
		if docs != n || tokens != sum {
			t.Errorf("%s: %s counts %d messages of %d tokens, it holds %d of %d", when, key, docs, tokens, n, sum)
		}
	}
	must(t, rows.Err())
}

// TestPostgresSearchCountsPerStatement: the search totals stay right
// through appends (one batch over several conversations), an import, a
// copy (migrate --to), a purge of older messages, a whole-conversation
// purge and a sender's purge — and they are kept by statement triggers, not
// by one update per message (migration 0008).
func TestPostgresSearchCountsPerStatement(t *testing.T) {
	ctx := context.Background()
	p := cfOpenPostgres(t)
	var kinds []string
	rows, err := p.pool.Query(ctx, `SELECT tgname, (tgtype & 1) = 1 FROM pg_trigger WHERE tgrelid = 'messages'::regclass AND tgname LIKE 'messages_search_count%' ORDER BY tgname`)
	must(t, err)
	for rows.Next() {
		var name string
		var perRow bool
		must(t, rows.Scan(&name, &perRow))
		if perRow {
			t.Errorf("trigger %s on messages runs once per row", name)
		}
		kinds = append(kinds, name)
	}
	rows.Close()
	if len(kinds) != 2 {
		t.Errorf("search count triggers on messages: %v, want the insert and the delete statement triggers", kinds)
	}

	a, b := pipeline.Key{Channel: "telegram", Chat: "11"}, pipeline.Key{Channel: "telegram", Chat: "12"}
	var batch []Message
	for i := range 40 {
		batch = append(batch, exchange(a, i, fmt.Sprintf("question %d about the harbour lights", i), "answer")...)
		batch = append(batch, exchange(b, i, "other chat words", fmt.Sprintf("reply number %d", i))...)
	}
	if n, err := p.Append(ctx, batch); err != nil || n != 160 {
		t.Fatalf("append: %d, %v", n, err)
	}
	if n, err := p.Append(ctx, batch[:10]); err != nil || n != 5 { // the user messages are there already; the answers have no platform id
		t.Fatalf("append again: %d added, %v; want the 5 answers only", n, err)
	}
	pgCheckSearchCounts(t, p, "after appends")

	c := pipeline.Key{Channel: "whatsapp", Chat: "49@s.whatsapp.net"}
	d := OwnerData{Owner: c.Owner(), Conversations: []ConversationData{{Key: c.String()}}}
	for i := range 30 {
		d.Conversations[0].Messages = append(d.Conversations[0].Messages, exchange(c, i, "imported words "+fmt.Sprint(i), "ok")...)
	}
	_, err = p.Import(ctx, d)
	must(t, err)
	pgCheckSearchCounts(t, p, "after an import")

	src := copySource(t, t.TempDir())
	_, err = copyToPostgres(ctx, src, p, nil, 7)
	must(t, err)
	pgCheckSearchCounts(t, p, "after a copy in parts")

	_, err = p.Purge(ctx, PurgeScope{Owner: a.Owner(), OlderThan: time.Date(2026, 1, 1, 0, 20, 0, 0, time.UTC)})
	must(t, err)
	pgCheckSearchCounts(t, p, "after purging older messages")
	_, err = p.Purge(ctx, PurgeScope{Owner: b.Owner(), Key: b})
	must(t, err)
	pgCheckSearchCounts(t, p, "after purging a conversation")
	_, err = p.purgeSender(ctx, c.Owner(), "7")
	must(t, err)
	pgCheckSearchCounts(t, p, "after purging a sender")
	var left int64
	must(t, p.pool.QueryRow(ctx, `SELECT count(*) FROM messages m JOIN conversations c ON c.id = m.conv WHERE c.key = $1`, c.String()).Scan(&left))
	if left != 0 {
		t.Errorf("the sender's purge left %d messages", left)
	}
}
