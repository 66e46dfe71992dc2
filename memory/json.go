package memory

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// JSON is the file backend: one JSON document per owner in one directory
// (<data.dir>/json, 0700), for users who want their history in a file they
// can read. Each file (0600) is named JSONFileName(owner) and holds
//
//	{
//	  "format": "recall-owner",          // jsonFileFormat
//	  "version": 1,                      // jsonFileVersion
//	  "next_message_id": 43,             // the next message id to assign
//	  "next_summary_id": 7,              // the next summary id
//	  "next_fact_id": 3,                 // the next fact id
//	  "next_chunk": {"telegram:1:": 4},  // per conversation key: the next chunk id (absent = 1)
//	  "data": { … }                      // exactly one OwnerData, as in an export
//	}
//
// Ids are per owner file. A write applies the change to a copy of the
// owner's state, writes the whole document to a temporary file next to the
// target, fsyncs it, renames it over the target and fsyncs the directory;
// only once renamed does the copy replace the state in memory, so a failed
// write changes nothing. An owner left with no data at all has no file.
//
// Loaded owners stay cached; reads never touch the disk. The semantics are
// those of the SQLite backend (the conformance suite runs both), including
// search ranking (see json_search.go). One process owns the directory.
type JSON struct {
	dir    string
	closed atomic.Bool

	mu     sync.Mutex
	owners map[string]*jsonOwner
	names  map[string]string // file name → owner, for Owners
}

var _ Backend = (*JSON)(nil)

const (
	jsonFileFormat  = "recall-owner"
	jsonFileVersion = 1
)

// jsonFile is one owner's file. Once published in jsonOwner.f it is never
// modified: writers change a clone.
type jsonFile struct {
	Format        string           `json:"format"`
	Version       int              `json:"version"`
	NextMessageID int64            `json:"next_message_id"`
	NextSummaryID int64            `json:"next_summary_id"`
	NextFactID    int64            `json:"next_fact_id"`
	NextChunk     map[string]int64 `json:"next_chunk,omitempty"`
	Data          OwnerData        `json:"data"`
}

// jsonOwner is one cached owner.
type jsonOwner struct {
	mu     sync.RWMutex // writers hold it across the file write
	loaded bool
	f      *jsonFile

	cacheMu  sync.Mutex
	msgDocs  map[int64]*ftsDoc   // message id → tokens (messages never change)
	factDocs map[string][]string // fact content → tokens
}

func newJSONFile(owner string) *jsonFile {
	return &jsonFile{Format: jsonFileFormat, Version: jsonFileVersion, NextMessageID: 1, NextSummaryID: 1, NextFactID: 1,
		Data: OwnerData{Owner: owner}}
}

// OpenJSON opens (creating it 0700 if needed) the directory of owner files.
func OpenJSON(dir string) (*JSON, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating json directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("opening json directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("opening json directory: %s is not a directory", dir)
	}
	return &JSON{dir: dir, owners: map[string]*jsonOwner{}, names: map[string]string{}}, nil
}

// Dir is the directory of owner files.
func (j *JSON) Dir() string { return j.dir }

// JSONFileName is the file name of an owner's JSON file: the owner reduced
// to at most 48 characters of [a-z0-9-] (anything else becomes '-'), a '-',
// the first 16 hex digits of the owner's SHA-256 and ".json". It never
// contains a path separator or "..", and distinct owners get distinct names.
func JSONFileName(owner string) string {
	var b strings.Builder
	n := 0
	for _, r := range strings.ToLower(owner) {
		if n == 48 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
		n++
	}
	sum := sha256.Sum256([]byte(owner))
	return b.String() + "-" + hex.EncodeToString(sum[:])[:16] + ".json"
}

// Path is the owner's file (which may not exist).
func (j *JSON) Path(owner string) string { return filepath.Join(j.dir, JSONFileName(owner)) }

// Has reports whether the owner has data in this backend.
func (j *JSON) Has(owner string) bool {
	j.mu.Lock()
	o := j.owners[owner]
	j.mu.Unlock()
	if o != nil {
		o.mu.RLock()
		loaded, f := o.loaded, o.f
		o.mu.RUnlock()
		if loaded {
			return !f.Data.Empty()
		}
	}
	_, err := os.Stat(j.Path(owner))
	return err == nil
}

// Close marks the backend closed. Every change is already on disk.
func (j *JSON) Close() error {
	j.closed.Store(true)
	return nil
}

func (j *JSON) check(ctx context.Context) error {
	if j.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

func (j *JSON) entry(owner string) *jsonOwner {
	j.mu.Lock()
	defer j.mu.Unlock()
	o := j.owners[owner]
	if o == nil {
		o = &jsonOwner{}
		j.owners[owner] = o
	}
	return o
}

// loadLocked reads the owner's file once; o.mu must be held for writing.
func (j *JSON) loadLocked(owner string, o *jsonOwner) error {
	if o.loaded {
		return nil
	}
	f, err := j.readFile(owner)
	if err != nil {
		return err
	}
	o.f, o.loaded = f, true
	return nil
}

// snapshot returns the owner's current state for reading. The state is
// immutable: no lock is needed while reading it.
func (j *JSON) snapshot(ctx context.Context, owner string) (*jsonFile, *jsonOwner, error) {
	if err := j.check(ctx); err != nil {
		return nil, nil, err
	}
	o := j.entry(owner)
	o.mu.RLock()
	if o.loaded {
		f := o.f
		o.mu.RUnlock()
		return f, o, nil
	}
	o.mu.RUnlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := j.loadLocked(owner, o); err != nil {
		return nil, nil, err
	}
	return o.f, o, nil
}

// update applies fn to a copy of the owner's state and, when fn reports a
// change, writes the copy and then makes it current. On an error nothing
// changes, on disk or in memory, except when only the final fsync of the
// directory failed: the file is then replaced and memory follows it.
func (j *JSON) update(ctx context.Context, owner string, fn func(f *jsonFile) (changed bool, err error)) error {
	if err := j.check(ctx); err != nil {
		return err
	}
	o := j.entry(owner)
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := j.loadLocked(owner, o); err != nil {
		return err
	}
	next := o.f.clone()
	changed, err := fn(next)
	if err != nil || !changed {
		return err
	}
	next.Data.Owner = owner
	var committed bool
	if next.Data.Empty() {
		// No data left: no file. Ids start over, so cached tokens go.
		committed, err = j.removeFile(owner)
		if committed {
			next = newJSONFile(owner)
			o.resetCache()
		}
	} else {
		committed, err = j.writeFile(owner, next)
	}
	// Once the rename (or removal) is done the change is made, even if
	// syncing the directory then fails: memory follows the file.
	if committed {
		o.f = next
	}
	return err
}

func (o *jsonOwner) resetCache() {
	o.cacheMu.Lock()
	o.msgDocs, o.factDocs = nil, nil
	o.cacheMu.Unlock()
}

func (j *JSON) readFile(owner string) (*jsonFile, error) {
	path := j.Path(owner)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newJSONFile(owner), nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var f jsonFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if f.Format != jsonFileFormat || f.Version != jsonFileVersion {
		return nil, fmt.Errorf("reading %s: format %q version %d, want %q version %d", path, f.Format, f.Version, jsonFileFormat, jsonFileVersion)
	}
	if f.Data.Owner != owner {
		return nil, fmt.Errorf("reading %s: the file belongs to owner %q, not %q", path, f.Data.Owner, owner)
	}
	// Keep the order the code relies on and the counters ahead of what is
	// stored, whatever the file says.
	slices.SortStableFunc(f.Data.Memories, func(a, b UserMemory) int { return strings.Compare(a.Key, b.Key) })
	slices.SortStableFunc(f.Data.Facts, func(a, b Fact) int { return cmp.Compare(a.ID, b.ID) })
	for _, c := range f.Data.Conversations {
		slices.SortStableFunc(c.Messages, func(a, b Message) int { return cmp.Compare(a.ID, b.ID) })
		slices.SortStableFunc(c.Summaries, func(a, b Summary) int { return cmp.Compare(a.ID, b.ID) })
	}
	f.NextMessageID = max(f.NextMessageID, 1)
	f.NextSummaryID = max(f.NextSummaryID, 1)
	f.NextFactID = max(f.NextFactID, 1)
	for _, fc := range f.Data.Facts {
		f.NextFactID = max(f.NextFactID, fc.ID+1)
	}
	for _, c := range f.Data.Conversations {
		if _, err := pipeline.ParseKey(c.Key); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		next := f.nextChunk(c.Key)
		for _, m := range c.Messages {
			f.NextMessageID = max(f.NextMessageID, m.ID+1)
			next = max(next, m.ChunkID+1)
		}
		for _, s := range c.Summaries {
			f.NextSummaryID = max(f.NextSummaryID, s.ID+1)
			if s.Level == 1 {
				for _, ch := range s.Sources {
					next = max(next, ch+1)
				}
			}
		}
		f.setNextChunk(c.Key, next)
	}
	return &f, nil
}

// tempPath is where the owner's next version is written before the rename.
func (j *JSON) tempPath(owner string) string {
	return filepath.Join(j.dir, "."+JSONFileName(owner)+".tmp")
}

// writeFile replaces the owner's file: a temporary file in the same
// directory, written, fsynced and renamed over the target, then the
// directory fsynced. committed reports whether the rename happened.
func (j *JSON) writeFile(owner string, f *jsonFile) (committed bool, err error) {
	path, tmp := j.Path(owner), j.tempPath(owner)
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return false, fmt.Errorf("encoding %s: %w", path, err)
	}
	b = append(b, '\n')
	fh, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil && !committed {
			fh.Close()
			os.Remove(tmp)
		}
	}()
	if err = fh.Chmod(0o600); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err = fh.Write(b); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	if err = fh.Sync(); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	if err = fh.Close(); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	j.rememberName(owner)
	return true, j.syncDir()
}

func (j *JSON) removeFile(owner string) (committed bool, err error) {
	if err := os.Remove(j.Path(owner)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("removing %s: %w", j.Path(owner), err)
	}
	return true, j.syncDir()
}

func (j *JSON) syncDir() error {
	d, err := os.Open(j.dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", j.dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", j.dir, err)
	}
	return nil
}

func (j *JSON) rememberName(owner string) {
	j.mu.Lock()
	j.names[JSONFileName(owner)] = owner
	j.mu.Unlock()
}

// ---- state helpers ----

func (f *jsonFile) clone() *jsonFile {
	c := *f
	c.NextChunk = maps.Clone(f.NextChunk)
	d := f.Data
	if d.Settings != nil {
		s := *d.Settings
		d.Settings = &s
	}
	d.Memories = slices.Clone(d.Memories)
	d.Facts = slices.Clone(d.Facts)
	d.Conversations = slices.Clone(d.Conversations)
	for i := range d.Conversations {
		d.Conversations[i].Messages = slices.Clone(d.Conversations[i].Messages)
		d.Conversations[i].Summaries = slices.Clone(d.Conversations[i].Summaries)
	}
	c.Data = d
	return &c
}

func (f *jsonFile) conv(key pipeline.Key) *ConversationData {
	k := key.String()
	for i := range f.Data.Conversations {
		if f.Data.Conversations[i].Key == k {
			return &f.Data.Conversations[i]
		}
	}
	return nil
}

func (f *jsonFile) ensureConv(key pipeline.Key) (*ConversationData, error) {
	if c := f.conv(key); c != nil {
		return c, nil
	}
	if err := key.Validate(); err != nil {
		return nil, err
	}
	f.Data.Conversations = append(f.Data.Conversations, ConversationData{Key: key.String()})
	return &f.Data.Conversations[len(f.Data.Conversations)-1], nil
}

func (f *jsonFile) nextChunk(key string) int64 {
	if n, ok := f.NextChunk[key]; ok {
		return n
	}
	return 1
}

func (f *jsonFile) setNextChunk(key string, n int64) {
	if f.NextChunk == nil {
		f.NextChunk = map[string]int64{}
	}
	f.NextChunk[key] = n
}

func (f *jsonFile) insertSummary(c *ConversationData, s *Summary) {
	if s.Created.IsZero() {
		s.Created = time.Now()
	}
	s.Created = ms(s.Created)
	if s.Tokens <= 0 {
		s.Tokens = estimateTokens(s.Text)
	}
	s.ID = f.NextSummaryID
	f.NextSummaryID++
	st := *s
	st.Key = pipeline.Key{}
	st.From, st.To = ms(st.From), ms(st.To)
	st.Sources = slices.Clone(st.Sources)
	c.Summaries = append(c.Summaries, st)
}

// fromMillis is how SQLite reads back a stored millisecond time.
func fromMillis(v int64) time.Time { return time.UnixMilli(v).UTC() }

// lastSummary is how SQLite stores last_summary_at: 0 (none) unless after 1970.
func lastSummary(t time.Time) time.Time {
	if millisOrZero(t) > 0 {
		return ms(t)
	}
	return time.Time{}
}

func withKey(msgs []Message, key pipeline.Key) []Message {
	for i := range msgs {
		msgs[i].Key = key
	}
	return msgs
}

func copySummary(s Summary, key pipeline.Key) Summary {
	s.Key = key
	s.Sources = slices.Clone(s.Sources)
	return s
}

func copyFact(f Fact) Fact {
	f.Sources = slices.Clone(f.Sources)
	f.Tags = slices.Clone(f.Tags)
	return f
}

// ---- conversations ----

// Append implements Backend. Messages of several owners are written owner
// by owner (one file each); an error stops at that owner.
func (j *JSON) Append(ctx context.Context, msgs []Message) (int, error) {
	if err := j.check(ctx); err != nil {
		return 0, err
	}
	var owners []string
	byOwner := map[string][]Message{}
	for _, m := range msgs {
		if err := m.Key.Validate(); err != nil {
			return 0, err
		}
		if !m.Role.Valid() {
			return 0, fmt.Errorf("storing message in %s: invalid role %q", m.Key, m.Role)
		}
		o := m.Key.Owner()
		if _, ok := byOwner[o]; !ok {
			owners = append(owners, o)
		}
		byOwner[o] = append(byOwner[o], m)
	}
	total := 0
	for _, owner := range owners {
		var added int
		err := j.update(ctx, owner, func(f *jsonFile) (bool, error) {
			added = 0
			convs := len(f.Data.Conversations)
			platform := map[string]map[string]bool{} // conversation → platform ids
			for _, m := range byOwner[owner] {
				c, err := f.ensureConv(m.Key)
				if err != nil {
					return false, err
				}
				if m.PlatformID != "" {
					ids := platform[c.Key]
					if ids == nil {
						ids = map[string]bool{}
						for _, old := range c.Messages {
							if old.PlatformID != "" {
								ids[old.PlatformID] = true
							}
						}
						platform[c.Key] = ids
					}
					if ids[m.PlatformID] {
						continue
					}
					ids[m.PlatformID] = true
				}
				if m.Tokens <= 0 {
					m.Tokens = estimateTokens(m.Text)
				}
				if m.Time.IsZero() {
					m.Time = time.Now()
				}
				m.Time = ms(m.Time)
				m.Active = m.Active || m.ChunkID == 0
				m.ID = f.NextMessageID
				m.Key = pipeline.Key{}
				f.NextMessageID++
				c.Messages = append(c.Messages, m)
				added++
				if m.Role == RoleAssistant {
					c.TurnsSinceSummary++
				}
			}
			// A new conversation is a change even when every message was
			// a duplicate (as in SQLite, where the row stays).
			return added > 0 || len(f.Data.Conversations) != convs, nil
		})
		if err != nil {
			return total, fmt.Errorf("storing messages of %s: %w", owner, err)
		}
		total += added
	}
	return total, nil
}

// Lookup implements Backend.
func (j *JSON) Lookup(ctx context.Context, key pipeline.Key, platformID string) (bool, bool, error) {
	if platformID == "" {
		return false, false, j.check(ctx)
	}
	f, _, err := j.snapshot(ctx, key.Owner())
	if err != nil {
		return false, false, err
	}
	c := f.conv(key)
	if c == nil {
		return false, false, nil
	}
	var stored, answered bool
	for _, m := range c.Messages {
		if m.PlatformID == platformID {
			stored = true
		}
		if m.ReplyTo == platformID && m.Role == RoleAssistant {
			answered = true
		}
	}
	return stored, answered, nil
}

// Recent implements Backend.
func (j *JSON) Recent(ctx context.Context, key pipeline.Key, limit, tokenBudget int) ([]Message, error) {
	f, _, err := j.snapshot(ctx, key.Owner())
	if err != nil {
		return nil, err
	}
	c := f.conv(key)
	if c == nil {
		return nil, nil
	}
	var out []Message
	used := 0
	for i := len(c.Messages) - 1; i >= 0; i-- {
		m := c.Messages[i]
		if !m.Active {
			continue
		}
		if limit > 0 && len(out) == limit {
			break
		}
		if tokenBudget > 0 && used+m.Tokens > tokenBudget {
			break
		}
		used += m.Tokens
		out = append(out, m)
	}
	reverse(out)
	return withKey(out, key), nil
}

// Active implements Backend.
func (j *JSON) Active(ctx context.Context, key pipeline.Key) ([]Message, error) {
	f, _, err := j.snapshot(ctx, key.Owner())
	if err != nil {
		return nil, err
	}
	c := f.conv(key)
	if c == nil {
		return nil, nil
	}
	var out []Message
	for _, m := range c.Messages {
		if m.Active {
			out = append(out, m)
		}
	}
	return withKey(out, key), nil
}

// Archive implements Backend.
func (j *JSON) Archive(ctx context.Context, key pipeline.Key, ids []int64, sum Summary, turnsSeen int) (Summary, error) {
	if len(ids) == 0 {
		return Summary{}, fmt.Errorf("%w: nothing to archive", ErrConflict)
	}
	ids = uniqueIDs(ids)
	err := j.update(ctx, key.Owner(), func(f *jsonFile) (bool, error) {
		c := f.conv(key)
		if c == nil {
			return false, fmt.Errorf("archiving in %s: %w", key, ErrNotFound)
		}
		want := make(map[int64]bool, len(ids))
		for _, id := range ids {
			want[id] = true
		}
		var idx []int
		for i, m := range c.Messages {
			if want[m.ID] && m.Active {
				idx = append(idx, i)
			}
		}
		if len(idx) != len(ids) {
			return false, fmt.Errorf("%w: %d of %d messages still active in %s", ErrConflict, len(idx), len(ids), key)
		}
		chunk := f.nextChunk(c.Key)
		f.setNextChunk(c.Key, chunk+1)
		var from, to int64
		for n, i := range idx {
			m := &c.Messages[i]
			m.Active, m.ChunkID = false, chunk
			t := m.Time.UnixMilli()
			if n == 0 || t < from {
				from = t
			}
			if n == 0 || t > to {
				to = t
			}
		}
		sum.Level, sum.Sources, sum.Active = 1, []int64{chunk}, true
		sum.From, sum.To = fromMillis(from), fromMillis(to)
		f.insertSummary(c, &sum)
		c.TurnsSinceSummary = max(0, c.TurnsSinceSummary-turnsSeen)
		c.LastSummary = lastSummary(sum.Created)
		return true, nil
	})
	if err != nil {
		return Summary{}, err
	}
	sum.Key = key
	return sum, nil
}

// Fold implements Backend.
func (j *JSON) Fold(ctx context.Context, key pipeline.Key, ids []int64, sum Summary) (Summary, error) {
	if len(ids) == 0 || sum.Level < 2 {
		return Summary{}, fmt.Errorf("%w: fold needs sources and a level above 1", ErrConflict)
	}
	ids = uniqueIDs(ids)
	err := j.update(ctx, key.Owner(), func(f *jsonFile) (bool, error) {
		c := f.conv(key)
		if c == nil {
			return false, fmt.Errorf("folding in %s: %w", key, ErrNotFound)
		}
		want := make(map[int64]bool, len(ids))
		for _, id := range ids {
			want[id] = true
		}
		var idx []int
		for i, s := range c.Summaries {
			if want[s.ID] && s.Active && s.Level == sum.Level-1 {
				idx = append(idx, i)
			}
		}
		if len(idx) != len(ids) {
			return false, fmt.Errorf("%w: %d of %d level-%d summaries still active in %s", ErrConflict, len(idx), len(ids), sum.Level-1, key)
		}
		var from, to int64
		for n, i := range idx {
			s := &c.Summaries[i]
			s.Active = false
			if a := s.From.UnixMilli(); n == 0 || a < from {
				from = a
			}
			if b := s.To.UnixMilli(); n == 0 || b > to {
				to = b
			}
		}
		sum.Sources, sum.Active = ids, true
		sum.From, sum.To = fromMillis(from), fromMillis(to)
		f.insertSummary(c, &sum)
		return true, nil
	})
	if err != nil {
		return Summary{}, err
	}
	sum.Key = key
	return sum, nil
}

// Summaries implements Backend.
func (j *JSON) Summaries(ctx context.Context, key pipeline.Key, activeOnly bool) ([]Summary, error) {
	f, _, err := j.snapshot(ctx, key.Owner())
	if err != nil {
		return nil, err
	}
	c := f.conv(key)
	if c == nil {
		return nil, nil
	}
	var out []Summary
	for _, s := range c.Summaries {
		if !activeOnly || s.Active {
			out = append(out, copySummary(s, key))
		}
	}
	return out, nil
}

// Provenance implements Backend.
func (j *JSON) Provenance(ctx context.Context, key pipeline.Key, summaryID int64) ([]Message, error) {
	f, _, err := j.snapshot(ctx, key.Owner())
	if err != nil {
		return nil, err
	}
	c := f.conv(key)
	if c == nil {
		return nil, fmt.Errorf("summary %d in %s: %w", summaryID, key, ErrNotFound)
	}
	chunks, ok := chunksOf(c.Summaries, summaryID)
	if !ok {
		return nil, fmt.Errorf("summary %d in %s: %w", summaryID, key, ErrNotFound)
	}
	in := make(map[int64]bool, len(chunks))
	for _, ch := range chunks {
		in[ch] = true
	}
	var out []Message
	for _, m := range c.Messages {
		if in[m.ChunkID] {
			out = append(out, m)
		}
	}
	return withKey(out, key), nil
}

// Status implements Backend.
func (j *JSON) Status(ctx context.Context, key pipeline.Key) (Status, error) {
	st := Status{ActiveByLevel: map[int]int{}}
	f, _, err := j.snapshot(ctx, key.Owner())
	if err != nil {
		return st, err
	}
	c := f.conv(key)
	if c == nil {
		return st, nil
	}
	st.TurnsSinceSummary, st.LastSummary = c.TurnsSinceSummary, c.LastSummary
	for _, m := range c.Messages {
		st.Total++
		if m.Active {
			st.Active++
		}
	}
	st.Archived = st.Total - st.Active
	for _, s := range c.Summaries {
		if s.Active {
			st.ActiveByLevel[s.Level]++
		}
		st.HighestLevel = max(st.HighestLevel, s.Level)
	}
	return st, nil
}

// Around implements Backend.
func (j *JSON) Around(ctx context.Context, key pipeline.Key, ids []int64) ([]Message, error) {
	if len(ids) == 0 {
		return nil, j.check(ctx)
	}
	f, _, err := j.snapshot(ctx, key.Owner())
	if err != nil {
		return nil, err
	}
	c := f.conv(key)
	if c == nil {
		return nil, nil
	}
	byID := func(a, b Message) int { return cmp.Compare(a.ID, b.ID) }
	msgs := c.Messages
	if !slices.IsSortedFunc(msgs, byID) {
		msgs = slices.Clone(msgs)
		slices.SortFunc(msgs, byID)
	}
	take := make([]bool, len(msgs))
	for _, id := range ids {
		i, ok := slices.BinarySearchFunc(msgs, id, func(m Message, id int64) int { return cmp.Compare(m.ID, id) })
		if !ok {
			continue
		}
		for k := max(0, i-1); k <= min(len(msgs)-1, i+1); k++ {
			take[k] = true
		}
	}
	var out []Message
	for i, m := range msgs {
		if take[i] {
			out = append(out, m)
		}
	}
	return withKey(out, key), nil
}

// Search implements Backend.
func (j *JSON) Search(ctx context.Context, key pipeline.Key, q Query) ([]Hit, error) {
	phrases := queryPhrases(q.Text)
	if len(phrases) == 0 {
		return nil, j.check(ctx)
	}
	f, o, err := j.snapshot(ctx, key.Owner())
	if err != nil {
		return nil, err
	}
	c := f.conv(key)
	if c == nil || len(c.Messages) == 0 {
		return nil, nil
	}
	docs := o.messageDocs(c.Messages)
	scores := bm25Rank(docs, phrases, messageWeights, messageExtraTokens)
	kept := scores[:0]
	for _, s := range scores {
		if m := &c.Messages[s.doc]; (!q.ArchivedOnly || !m.Active) && q.inTime(m.Time) {
			kept = append(kept, s)
		}
	}
	sortScores(kept, func(doc int) int64 { return c.Messages[doc].ID })
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	if n := limit + len(q.Exclude); len(kept) > n {
		kept = kept[:n]
	}
	hits := make([]Hit, len(kept))
	for i, s := range kept {
		m := c.Messages[s.doc]
		m.Key = key
		hits[i] = Hit{Message: m, Score: s.score}
	}
	return BudgetHits(hits, q), nil
}

// messageDocs returns the tokens of each message, tokenizing each message
// once for the life of the cache.
func (o *jsonOwner) messageDocs(msgs []Message) []*ftsDoc {
	o.cacheMu.Lock()
	defer o.cacheMu.Unlock()
	if o.msgDocs == nil {
		o.msgDocs = map[int64]*ftsDoc{}
	}
	docs := make([]*ftsDoc, len(msgs))
	for i, m := range msgs {
		d := o.msgDocs[m.ID]
		if d == nil {
			d = &ftsDoc{cols: [][]string{ftsTokens(m.Text), ftsTokens(m.SenderName)}}
			o.msgDocs[m.ID] = d
		}
		docs[i] = d
	}
	return docs
}

func (o *jsonOwner) factTokens(facts []Fact) []*ftsDoc {
	o.cacheMu.Lock()
	defer o.cacheMu.Unlock()
	if o.factDocs == nil {
		o.factDocs = map[string][]string{}
	}
	docs := make([]*ftsDoc, len(facts))
	for i, f := range facts {
		toks, ok := o.factDocs[f.Content]
		if !ok {
			toks = ftsTokens(f.Content)
			o.factDocs[f.Content] = toks
		}
		docs[i] = &ftsDoc{cols: [][]string{toks}}
	}
	return docs
}

// ---- settings, memories, facts ----

// Settings implements Backend.
func (j *JSON) Settings(ctx context.Context, owner string) (Settings, bool, error) {
	f, _, err := j.snapshot(ctx, owner)
	if err != nil {
		return Settings{Owner: owner}, false, err
	}
	if f.Data.Settings == nil {
		return Settings{Owner: owner}, false, nil
	}
	st := *f.Data.Settings
	st.Owner = owner
	return st, true, nil
}

// PutSettings implements Backend.
func (j *JSON) PutSettings(ctx context.Context, st Settings) error {
	return j.update(ctx, st.Owner, func(f *jsonFile) (bool, error) {
		f.putSettings(st)
		return true, nil
	})
}

func (f *jsonFile) putSettings(st Settings) {
	now := time.Now()
	if st.Created.IsZero() {
		st.Created = now
	}
	if st.Updated.IsZero() {
		st.Updated = now
	}
	st.Created, st.Updated = ms(st.Created), ms(st.Updated)
	if old := f.Data.Settings; old != nil {
		st.Created = old.Created // as SQLite's upsert: created_at stays
	}
	f.Data.Settings = &st
}

// Remember implements Backend.
func (j *JSON) Remember(ctx context.Context, owner string, m UserMemory, max int) error {
	return j.update(ctx, owner, func(f *jsonFile) (bool, error) {
		_, err := f.remember(m, max)
		return err == nil, err
	})
}

func (f *jsonFile) remember(m UserMemory, max int) (added bool, err error) {
	i, exists := slices.BinarySearchFunc(f.Data.Memories, m.Key, func(a UserMemory, k string) int { return strings.Compare(a.Key, k) })
	if !exists && max > 0 && len(f.Data.Memories) >= max {
		return false, fmt.Errorf("%w: at most %d", ErrMemoryCap, max)
	}
	now := time.Now()
	if m.Created.IsZero() {
		m.Created = now
	}
	if m.Updated.IsZero() {
		m.Updated = now
	}
	m.Created, m.Updated = ms(m.Created), ms(m.Updated)
	if exists {
		old := &f.Data.Memories[i]
		old.Content, old.Updated = m.Content, m.Updated
		return false, nil
	}
	f.Data.Memories = slices.Insert(f.Data.Memories, i, m)
	return true, nil
}

// Memories implements Backend.
func (j *JSON) Memories(ctx context.Context, owner string) ([]UserMemory, error) {
	f, _, err := j.snapshot(ctx, owner)
	if err != nil {
		return nil, err
	}
	if len(f.Data.Memories) == 0 {
		return nil, nil
	}
	return slices.Clone(f.Data.Memories), nil
}

// Forget implements Backend.
func (j *JSON) Forget(ctx context.Context, owner, key string) (bool, error) {
	var found bool
	err := j.update(ctx, owner, func(f *jsonFile) (bool, error) {
		found = false
		i := slices.IndexFunc(f.Data.Memories, func(m UserMemory) bool { return m.Key == key })
		if i < 0 {
			return false, nil
		}
		found = true
		f.Data.Memories = slices.Delete(f.Data.Memories, i, i+1)
		return true, nil
	})
	return found, err
}

// AddFact implements Backend.
func (j *JSON) AddFact(ctx context.Context, owner string, fact Fact) (Fact, bool, error) {
	var out Fact
	var merged bool
	err := j.update(ctx, owner, func(f *jsonFile) (bool, error) {
		out, merged = f.addFact(fact)
		return true, nil
	})
	if err != nil {
		return fact, false, err
	}
	return copyFact(out), merged, nil
}

func (f *jsonFile) addFact(fact Fact) (Fact, bool) {
	now := time.Now()
	if fact.Created.IsZero() {
		fact.Created = now
	}
	if fact.Updated.IsZero() {
		fact.Updated = fact.Created
	}
	fact.Created, fact.Updated = ms(fact.Created), ms(fact.Updated)
	for i, old := range f.Data.Facts {
		if SimilarFacts(old.Content, fact.Content) {
			m := mergeFact(old, fact)
			f.Data.Facts[i] = m
			return m, true
		}
	}
	fact.ID = f.NextFactID
	f.NextFactID++
	fact.Sources, fact.Tags = slices.Clone(fact.Sources), slices.Clone(fact.Tags)
	f.Data.Facts = append(f.Data.Facts, fact)
	return fact, false
}

// Facts implements Backend.
func (j *JSON) Facts(ctx context.Context, owner, text string, limit int) ([]Fact, error) {
	if limit <= 0 {
		limit = 20
	}
	f, o, err := j.snapshot(ctx, owner)
	if err != nil {
		return nil, err
	}
	facts := f.Data.Facts
	var out []Fact
	if phrases := queryPhrases(text); len(phrases) > 0 {
		scores := bm25Rank(o.factTokens(facts), phrases, nil, 0)
		sortScores(scores, func(doc int) int64 { return facts[doc].ID })
		for _, s := range scores {
			if len(out) == limit {
				break
			}
			out = append(out, copyFact(facts[s.doc]))
		}
		return out, nil
	}
	order := make([]int, len(facts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		fa, fb := facts[order[a]], facts[order[b]]
		if ua, ub := fa.Updated.UnixMilli(), fb.Updated.UnixMilli(); ua != ub {
			return ua > ub
		}
		return fa.ID > fb.ID
	})
	for _, i := range order {
		if len(out) == limit {
			break
		}
		out = append(out, copyFact(facts[i]))
	}
	return out, nil
}

// ---- purge, export, import ----

// Purge implements Backend, with the rules of the SQLite backend (see
// planPurge): summaries that reach into the purged period are deleted with
// everything built on them, and what they covered that survives comes back
// into play.
func (j *JSON) Purge(ctx context.Context, scope PurgeScope) (PurgeReport, error) {
	var rep PurgeReport
	if scope.Owner == "" {
		return rep, fmt.Errorf("purge: owner is required")
	}
	var only *pipeline.Key
	if !scope.Key.IsZero() {
		only = &scope.Key
	}
	all := scope.OlderThan.IsZero()
	cutoff := scope.OlderThan.UnixMilli()
	var o *jsonOwner
	err := j.update(ctx, scope.Owner, func(f *jsonFile) (bool, error) {
		rep = PurgeReport{}
		changed := false
		var convs []ConversationData
		for _, c := range f.Data.Conversations {
			if only != nil && c.Key != only.String() {
				convs = append(convs, c)
				continue
			}
			plan := planPurge(c.Summaries, all, scope.OlderThan)
			if len(plan.reactivateChunks) > 0 || len(plan.reactivateSummaries) > 0 {
				changed = true
			}
			if all {
				changed = true
				rep.Messages += int64(len(c.Messages))
				rep.Summaries += int64(len(c.Summaries))
				delete(f.NextChunk, c.Key)
				continue // the conversation goes
			}
			var msgs []Message
			for _, m := range c.Messages {
				if m.Time.UnixMilli() < cutoff {
					rep.Messages++
				} else {
					msgs = append(msgs, m)
				}
			}
			doomed := idSet(plan.deleteSummaries)
			back := idSet(plan.reactivateSummaries)
			var sums []Summary
			for _, s := range c.Summaries {
				if doomed[s.ID] {
					rep.Summaries++
					continue
				}
				if back[s.ID] {
					s.Active = true
				}
				sums = append(sums, s)
			}
			chunks := idSet(plan.reactivateChunks)
			for i := range msgs {
				if chunks[msgs[i].ChunkID] {
					msgs[i].Active, msgs[i].ChunkID = true, 0
				}
			}
			c.Messages, c.Summaries = msgs, sums
			convs = append(convs, c)
		}
		f.Data.Conversations = convs
		var facts []Fact
		for _, fc := range f.Data.Facts {
			var gone bool
			switch {
			case only != nil && all:
				gone = fc.Key == only.String()
			case only != nil:
				gone = fc.Key == only.String() && fc.Created.UnixMilli() < cutoff
			case all:
				gone = true
			default:
				gone = fc.Created.UnixMilli() < cutoff
			}
			if gone {
				rep.Facts++
			} else {
				facts = append(facts, fc)
			}
		}
		f.Data.Facts = facts
		if only == nil && all {
			rep.Memories = int64(len(f.Data.Memories))
			if f.Data.Settings != nil || len(f.Data.Memories) > 0 {
				changed = true
			}
			f.Data.Memories, f.Data.Settings = nil, nil
		}
		return changed || rep != PurgeReport{}, nil
	})
	if err != nil {
		return PurgeReport{}, err
	}
	j.mu.Lock()
	o = j.owners[scope.Owner]
	j.mu.Unlock()
	if o != nil && rep != (PurgeReport{}) {
		o.resetCache() // purged text leaves the search cache too
	}
	return rep, nil
}

func idSet(ids []int64) map[int64]bool {
	m := make(map[int64]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// Export implements Backend.
func (j *JSON) Export(ctx context.Context, owner string, key *pipeline.Key) (OwnerData, error) {
	d := OwnerData{Owner: owner}
	f, _, err := j.snapshot(ctx, owner)
	if err != nil {
		return d, err
	}
	if key == nil {
		if f.Data.Settings != nil {
			st := *f.Data.Settings
			st.Owner = owner
			d.Settings = &st
		}
		if len(f.Data.Memories) > 0 {
			d.Memories = slices.Clone(f.Data.Memories)
		}
	}
	for _, fc := range f.Data.Facts {
		if key == nil || fc.Key == key.String() {
			d.Facts = append(d.Facts, copyFact(fc))
		}
	}
	for _, c := range f.Data.Conversations {
		if key != nil && c.Key != key.String() {
			continue
		}
		k, err := pipeline.ParseKey(c.Key)
		if err != nil {
			return d, err
		}
		cd := ConversationData{Key: c.Key, TurnsSinceSummary: c.TurnsSinceSummary, LastSummary: c.LastSummary}
		if len(c.Messages) > 0 {
			cd.Messages = withKey(slices.Clone(c.Messages), k)
		}
		for _, s := range c.Summaries {
			cd.Summaries = append(cd.Summaries, copySummary(s, k))
		}
		d.Conversations = append(d.Conversations, cd)
	}
	return d, nil
}

// Import implements Backend, with the duplicate rules of the SQLite backend:
// a message is already there when its platform id is (or, without one, a
// message with the same role, time and text); a summary when one with the
// same level, text, creation time and sources is.
func (j *JSON) Import(ctx context.Context, d OwnerData) (ImportReport, error) {
	if err := d.Validate(); err != nil {
		return ImportReport{}, err
	}
	var rep ImportReport
	err := j.update(ctx, d.Owner, func(f *jsonFile) (bool, error) {
		rep = ImportReport{}
		if d.Settings != nil {
			st := *d.Settings
			st.Owner = d.Owner
			f.putSettings(st)
		}
		for _, m := range d.Memories {
			added, err := f.remember(m, 0)
			if err != nil {
				return false, err
			}
			if added {
				rep.Memories++
			}
		}
		for _, fc := range d.Facts {
			if _, merged := f.addFact(fc); !merged {
				rep.Facts++
			}
		}
		for _, c := range d.Conversations {
			key, _ := pipeline.ParseKey(c.Key)
			n, err := f.importConversation(key, c)
			if err != nil {
				return false, fmt.Errorf("importing %s: %w", key, err)
			}
			rep = rep.Add(n)
		}
		return true, nil
	})
	if err != nil {
		return ImportReport{}, err
	}
	return rep, nil
}

func (f *jsonFile) importConversation(key pipeline.Key, c ConversationData) (ImportReport, error) {
	var rep ImportReport
	conv, err := f.ensureConv(key)
	if err != nil {
		return rep, err
	}
	platform := map[string]bool{}
	for _, m := range conv.Messages {
		if m.PlatformID != "" {
			platform[m.PlatformID] = true
		}
	}
	var maxChunk int64
	for _, m := range c.Messages {
		if m.PlatformID == "" && slices.ContainsFunc(conv.Messages, func(o Message) bool {
			return o.PlatformID == "" && o.Role == m.Role && o.Time.UnixMilli() == m.Time.UnixMilli() && o.Text == m.Text
		}) {
			continue
		}
		if m.PlatformID == "" || !platform[m.PlatformID] {
			if m.PlatformID != "" {
				platform[m.PlatformID] = true
			}
			m.Key = pipeline.Key{}
			m.ID = f.NextMessageID
			f.NextMessageID++
			m.Time = ms(m.Time)
			m.Tokens = max(m.Tokens, 1)
			conv.Messages = append(conv.Messages, m)
			rep.Messages++
		}
		maxChunk = max(maxChunk, m.ChunkID)
	}
	existing := slices.Clone(conv.Summaries)
	idMap := map[int64]int64{}
	for _, sm := range c.Summaries {
		if id, ok := findSummary(existing, sm, idMap); ok {
			idMap[sm.ID] = id
			continue
		}
		ns := sm
		if ns.Level > 1 {
			ns.Sources = mapIDs(sm.Sources, idMap)
		}
		f.insertSummary(conv, &ns)
		idMap[sm.ID] = ns.ID
		existing = append(existing, ns)
		rep.Summaries++
		if ns.Level == 1 {
			for _, ch := range ns.Sources {
				maxChunk = max(maxChunk, ch)
			}
		}
	}
	f.setNextChunk(conv.Key, max(f.nextChunk(conv.Key), maxChunk+1))
	conv.TurnsSinceSummary = max(conv.TurnsSinceSummary, c.TurnsSinceSummary)
	if last := max(millisOrZero(conv.LastSummary), millisOrZero(c.LastSummary)); last > 0 {
		conv.LastSummary = fromMillis(last)
	} else {
		conv.LastSummary = time.Time{}
	}
	return rep, nil
}

// Owners implements Backend: every owner with a file, plus cached ones.
func (j *JSON) Owners(ctx context.Context) ([]string, error) {
	if err := j.check(ctx); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(j.dir)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", j.dir, err)
	}
	set := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		j.mu.Lock()
		owner, ok := j.names[name]
		j.mu.Unlock()
		if !ok {
			var head struct {
				Format string `json:"format"`
				Data   struct {
					Owner string `json:"owner"`
				} `json:"data"`
			}
			b, err := os.ReadFile(filepath.Join(j.dir, name))
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return nil, fmt.Errorf("listing owners: %w", err)
			}
			if json.Unmarshal(b, &head) != nil || head.Format != jsonFileFormat || JSONFileName(head.Data.Owner) != name {
				continue // not an owner file of ours
			}
			owner = head.Data.Owner
			j.mu.Lock()
			j.names[name] = owner
			j.mu.Unlock()
		}
		set[owner] = true
	}
	j.mu.Lock()
	cached := make(map[string]*jsonOwner, len(j.owners))
	maps.Copy(cached, j.owners)
	j.mu.Unlock()
	for owner, o := range cached {
		o.mu.RLock()
		if o.loaded && !o.f.Data.Empty() {
			set[owner] = true
		}
		o.mu.RUnlock()
	}
	out := slices.Collect(maps.Keys(set))
	sort.Strings(out)
	return out, nil
}
