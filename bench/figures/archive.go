package figures

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/recallbot/recall/bench/chattext"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// ArchiveLayout is the size of an archive fixture: a store of Total messages
// in 902 conversations, one of them (BigKey) with BigArchived archived
// messages and a 40-message active tail, one small (SmallKey: 80 archived,
// 20 active) and 900 others sharing the rest, their sizes skewed
// (exponentially distributed).
type ArchiveLayout struct {
	Name        string // the cache folder in os.TempDir(); bump its version when the content changes
	Total       int
	BigArchived int
}

// The archive fixtures.
var (
	// Archive1M is the fixture of the search figure: 100,000 archived
	// messages in a 1M-message store (about 460 MB).
	Archive1M = ArchiveLayout{Name: "recall-bench-1m-v2", Total: 1_000_000, BigArchived: 100_000}
	// Archive100k is the quick mode's: 10,000 archived in 100,000.
	Archive100k = ArchiveLayout{Name: "recall-bench-100k-v2", Total: 100_000, BigArchived: 10_000}
	// Archive1G is the start-up figure's: a database of about 1 GB.
	Archive1G = ArchiveLayout{Name: "recall-bench-1g-v2", Total: 2_300_000, BigArchived: 100_000}
)

// String describes the layout for a table: "100k archived in 1M".
func (l ArchiveLayout) String() string {
	return count(l.BigArchived) + " archived in " + count(l.Total)
}

// count writes n briefly: 1M, 2.3M, 100k, 1,234.
func count(n int) string {
	switch {
	case n >= 1_000_000 && n%100_000 == 0:
		return strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

const (
	bigTail         = 40  // active tail of the big conversation
	smallTotal      = 100 // the small conversation: 80 archived, 20 active
	smallTail       = 20
	otherConvs      = 900 // conversations sharing the rest, besides big and small
	ChunkSize       = 40  // messages per archived chunk (one level-1 summary each)
	fixtureTxRows   = 10_000
	fixtureProgress = 100_000
)

// The conversations of an archive fixture.
var (
	BigKey    = pipeline.Key{Channel: "telegram", Chat: "big"}
	SmallKey  = pipeline.Key{Channel: "telegram", Chat: "small"}
	BigPeople = []string{"Ana", "João", "Sofia", "Rui", "Helena", "Kenji"}
)

var (
	fixtureT0  = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	fixtureGap = 30 * time.Second // between consecutive messages of the whole store
)

// ArchiveFixture returns the folder of the cached archive fixture of layout
// l (recall.db, to open with memory.Open), building it first when it is
// missing: at roughly 5–10k rows/s (FTS5 indexing), the 1M store takes a few
// minutes, once per machine. progress (nil: none) hears about a build.
func ArchiveFixture(ctx context.Context, l ArchiveLayout, progress io.Writer) (string, error) {
	return cachedDB(ctx, l.Name, "the archive fixture ("+l.String()+" messages)", progress,
		func(ctx context.Context, path string) error { return buildArchive(ctx, l, path, progress) })
}

type fixtureConv struct {
	id        int64
	key       pipeline.Key
	total     int // messages
	archived  int // the first archived messages are archived in chunks of 40
	people    []string
	n         int // messages written so far
	lastUser  string
	chunkFrom time.Time
	turns     int // active assistant messages
	lastSum   time.Time
}

// fixtureConvs lays out the conversations: big, small, and 900 others whose
// sizes are skewed (exponentially distributed) around (Total-big-small)/900.
func fixtureConvs(l ArchiveLayout, r *rand.Rand) []*fixtureConv {
	convs := []*fixtureConv{
		{key: BigKey, total: l.BigArchived + bigTail, archived: l.BigArchived, people: BigPeople},
		{key: SmallKey, total: smallTotal, archived: smallTotal - smallTail, people: []string{"Marta", "Nuno"}},
	}
	rest := l.Total - convs[0].total - convs[1].total
	weights := make([]float64, otherConvs)
	sum := 0.0
	for i := range weights {
		weights[i] = r.ExpFloat64() + 0.05
		sum += weights[i]
	}
	left := rest
	channels := []string{"telegram", "telegram", "whatsapp", "console"}
	for i := range weights {
		n := max(2, int(float64(rest)*weights[i]/sum))
		if i == len(weights)-1 {
			n = left
		}
		left -= n
		people := make([]string, 1+r.IntN(4))
		for j := range people {
			people[j] = chattext.Names[r.IntN(len(chattext.Names))]
		}
		tail := min(n, 2+r.IntN(40))
		convs = append(convs, &fixtureConv{
			key:   pipeline.Key{Channel: channels[i%len(channels)], Chat: strconv.Itoa(100000 + i)},
			total: n, archived: n - tail, people: people,
		})
	}
	return convs
}

func buildArchive(ctx context.Context, l ArchiveLayout, path string, progress io.Writer) error {
	if progress == nil {
		progress = io.Discard
	}
	s, err := memory.OpenSQLite(ctx, path)
	if err != nil {
		return err
	}
	defer s.Close()
	db := s.DB()
	if _, err := db.ExecContext(ctx, `PRAGMA cache_size = -65536`); err != nil { // 64 MiB: a connection may use 256 MiB in all
		return err
	}
	r := rand.New(rand.NewPCG(1, 2))
	g := chattext.NewMessages(3)
	convs := fixtureConvs(l, r)
	// Which conversation each message of the store belongs to, in time order.
	seq := make([]uint16, 0, l.Total)
	for i, c := range convs {
		for j := 0; j < c.total; j++ {
			seq = append(seq, uint16(i))
		}
	}
	if len(seq) != l.Total {
		return fmt.Errorf("fixture layout has %d messages, want %d", len(seq), l.Total)
	}
	r.Shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	for _, c := range convs {
		if err := tx.QueryRowContext(ctx, `INSERT INTO conversations(key, owner, created_at) VALUES (?, ?, ?) RETURNING id`,
			c.key.String(), c.key.Owner(), fixtureT0.UnixMilli()).Scan(&c.id); err != nil {
			return err
		}
	}
	// Rows go in 1,000 per statement (INSERT … SELECT FROM json_each): FTS5
	// flushes its pending terms to disk at every statement savepoint, so
	// one statement per row would make a tiny index segment per row (and
	// the build three to four times slower, slowing as the index grows).
	const insMsg = `INSERT INTO messages(conv, role, sender_id, sender_name, platform_id, reply_to, text, created_at, tokens, is_active, chunk_id)
		SELECT value->>'$[0]', value->>'$[1]', value->>'$[2]', value->>'$[3]', value->>'$[4]', value->>'$[5]',
			value->>'$[6]', value->>'$[7]', value->>'$[8]', value->>'$[9]', value->>'$[10]'
		FROM json_each(?) ORDER BY key`
	const insSum = `INSERT INTO summaries(conv, level, text, is_active, sources, from_at, to_at, tokens, created_at)
		SELECT value->>'$[0]', 1, value->>'$[1]', 1, value->>'$[2]', value->>'$[3]', value->>'$[4]', value->>'$[5]', value->>'$[6]'
		FROM json_each(?) ORDER BY key`
	var ins, sum *sql.Stmt
	prepare := func() error {
		var err error
		if ins, err = tx.PrepareContext(ctx, insMsg); err != nil {
			return err
		}
		sum, err = tx.PrepareContext(ctx, insSum)
		return err
	}
	if err := prepare(); err != nil {
		return err
	}
	var msgRows, sumRows [][]any
	flush := func() error {
		if len(msgRows) > 0 {
			js, _ := json.Marshal(msgRows)
			if _, err := ins.ExecContext(ctx, string(js)); err != nil {
				return err
			}
		}
		if len(sumRows) > 0 {
			js, _ := json.Marshal(sumRows)
			if _, err := sum.ExecContext(ctx, string(js)); err != nil {
				return err
			}
		}
		msgRows, sumRows = msgRows[:0], sumRows[:0]
		return nil
	}
	start := time.Now()
	for i, ci := range seq {
		c := convs[ci]
		at := fixtureT0.Add(time.Duration(i)*fixtureGap + time.Duration(r.IntN(20000))*time.Millisecond)
		role, sender, senderID, replyTo := memory.RoleUser, "", "", ""
		pid := strconv.Itoa(i + 1)
		if c.n%2 == 0 {
			p := r.IntN(len(c.people))
			sender, senderID = c.people[p], strconv.Itoa(1000+p)
			c.lastUser = pid
		} else {
			role, replyTo = memory.RoleAssistant, c.lastUser
		}
		text := g.Message(role == memory.RoleAssistant, c.people)
		active, chunk := 1, int64(0)
		if c.n < c.archived {
			active, chunk = 0, int64(c.n/ChunkSize+1)
			if c.n%ChunkSize == 0 {
				c.chunkFrom = at
			}
		} else if role == memory.RoleAssistant {
			c.turns++
		}
		msgRows = append(msgRows, []any{c.id, string(role), senderID, sender, pid, replyTo, text,
			at.UnixMilli(), estimateTokens(text), active, chunk})
		if chunk > 0 && (c.n%ChunkSize == ChunkSize-1 || c.n == c.archived-1) {
			st := "Summary: " + g.Message(true, c.people)
			c.lastSum = at.Add(time.Minute)
			sumRows = append(sumRows, []any{c.id, st, "[" + strconv.FormatInt(chunk, 10) + "]",
				c.chunkFrom.UnixMilli(), at.UnixMilli(), estimateTokens(st), c.lastSum.UnixMilli()})
		}
		c.n++
		if (i+1)%1000 == 0 {
			if err := flush(); err != nil {
				return err
			}
		}
		if (i+1)%fixtureTxRows == 0 {
			ins.Close()
			sum.Close()
			if err := tx.Commit(); err != nil {
				return err
			}
			if tx, err = db.BeginTx(ctx, nil); err != nil {
				return err
			}
			if err := prepare(); err != nil {
				return err
			}
		}
		if (i+1)%fixtureProgress == 0 {
			el := time.Since(start)
			fmt.Fprintf(progress, "  fixture: %d/%d messages, %s, %.0f rows/s\n", i+1, l.Total,
				el.Round(time.Second), float64(i+1)/el.Seconds())
		}
	}
	if err := flush(); err != nil {
		return err
	}
	for _, c := range convs {
		last := int64(0)
		if !c.lastSum.IsZero() {
			last = c.lastSum.UnixMilli()
		}
		chunks := (c.archived + ChunkSize - 1) / ChunkSize
		if _, err := tx.ExecContext(ctx, `UPDATE conversations SET next_chunk = ?, turns_since_summary = ?, last_summary_at = ? WHERE id = ?`,
			chunks+1, c.turns, last, c.id); err != nil {
			return err
		}
	}
	ins.Close()
	sum.Close()
	if err := tx.Commit(); err != nil {
		return err
	}
	// The bot merges its index's segments when idle (memory's index
	// merger): a store it has run on for a while is merged.
	if _, err := s.MergeIndex(ctx); err != nil {
		return err
	}
	if err := s.Checkpoint(ctx); err != nil {
		return err
	}
	var n int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM messages`).Scan(&n); err != nil {
		return err
	}
	if n != int64(l.Total) {
		return fmt.Errorf("fixture: %d messages, want %d", n, l.Total)
	}
	return nil
}
