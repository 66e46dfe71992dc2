package memory

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

func TestBenchScratchFTSInsert(t *testing.T) {
	if os.Getenv("SCRATCH") == "" {
		t.Skip()
	}
	ctx := context.Background()
	msgs := ingestRows(50, 20000)
	for _, mode := range []string{"perrow", "json_each", "perrow-notrigger-bulkfts", "perrow"} {
		dir := t.TempDir()
		s, err := OpenSQLite(ctx, filepath.Join(dir, "recall.db"))
		must(t, err)
		db := s.DB()
		if mode == "perrow-notrigger-bulkfts" {
			_, err := db.Exec(`DROP TRIGGER messages_ai`)
			must(t, err)
		}
		convs := map[pipeline.Key]int64{}
		for _, m := range msgs {
			if _, ok := convs[m.Key]; !ok {
				var id int64
				must(t, db.QueryRow(`INSERT INTO conversations(key, owner, created_at) VALUES (?, ?, 0) RETURNING id`, m.Key.String(), m.Key.Owner()).Scan(&id))
				convs[m.Key] = id
			}
		}
		start := time.Now()
		for off := 0; off < len(msgs); off += 1000 {
			batch := msgs[off:min(off+1000, len(msgs))]
			tx, err := db.BeginTx(ctx, nil)
			must(t, err)
			switch mode {
			case "json_each":
				type row struct {
					C  int64  `json:"c"`
					R  string `json:"r"`
					SI string `json:"si"`
					SN string `json:"sn"`
					P  string `json:"p"`
					RT string `json:"rt"`
					T  string `json:"t"`
					At int64  `json:"at"`
					Tk int    `json:"tk"`
				}
				rows := make([]row, len(batch))
				for i, m := range batch {
					rows[i] = row{convs[m.Key], string(m.Role), m.SenderID, m.SenderName, m.PlatformID, m.ReplyTo, m.Text, m.Time.UnixMilli(), estimateTokens(m.Text)}
				}
				js, _ := json.Marshal(rows)
				r, err := tx.Query(`INSERT INTO messages(conv, role, sender_id, sender_name, platform_id, reply_to, text, created_at, tokens, is_active, chunk_id)
					SELECT j.value->>'c', j.value->>'r', j.value->>'si', j.value->>'sn', j.value->>'p', j.value->>'rt', j.value->>'t', j.value->>'at', j.value->>'tk', 1, 0
					FROM json_each(?) j WHERE true ON CONFLICT DO NOTHING RETURNING id, role, conv`, string(js))
				must(t, err)
				n := 0
				for r.Next() {
					n++
				}
				r.Close()
				if n != len(batch) {
					t.Fatalf("inserted %d", n)
				}
			default:
				ins, err := tx.Prepare(`INSERT INTO messages(conv, role, sender_id, sender_name, platform_id, reply_to, text, created_at, tokens, is_active, chunk_id)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0) RETURNING id`)
				must(t, err)
				var first, last int64
				for i, m := range batch {
					var id int64
					must(t, ins.QueryRow(convs[m.Key], string(m.Role), m.SenderID, m.SenderName, m.PlatformID, m.ReplyTo, m.Text, m.Time.UnixMilli(), estimateTokens(m.Text)).Scan(&id))
					if i == 0 {
						first = id
					}
					last = id
				}
				ins.Close()
				if mode == "perrow-notrigger-bulkfts" {
					_, err := tx.Exec(`INSERT INTO messages_fts(rowid, text, sender_name, conv_tag) SELECT id, text, sender_name, conv_tag FROM messages WHERE id BETWEEN ? AND ?`, first, last)
					must(t, err)
				}
			}
			must(t, tx.Commit())
		}
		d := time.Since(start)
		var n int
		must(t, db.QueryRow(`SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'time'`).Scan(&n))
		t.Logf("%-26s %6.0f msgs/s  (fts rows matching 'time': %d)", mode, float64(len(msgs))/d.Seconds(), n)
		s.Close()
	}
}
