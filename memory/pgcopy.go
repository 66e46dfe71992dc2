package memory

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/recallbot/recall/pipeline"
)

// Copying a data directory's store (SQLite, and the per-user JSON files)
// into PostgreSQL: `bot migrate --to postgres://…`; and back
// (pgcopy_back.go). One engine, copyJob, does both. Each owner is copied in
// one transaction through the target's import (idempotent: what is there
// already is not added twice; rows keep their ids where the target has them
// free) and then verified: the owner read back from the target must have
// the same counts and the same fingerprint as the source, less the rows the
// target refused (reported and skipped: pgcopy_refused.go). So the copy is
// resumable by owner: after an interruption, a second run skips the owners
// whose copy verifies and copies the rest. An owner is copied in one
// transaction unless a conversation of it holds more than copyPartMessages
// messages (see there): then in several, and an interruption may leave it
// in part, which the next run's verification finds and completes. The
// owner's message embeddings follow, matched to the copied messages and
// read back. The access decisions, pairing requests, token usage and
// handled message ids follow in one last transaction, merged (a row the
// target holds already is kept; usage keeps the larger count of a day). A
// per-user JSON file whose copy into PostgreSQL verified is renamed
// (JSONRetiredSuffix), not deleted: left as it was, it would go on serving
// its owner on this machine beside the database.

// CopyCounts counts what one side of a copy holds.
type CopyCounts struct {
	Owners        int `json:"owners"`
	Conversations int `json:"conversations"`
	Messages      int `json:"messages"`
	Summaries     int `json:"summaries"`
	Notes         int `json:"notes"`
	Facts         int `json:"facts"`
	Settings      int `json:"settings"`
	Access        int `json:"access_decisions"`
	Pairing       int `json:"pairing_requests"`
	Usage         int `json:"usage_days"`
	Handled       int `json:"handled_ids"`
	// Embeddings counts the vectors of messages (memory.embeddings)
	// copied with their messages; EmbeddingsLeft those whose message
	// could not be matched (embedded again by the target's worker).
	Embeddings     int `json:"embeddings"`
	EmbeddingsLeft int `json:"embeddings_left"`
}

func (c CopyCounts) add(o CopyCounts) CopyCounts {
	return CopyCounts{c.Owners + o.Owners, c.Conversations + o.Conversations, c.Messages + o.Messages, c.Summaries + o.Summaries,
		c.Notes + o.Notes, c.Facts + o.Facts, c.Settings + o.Settings, c.Access + o.Access, c.Pairing + o.Pairing, c.Usage + o.Usage, c.Handled + o.Handled,
		c.Embeddings + o.Embeddings, c.EmbeddingsLeft + o.EmbeddingsLeft}
}

// CopyReport is what a copy did: the source's counts, which were verified
// in PostgreSQL, how many owners this run copied and how many a run before
// had copied already, and the rows the target refused (left out of Source
// and of the verification; see pgcopy_refused.go).
type CopyReport struct {
	Source  CopyCounts    `json:"source"`
	Refused []CopyRefusal `json:"refused,omitempty"`
	Copied  int           `json:"owners_copied"`
	Skipped int           `json:"owners_already_there"`
	// Retired counts the per-user JSON files renamed to
	// <name>.json.copied-to-postgres once their copy verified.
	Retired int `json:"json_files_retired"`
	// Cut counts the messages over MaxMessageBytes, copied cut (CutText).
	Cut int `json:"messages_cut,omitempty"`
}

// CopyProgress is told after each owner: done of total owners, and the
// messages copied so far.
type CopyProgress func(done, total, messages int)

// CopyMismatchError says that an owner read back from the target differs
// from the source: the database held other data for it (the source's was
// merged into it; nothing was removed), or the copy lost something.
type CopyMismatchError struct {
	Owner        string
	Into         string // the target: "PostgreSQL" or "SQLite"
	Source, Dest CopyCounts
}

func (e *CopyMismatchError) Error() string {
	return fmt.Sprintf("%s differs in %s after the copy (source %+v, %s %+v): the database already held other data for it (the source's was merged in, nothing was removed)",
		e.Owner, e.Into, e.Source, e.Into, e.Dest)
}

// copyFrom is what a copy reads: the owners, each owner's data (one
// snapshot per owner) and the side tables.
type copyFrom interface {
	Owners(ctx context.Context) ([]string, error)
	Export(ctx context.Context, owner string, key *pipeline.Key) (OwnerData, error)
	readSide(ctx context.Context) (sideData, error)
	// ownerVectors are the embeddings of the owner's messages, by the
	// source's message ids.
	ownerVectors(ctx context.Context, owner string) ([]MessageVector, error)
}

// copyInto is what a copy writes to: importCopy merges (a part imported
// twice adds nothing) keeping the rows' ids where free, Export reads an owner back to verify it, and the side
// tables are merged and read back.
type copyInto interface {
	Export(ctx context.Context, owner string, key *pipeline.Key) (OwnerData, error)
	importCopy(ctx context.Context, d OwnerData, keepIDs bool) error
	// refuses says whether an import's error is the target refusing the
	// data (a row over a limit, a constraint), not a failure to reach it.
	refuses(err error) bool
	readSide(ctx context.Context) (sideData, error)
	mergeSide(ctx context.Context, d sideData) error
	PutEmbeddings(ctx context.Context, vs []MessageVector) error
	ownerVectors(ctx context.Context, owner string) ([]MessageVector, error)
}

// copyJob is one copy: the engine both directions share (copy).
type copyJob struct {
	src      copyFrom
	dst      copyInto
	into     string // the target's name in errors: "PostgreSQL", "SQLite"
	part     int    // messages of one conversation per transaction at most
	progress CopyProgress
	// ownIDs, when set, says whether an owner's ids are the store's own
	// (else, a JSON file's, numbered per file: the target numbers the rows
	// anew); unset, every owner's are.
	ownIDs func(owner string) bool
	// copied, when set, is told of each owner whose copy verified (or was
	// there already); it says whether it retired a JSON file.
	copied func(owner string) (bool, error)
}

// CopyToPostgres copies every owner of src (its SQLite database and JSON
// files) and the side tables into dst, verifying each owner (see above).
func CopyToPostgres(ctx context.Context, src *Store, dst *Postgres, progress CopyProgress) (CopyReport, error) {
	return copyToPostgres(ctx, src, dst, progress, copyPartMessages)
}

// copyToPostgres is CopyToPostgres with parts of at most part messages per
// conversation (tests make them small).
func copyToPostgres(ctx context.Context, src *Store, dst *Postgres, progress CopyProgress, part int) (CopyReport, error) {
	if err := src.Flush(ctx); err != nil {
		return CopyReport{}, fmt.Errorf("copying to PostgreSQL: writing queued messages first: %w", err)
	}
	return copyJob{src: storeSource{src}, dst: dst, into: "PostgreSQL", part: part, progress: progress,
		ownIDs: func(owner string) bool { return !src.json.Has(owner) },
		copied: func(owner string) (bool, error) {
			if !src.json.Has(owner) {
				return false, nil
			}
			// The file would go on answering for this owner on this
			// machine, beside the database: it is kept, renamed.
			return true, src.json.retire(owner)
		}}.run(ctx)
}

// storeSource reads a data directory's store for a copy: owners of SQLite
// and the JSON files, the side tables of SQLite.
type storeSource struct{ *Store }

func (s storeSource) readSide(ctx context.Context) (sideData, error) { return s.sqlite.readSide(ctx) }

// ownerVectors reads a JSON owner's vectors from beside their file.
func (s storeSource) ownerVectors(ctx context.Context, owner string) ([]MessageVector, error) {
	if !s.json.Has(owner) {
		return s.sqlite.ownerVectors(ctx, owner)
	}
	jv, err := s.json.Vectors(ctx, owner)
	if err != nil {
		return nil, err
	}
	out := make([]MessageVector, len(jv))
	for i, v := range jv {
		out[i] = MessageVector{MessageID: v.ID, Model: v.Model, Hash: v.Hash, Vec: v.Vec}
	}
	return out, nil
}

// run copies every owner, then the side tables, verifying each.
func (j copyJob) run(ctx context.Context) (CopyReport, error) {
	var rep CopyReport
	owners, err := j.src.Owners(ctx)
	if err != nil {
		return rep, fmt.Errorf("copying to %s: listing owners: %w", j.into, err)
	}
	for i, owner := range owners {
		d, err := j.src.Export(ctx, owner, nil)
		if err != nil {
			return rep, fmt.Errorf("copying %s to %s: reading it: %w", owner, j.into, err)
		}
		// Cut before the fingerprint: the target holds the cut text.
		d, cut := cutOwnerData(d)
		rep.Cut += cut
		if d.Settings != nil {
			st := *d.Settings
			st.Storage = StorageSQLite // the database (PostgreSQL offers no per-user file)
			d.Settings = &st
		}
		want, wantSum := copyFingerprint(d)
		var back OwnerData // the owner as the target holds it, once verified
		have, err := j.dst.Export(ctx, owner, nil)
		if err != nil {
			return rep, fmt.Errorf("copying %s to %s: reading what is there: %w", owner, j.into, err)
		}
		if gotC, gotSum := copyFingerprint(have); gotSum == wantSum && gotC == want {
			rep.Skipped++
			back = have
		} else {
			var refused []CopyRefusal
			for _, part := range copyParts(d, j.part) {
				err := j.importRefusing(ctx, part, copyUnits(part), j.ownIDs == nil || j.ownIDs(owner), &refused)
				if err != nil {
					rep.Refused = append(rep.Refused, refused...)
					return rep, fmt.Errorf("copying %s to %s: %w", owner, j.into, err)
				}
			}
			rep.Refused = append(rep.Refused, refused...)
			d = withoutRefused(d, refused)
			want, wantSum = copyFingerprint(d)
			back, err = j.dst.Export(ctx, owner, nil)
			if err != nil {
				return rep, fmt.Errorf("verifying %s in %s: %w", owner, j.into, err)
			}
			if gotC, gotSum := copyFingerprint(back); gotSum != wantSum || gotC != want {
				return rep, fmt.Errorf("verifying the copy: %w", &CopyMismatchError{Owner: owner, Into: j.into, Source: want, Dest: gotC})
			}
			rep.Copied++
		}
		if want.Embeddings, want.EmbeddingsLeft, err = j.copyVectors(ctx, d, back); err != nil {
			return rep, fmt.Errorf("copying the embeddings of %s to %s: %w", owner, j.into, err)
		}
		rep.Source = rep.Source.add(want)
		if j.copied != nil {
			retired, err := j.copied(owner)
			if err != nil {
				return rep, fmt.Errorf("copying %s to %s: %w", owner, j.into, err)
			}
			if retired {
				rep.Retired++
			}
		}
		if j.progress != nil {
			j.progress(i+1, len(owners), rep.Source.Messages)
		}
	}
	side, err := j.src.readSide(ctx)
	if err != nil {
		return rep, fmt.Errorf("copying to %s: reading access, usage and handled ids: %w", j.into, err)
	}
	if err := j.dst.mergeSide(ctx, side); err != nil {
		return rep, fmt.Errorf("copying access, usage and handled ids to %s: %w", j.into, err)
	}
	rep.Source.Access, rep.Source.Pairing, rep.Source.Usage, rep.Source.Handled = len(side.access), len(side.pairing), len(side.usage), len(side.handled)
	back, err := j.dst.readSide(ctx)
	if err != nil {
		return rep, fmt.Errorf("verifying the copy: reading access, usage and handled ids back: %w", err)
	}
	if err := verifySide(side, back, j.into); err != nil {
		return rep, fmt.Errorf("verifying the copy: %w", err)
	}
	return rep, nil
}

// copyPartMessages bounds the messages of one conversation in one
// transaction of a copy, so an interruption loses little and a part's
// statements stay small. (It was a workaround too: a row trigger updated the
// conversation's search totals once per message, and each update walked the
// earlier versions of that row the transaction had made, n² in all; since
// PostgreSQL migration 0008 a statement trigger updates them once per
// statement, and a part is one INSERT.)
const copyPartMessages = 2000

// copyParts splits an owner's data into imports of at most max messages
// per conversation: the first carries the settings, notes, facts and every
// summary with the first messages, the others only more messages. Import
// merges, so the parts add up to the whole (and a repeated part adds
// nothing).
func copyParts(d OwnerData, max int) []OwnerData {
	first := d
	first.Conversations = nil
	var rest []OwnerData
	for _, c := range d.Conversations {
		head := c
		if len(c.Messages) > max {
			head.Messages = c.Messages[:max]
			for i, at := 1, max; at < len(c.Messages); i, at = i+1, at+max {
				for len(rest) < i {
					rest = append(rest, OwnerData{Owner: d.Owner})
				}
				part := ConversationData{Key: c.Key, TurnsSinceSummary: c.TurnsSinceSummary, LastSummary: c.LastSummary,
					Messages: c.Messages[at:min(at+max, len(c.Messages))]}
				rest[i-1].Conversations = append(rest[i-1].Conversations, part)
			}
		}
		first.Conversations = append(first.Conversations, head)
	}
	return append([]OwnerData{first}, rest...)
}

// copyFingerprint counts an owner's data and hashes it in a form both
// stores write alike: no ids (PostgreSQL numbers rows anew), text as
// PostgreSQL can hold it (pgText), messages and summaries in a fixed order,
// a higher summary's sources by count (they are ids).
func copyFingerprint(d OwnerData) (CopyCounts, string) {
	c := CopyCounts{Owners: 1, Conversations: len(d.Conversations), Notes: len(d.Memories), Facts: len(d.Facts)}
	var lines []string
	if d.Settings != nil {
		c.Settings = 1
		lines = append(lines, fmt.Sprintf("settings\x00%v\x00%d\x00%v", d.Settings.MemoryEnabled, d.Settings.Threshold, d.Settings.FactsOff))
	}
	for _, m := range d.Memories {
		lines = append(lines, "note\x00"+pgText(m.Key)+"\x00"+pgText(m.Content)+"\x00"+pgText(m.Author))
	}
	for _, f := range d.Facts {
		lines = append(lines, "fact\x00"+pgText(f.Content)+"\x00"+f.Key)
	}
	for _, cv := range d.Conversations {
		c.Messages += len(cv.Messages)
		c.Summaries += len(cv.Summaries)
		lines = append(lines, "conv\x00"+cv.Key)
		for _, m := range cv.Messages {
			m = pgCleanMessage(m)
			lines = append(lines, strings.Join([]string{"msg", cv.Key, string(m.Role), m.SenderID, m.SenderName, m.PlatformID, m.ReplyTo,
				m.Text, strconv.FormatInt(m.Time.UnixMilli(), 10), strconv.FormatBool(m.Active), strconv.FormatInt(m.ChunkID, 10)}, "\x00"))
		}
		for _, s := range cv.Summaries {
			src := strconv.Itoa(len(s.Sources))
			if s.Level == 1 {
				src = fmt.Sprint(s.Sources)
			}
			lines = append(lines, strings.Join([]string{"sum", cv.Key, strconv.Itoa(s.Level), pgText(s.Text), strconv.FormatBool(s.Active), src,
				strconv.FormatInt(s.From.UnixMilli(), 10), strconv.FormatInt(s.To.UnixMilli(), 10)}, "\x00"))
		}
	}
	slices.Sort(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return c, hex.EncodeToString(h.Sum(nil))
}

// copyVectors copies the embeddings of an owner's messages (verified
// already: src as the source exported it, dst as the target holds it):
// each message of a conversation is the one at the same place in the
// target, where its content matches. It returns the vectors copied and
// those left (their message not matched: embedded again there).
func (j copyJob) copyVectors(ctx context.Context, src, dst OwnerData) (copied, left int, err error) {
	vs, err := j.src.ownerVectors(ctx, src.Owner)
	if err != nil || len(vs) == 0 {
		return 0, 0, err
	}
	same := func(a, b Message) bool {
		return a.Role == b.Role && pgText(a.Text) == pgText(b.Text) && a.Time.UnixMilli() == b.Time.UnixMilli() && pgText(a.PlatformID) == pgText(b.PlatformID)
	}
	target := map[string][]Message{}
	for _, c := range dst.Conversations {
		target[c.Key] = c.Messages
	}
	ids := map[int64]int64{} // source message id → target's
	for _, c := range src.Conversations {
		t := target[c.Key]
		if len(t) != len(c.Messages) {
			continue
		}
		for i, m := range c.Messages {
			if same(m, t[i]) {
				ids[m.ID] = t[i].ID
			}
		}
	}
	put := make([]MessageVector, 0, len(vs))
	for _, v := range vs {
		if id, ok := ids[v.MessageID]; ok {
			v.MessageID = id
			put = append(put, v)
		}
	}
	if err := j.dst.PutEmbeddings(ctx, put); err != nil {
		return 0, 0, err
	}
	there, err := j.dst.ownerVectors(ctx, src.Owner)
	if err != nil {
		return 0, 0, fmt.Errorf("reading them back: %w", err)
	}
	have := map[string]bool{}
	for _, v := range there {
		have[fmt.Sprint(v.MessageID, "\x00", v.Model)] = true
	}
	for _, v := range put {
		if !have[fmt.Sprint(v.MessageID, "\x00", v.Model)] {
			return 0, 0, fmt.Errorf("%s holds %d embeddings of %s, %d were copied", j.into, len(there), src.Owner, len(put))
		}
	}
	return len(put), len(vs) - len(put), nil
}

// ownerVectorsSQL reads the embeddings of an owner's messages (both
// databases read $1).
const ownerVectorsSQL = `SELECT e.seq, e.message_id, e.model, e.hash, v.vec FROM message_embeddings e
JOIN embedding_vectors v ON v.model = e.model AND v.hash = e.hash
JOIN messages m ON m.id = e.message_id JOIN conversations c ON c.id = m.conv WHERE c.owner = $1`

func (s *SQLite) ownerVectors(ctx context.Context, owner string) ([]MessageVector, error) {
	rows, err := s.r.QueryContext(ctx, ownerVectorsSQL, owner)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanVectors(rows)
}

func (p *Postgres) ownerVectors(ctx context.Context, owner string) ([]MessageVector, error) {
	rows, err := p.pool.Query(ctx, ownerVectorsSQL, owner)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanVectors(rows)
}

// sideData is the Store's own tables (access.go, usage.go, handled.go).
type sideData struct {
	access  [][]any // user_id, allowed, decided_by, updated_at
	pairing [][]any // user_id, code, name, chat_key, created_at, expires_at
	usage   [][]any // user_id, day, tokens
	handled [][]any // conv_key, platform_id, at
}

// tables are the side tables as both databases name them: the query
// that reads one (the same SQL on both) and the row it scans into.
func (d *sideData) tables() []sideTable {
	return []sideTable{
		{&d.access, `SELECT user_id, allowed, decided_by, updated_at FROM access`, func() []any { return []any{new(string), new(bool), new(string), new(int64)} }},
		{&d.pairing, `SELECT user_id, code, name, chat_key, created_at, expires_at FROM pairing`, func() []any {
			return []any{new(string), new(string), new(string), new(string), new(int64), new(int64)}
		}},
		{&d.usage, `SELECT user_id, day, tokens FROM usage`, func() []any { return []any{new(string), new(string), new(int64)} }},
		{&d.handled, `SELECT conv_key, platform_id, at FROM handled`, func() []any { return []any{new(string), new(string), new(int64)} }},
	}
}

type sideTable struct {
	into *[][]any
	sql  string
	new  func() []any
}

// add appends a scanned row (its pointers) as values, text as PostgreSQL
// can hold it (pgText).
func (t sideTable) add(ptrs []any) {
	row := make([]any, len(ptrs))
	for i, p := range ptrs {
		switch p := p.(type) {
		case *string:
			row[i] = pgText(*p)
		case *bool:
			row[i] = *p
		case *int64:
			row[i] = *p
		}
	}
	*t.into = append(*t.into, row)
}

// scan adds the rows of t.sql read by either database (add).
func (t sideTable) scan(rs rowReader) error {
	for rs.Next() {
		ptrs := t.new()
		if err := rs.Scan(ptrs...); err != nil {
			return err
		}
		t.add(ptrs)
	}
	return rs.Err()
}

func (s *SQLite) readSide(ctx context.Context) (sideData, error) {
	var d sideData
	for _, t := range d.tables() {
		rows, err := s.r.QueryContext(ctx, t.sql)
		if err != nil {
			return d, err
		}
		err = t.scan(rows)
		rows.Close()
		if err != nil {
			return d, err
		}
	}
	return d, nil
}

func (p *Postgres) readSide(ctx context.Context) (sideData, error) {
	var d sideData
	for _, t := range d.tables() {
		rows, err := p.pool.Query(ctx, t.sql)
		if err != nil {
			return d, err
		}
		err = t.scan(rows)
		rows.Close()
		if err != nil {
			return d, err
		}
	}
	return d, nil
}

// The side tables' merge: a row the target holds already wins (a decision
// taken there is newer than the source's), but a day's usage keeps the
// larger count.
const (
	pgMergeAccess = `INSERT INTO access(user_id, allowed, decided_by, updated_at) VALUES ($1, $2, $3, $4) ON CONFLICT (user_id) DO NOTHING`
	pgMergePair   = `INSERT INTO pairing(user_id, code, name, chat_key, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (user_id) DO NOTHING`
	pgMergeUsage  = `INSERT INTO usage(user_id, day, tokens) VALUES ($1, $2, $3)
		ON CONFLICT (user_id, day) DO UPDATE SET tokens = greatest(usage.tokens, excluded.tokens)`
	pgMergeHandled = `INSERT INTO handled(conv_key, platform_id, at) VALUES ($1, $2, $3) ON CONFLICT (conv_key, platform_id) DO NOTHING`

	sqlMergeAccess = `INSERT INTO access(user_id, allowed, decided_by, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (user_id) DO NOTHING`
	sqlMergePair   = `INSERT INTO pairing(user_id, code, name, chat_key, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (user_id) DO NOTHING`
	sqlMergeUsage  = `INSERT INTO usage(user_id, day, tokens) VALUES (?, ?, ?)
		ON CONFLICT (user_id, day) DO UPDATE SET tokens = max(usage.tokens, excluded.tokens)`
	sqlMergeHandled = `INSERT INTO handled(conv_key, platform_id, at) VALUES (?, ?, ?) ON CONFLICT (conv_key, platform_id) DO NOTHING`
)

func (p *Postgres) mergeSide(ctx context.Context, d sideData) error {
	return p.tx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, t := range []struct {
			sql  string
			rows [][]any
		}{{pgMergeAccess, d.access}, {pgMergePair, d.pairing}, {pgMergeUsage, d.usage}, {pgMergeHandled, d.handled}} {
			for _, r := range t.rows {
				b.Queue(t.sql, r...)
			}
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

func (s *SQLite) mergeSide(ctx context.Context, d sideData) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		for _, t := range []struct {
			sql  string
			rows [][]any
		}{{sqlMergeAccess, d.access}, {sqlMergePair, d.pairing}, {sqlMergeUsage, d.usage}, {sqlMergeHandled, d.handled}} {
			for _, r := range t.rows {
				if _, err := tx.ExecContext(ctx, t.sql, r...); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// verifySide checks that every side row of the source has its key in the
// target read back (and a day's usage at least the source's tokens).
func verifySide(src, got sideData, into string) error {
	for _, t := range []struct {
		name      string
		src, got  [][]any
		keyFields int
	}{
		{"access decisions", src.access, got.access, 1},
		{"pairing requests", src.pairing, got.pairing, 1},
		{"usage days", src.usage, got.usage, 2},
		{"handled ids", src.handled, got.handled, 2},
	} {
		key := func(r []any) string {
			k := fmt.Sprint(r[0])
			if t.keyFields == 2 {
				k += "\x00" + fmt.Sprint(r[1])
			}
			return k
		}
		have := map[string][]any{}
		for _, r := range t.got {
			have[key(r)] = r
		}
		n := 0
		for _, r := range t.src {
			g, ok := have[key(r)]
			if ok && t.name == "usage days" && g[2].(int64) < r[2].(int64) {
				ok = false
			}
			if ok {
				n++
			}
		}
		if n != len(t.src) {
			return fmt.Errorf("%s holds %d of the %d %s copied", into, n, len(t.src), t.name)
		}
	}
	return nil
}

// JSONRetiredSuffix ends the name of a per-user JSON file copied into
// PostgreSQL by CopyToPostgres. Renamed back, the file serves its owner
// again (on SQLite).
const JSONRetiredSuffix = ".copied-to-postgres"

// retire renames an owner's file out of the backend's sight (see
// JSONRetiredSuffix); its cached state becomes empty.
func (j *JSON) retire(owner string) error {
	o := j.entry(owner)
	defer j.release(o)
	o.mu.Lock()
	defer o.mu.Unlock()
	path := j.Path(owner)
	if err := os.Rename(path, path+JSONRetiredSuffix); err != nil {
		return fmt.Errorf("renaming %s: %w", path, err)
	}
	o.f, o.loaded = newJSONFile(owner), true // nothing here any more
	j.sized(o, 0)
	return j.syncDir()
}
