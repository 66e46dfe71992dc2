package memory

import (
	"cmp"
	"container/list"
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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recallbot/recall/memory/internal/fts"
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
// The owners used recently stay cached, bounded by the size of their files
// and their number (JSONCacheBytes, JSONCacheOwners): past a bound the least
// recently used go, never one in use, and are read again when next needed.
// Reads of a cached owner never touch the disk. The semantics are those of
// the SQLite backend (the conformance suite runs both), including search
// ranking (see search.go). One process owns the directory.
type JSON struct {
	dir    string
	closed atomic.Bool

	mu     sync.Mutex
	owners map[string]*jsonOwner // cached owners, and those in use
	lru    list.List             // the loaded owners, most recently used first
	cached int64                 // bytes of the loaded owners' files
	limit  int64                 // the bound on cached
	most   int                   // the bound on the number of loaded owners
	names  map[string]string     // file name → owner, for Owners

	vecVersion map[string]int64 // owner → writes of its vectors file (json_vectors.go)
}

// The bounds of the JSON owners' cache: the size of the owner files kept
// loaded (their decoded state takes a few times that in memory), and their
// number (owners without a file count too).
const (
	JSONCacheBytes  = 64 << 20
	JSONCacheOwners = 4096
)

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

// jsonOwner is one cached owner. j.mu guards name, refs, elem and size; an
// owner with refs > 0 is never dropped from the cache, so two jsonOwners of
// one owner never exist while either is in use.
type jsonOwner struct {
	name string
	refs int           // callers between entry and release
	elem *list.Element // in JSON.lru; nil until loaded
	size int64         // bytes of the file the state was read from or written to

	mu     sync.RWMutex // writers hold it across the file write
	loaded bool
	f      *jsonFile

	cacheMu  sync.Mutex
	msgDocs  map[int64]*fts.Doc  // message id → tokens (messages never change)
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
	return &JSON{dir: dir, owners: map[string]*jsonOwner{}, names: map[string]string{}, limit: JSONCacheBytes, most: JSONCacheOwners,
		vecVersion: map[string]int64{}}, nil
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
	o := j.entry(owner)
	o.mu.RLock()
	loaded, f := o.loaded, o.f
	o.mu.RUnlock()
	j.release(o)
	if loaded {
		return !f.Data.Empty()
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

// entry returns the owner's cache entry, in use until release.
func (j *JSON) entry(owner string) *jsonOwner {
	j.mu.Lock()
	defer j.mu.Unlock()
	o := j.owners[owner]
	if o == nil {
		o = &jsonOwner{name: owner}
		j.owners[owner] = o
	}
	o.refs++
	if o.elem != nil {
		j.lru.MoveToFront(o.elem)
	}
	return o
}

// release ends a use of o and drops the least recently used owners not in
// use while the cache is over its bound.
func (j *JSON) release(o *jsonOwner) {
	j.mu.Lock()
	defer j.mu.Unlock()
	o.refs--
	if o.refs == 0 && o.elem == nil {
		delete(j.owners, o.name) // never loaded (the file could not be read)
	}
	for e := j.lru.Back(); e != nil && (j.cached > j.limit || j.lru.Len() > j.most); {
		prev := e.Prev()
		if old := e.Value.(*jsonOwner); old.refs == 0 {
			j.lru.Remove(e)
			old.elem = nil
			j.cached -= old.size
			delete(j.owners, old.name)
		}
		e = prev
	}
}

// sized records that o's state now stands for a file of size bytes.
func (j *JSON) sized(o *jsonOwner, size int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.cached += size - o.size
	o.size = size
	if o.elem == nil {
		o.elem = j.lru.PushFront(o)
	} else {
		j.lru.MoveToFront(o.elem)
	}
}

// loadLocked reads the owner's file once; o.mu must be held for writing.
func (j *JSON) loadLocked(owner string, o *jsonOwner) error {
	if o.loaded {
		return nil
	}
	f, size, err := j.readFile(owner)
	if err != nil {
		return err
	}
	o.f, o.loaded = f, true
	j.sized(o, size)
	return nil
}

// snapshot returns the owner's current state for reading. The state is
// immutable: no lock is needed while reading it.
func (j *JSON) snapshot(ctx context.Context, owner string) (*jsonFile, *jsonOwner, error) {
	if err := j.check(ctx); err != nil {
		return nil, nil, err
	}
	o := j.entry(owner)
	defer j.release(o)
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
	defer j.release(o)
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
	var size int64
	if next.Data.Empty() {
		// No data left: no file. Ids start over, so cached tokens go.
		committed, err = j.removeFile(owner)
		if committed {
			next = newJSONFile(owner)
			o.resetCache()
		}
	} else {
		committed, size, err = j.writeFile(owner, next)
	}
	// Once the rename (or removal) is done the change is made, even if
	// syncing the directory then fails: memory follows the file.
	if committed {
		removed := next.messageCount() < o.f.messageCount()
		o.f = next
		j.sized(o, size)
		if removed { // their vectors go too (json_vectors.go)
			err = errors.Join(err, j.pruneVectorsLocked(owner, next))
		}
	}
	return err
}

func (f *jsonFile) messageCount() int {
	n := 0
	for _, c := range f.Data.Conversations {
		n += len(c.Messages)
	}
	return n
}

func (o *jsonOwner) resetCache() {
	o.cacheMu.Lock()
	o.msgDocs, o.factDocs = nil, nil
	o.cacheMu.Unlock()
}

// readFile reads the owner's file and says its size (no file: an empty
// owner, size 0).
func (j *JSON) readFile(owner string) (*jsonFile, int64, error) {
	path := j.Path(owner)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newJSONFile(owner), 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", path, err)
	}
	var f jsonFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", path, err)
	}
	if f.Format != jsonFileFormat || f.Version != jsonFileVersion {
		return nil, 0, fmt.Errorf("reading %s: format %q version %d, want %q version %d", path, f.Format, f.Version, jsonFileFormat, jsonFileVersion)
	}
	if f.Data.Owner != owner {
		return nil, 0, fmt.Errorf("reading %s: the file belongs to owner %q, not %q", path, f.Data.Owner, owner)
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
			return nil, 0, fmt.Errorf("reading %s: %w", path, err)
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
	return &f, int64(len(b)), nil
}

// tempPath is where the owner's next version is written before the rename.
func (j *JSON) tempPath(owner string) string {
	return filepath.Join(j.dir, "."+JSONFileName(owner)+".tmp")
}

// writeFile replaces the owner's file: a temporary file in the same
// directory, written, fsynced and renamed over the target, then the
// directory fsynced. committed reports whether the rename happened; size is
// the file's.
func (j *JSON) writeFile(owner string, f *jsonFile) (committed bool, size int64, err error) {
	path, tmp := j.Path(owner), j.tempPath(owner)
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return false, 0, fmt.Errorf("encoding %s: %w", path, err)
	}
	b = append(b, '\n')
	fh, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return false, 0, fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil && !committed {
			fh.Close()
			os.Remove(tmp)
		}
	}()
	if err = fh.Chmod(0o600); err != nil {
		return false, 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err = fh.Write(b); err != nil {
		return false, 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if err = fh.Sync(); err != nil {
		return false, 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if err = fh.Close(); err != nil {
		return false, 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return false, 0, fmt.Errorf("writing %s: %w", path, err)
	}
	j.rememberName(owner)
	return true, int64(len(b)), j.syncDir()
}

func (j *JSON) removeFile(owner string) (committed bool, err error) {
	if err := os.Remove(j.Path(owner)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("removing %s: %w", j.Path(owner), err)
	}
	return true, j.syncDir()
}

func (j *JSON) syncDir() error {
	if err := syncDir(j.dir); err != nil {
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
