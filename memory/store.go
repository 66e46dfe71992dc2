package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallbot/recall/pipeline"
)

// Options configure a Store.
type Options struct {
	Dir         string   // data.dir: recall.db and json/ live here
	Defaults    Settings // settings for owners who never chose (Owner ignored)
	MaxMemories int      // cap on memories per owner
	QueueSize   int      // messages the write-behind queue holds at most
	RetryBase   time.Duration
	RetryMax    time.Duration
	Logger      *slog.Logger
	// VFS names a registered SQLite VFS (github.com/ncruces/go-sqlite3/vfs)
	// to open recall.db through; "" is the operating system's. Tests use it
	// to inject storage faults.
	VFS string
	// synchronous overrides the SQLite synchronous level (sqliteDSN), for
	// tests that compare levels; "" is the store's.
	synchronous string
	// Existing opens a store that must already exist (in Dir; with
	// DatabaseURL the database holds it), to read it, possibly
	// beside the process that writes it (bot export, bot search): a
	// directory without DatabaseFile is refused with ErrNoStore (nothing is
	// created), and an interrupted move between backends is left to the
	// writer to finish.
	Existing bool
	// DatabaseURL (database.url), when set, keeps conversations, summaries,
	// notes and facts, access decisions, pairing requests, token usage and
	// handled message ids in that PostgreSQL database instead of
	// Dir/recall.db (which is still opened, and holds nothing new).
	DatabaseURL string
	// SearchMemory bounds, in bytes, the search indexes that SQLite keeps
	// in memory for conversations of 1,000 messages and more
	// (search_full.go): 0 is 16 MiB, a negative value none. An Existing
	// store keeps none (a command that reads does not wait for them).
	SearchMemory int
}

// DatabaseFile is the SQLite database's file name in the data directory.
const DatabaseFile = "recall.db"

// Store is what the rest of Recall uses: it routes each owner to its backend
// (SQLite unless the owner chose JSON), writes through the write-behind queue,
// overlays queued messages on reads, and moves owners between backends.
type Store struct {
	opts   Options
	sqlite *SQLite   // Dir/recall.db: the database unless pg is set
	pg     *Postgres // database.url: the database backend when set
	db     Backend   // the database backend: sqlite or pg
	json   *JSON
	w      *writer
	log    *slog.Logger
}

// Open opens both backends under opts.Dir, finishes any interrupted move
// between them, and starts the writer.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Dir == "" {
		opts.Dir = "data"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxMemories <= 0 {
		opts.MaxMemories = 50
	}
	if !opts.Defaults.Storage.Valid() {
		opts.Defaults.Storage = StorageSQLite
	}
	if opts.Defaults.Threshold == 0 {
		opts.Defaults.Threshold = 10
	}
	if opts.Existing && opts.DatabaseURL == "" { // on PostgreSQL the data is in the database
		if err := StoreExists(opts.Dir); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, CopyBackMarker)); err == nil {
		return nil, fmt.Errorf("%w into %s: run the same bot migrate --from again to finish it", ErrUnfinishedCopy, opts.Dir)
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory %s: %w", opts.Dir, err)
	}
	privateDir(opts.Dir, opts.Logger)
	searchMemory := opts.SearchMemory
	if opts.Existing {
		searchMemory = -1
	}
	sq, err := openSQLite(ctx, filepath.Join(opts.Dir, DatabaseFile), opts.VFS, opts.synchronous, opts.Logger, searchMemory)
	if err != nil {
		return nil, err
	}
	js, err := OpenJSON(filepath.Join(opts.Dir, "json"))
	if err != nil {
		return nil, errors.Join(err, sq.Close())
	}
	s := &Store{opts: opts, sqlite: sq, db: sq, json: js, log: opts.Logger}
	closeAll := func() { // on a failed open: the open's error is the one to report
		_ = sq.Close()
		_ = js.Close()
		if s.pg != nil {
			_ = s.pg.Close()
		}
	}
	if opts.DatabaseURL != "" {
		pg, err := OpenPostgres(ctx, opts.DatabaseURL)
		if err != nil {
			closeAll()
			return nil, err
		}
		s.pg, s.db = pg, pg
		if !opts.Existing {
			s.warnLocalData(ctx)
		}
	}
	if !opts.Existing {
		// A reader (Existing) changes nothing: it leaves the handled ids
		// to the writer, and moves alone (it would take a move the
		// writer is making for an interrupted one).
		if err := sq.pruneHandled(ctx, time.Now()); err != nil {
			closeAll()
			return nil, err
		}
		if err := sq.pruneQuestions(ctx, time.Now()); err != nil {
			closeAll()
			return nil, err
		}
		if s.pg != nil {
			if err := s.pg.pruneHandled(ctx, time.Now().Add(-handledKeep)); err != nil {
				closeAll()
				return nil, fmt.Errorf("pruning handled message ids: %w", err)
			}
		}
		if err := s.recoverMoves(ctx); err != nil {
			closeAll()
			return nil, err
		}
	}
	s.w = newWriter(writerOptions{maxMsgs: opts.QueueSize, base: opts.RetryBase, maxWait: opts.RetryMax, log: opts.Logger, routeFor: s.backendFor})
	return s, nil
}

// StoreExists returns nil when dir holds a store (its DatabaseFile), else an
// error wrapping ErrNoStore that names the directory.
func StoreExists(dir string) error {
	fi, err := os.Stat(filepath.Join(dir, DatabaseFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w in %s (no %s there): check data.dir in the configuration, or RECALL_DATA_DIR", ErrNoStore, dir, DatabaseFile)
	case err != nil:
		return fmt.Errorf("opening the data in %s: %w", dir, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w in %s (%s is not a file)", ErrNoStore, dir, DatabaseFile)
	}
	return nil
}

// backendFor routes an owner: JSON when it has a JSON file, else SQLite.
func (s *Store) backendFor(owner string) Backend {
	if s.json.Has(owner) {
		return s.json
	}
	return s.db
}

// OffersJSON reports whether an owner may choose a JSON file of their own
// (StorageJSON): not with PostgreSQL, whose conversations every replica
// shares.
func (s *Store) OffersJSON() bool { return s.pg == nil }

// ErrNoJSONStorage: per-user JSON files are not offered with PostgreSQL.
var ErrNoJSONStorage = errors.New("a separate JSON file is not available on this bot: its conversations are kept in a shared PostgreSQL database, which a file on one machine cannot be part of")

// warnLocalData logs, on PostgreSQL, what this machine still holds of an
// earlier SQLite or JSON store: it is not in the database (nothing moves it
// there yet) and is not shown to users, except JSON owners, who are still
// served from their files on this machine.
func (s *Store) warnLocalData(ctx context.Context) {
	if owners, err := s.sqlite.Owners(ctx); err == nil && len(owners) > 0 {
		s.log.Warn("database.url is set: the conversations in data.dir/recall.db are not used; `bot migrate --to` copies them into PostgreSQL (ignore this if you did)", "owners", len(owners), "file", s.sqlite.Path())
	}
	if owners, err := s.json.Owners(ctx); err == nil && len(owners) > 0 {
		s.log.Warn("database.url is set: owners with a JSON file in data.dir are still served from it, on this machine only; /summary or `bot migrate --to` moves them to the database", "owners", len(owners))
	}
}

// SQLite exposes the SQLite backend (backups, checkpoints, benchmarks).
func (s *Store) SQLite() *SQLite { return s.sqlite }

// Postgres is the PostgreSQL backend, nil unless database.url is set.
func (s *Store) Postgres() *Postgres { return s.pg }

// recoverMoves finishes a move that was interrupted. A move to JSON writes and
// verifies the JSON file before removing the SQLite copy, and a move to SQLite
// imports and verifies before removing the JSON file; so when an owner has a
// JSON file and SQLite data too, the JSON file is complete and the SQLite data
// is the stale copy.
func (s *Store) recoverMoves(ctx context.Context) error {
	if s.pg != nil {
		// Other processes may share the database: an owner's rows there
		// are never taken for a stale copy on the strength of a local file.
		return nil
	}
	owners, err := s.json.Owners(ctx)
	if err != nil {
		return fmt.Errorf("listing JSON owners: %w", err)
	}
	sqlOwners, err := s.sqlite.Owners(ctx)
	if err != nil {
		return err
	}
	inSQL := map[string]bool{}
	for _, o := range sqlOwners {
		inSQL[o] = true
	}
	for _, o := range owners {
		if !inSQL[o] {
			continue
		}
		s.log.Warn("finishing an interrupted storage move: removing the stale SQLite copy", "owner", o)
		if _, err := s.sqlite.Purge(ctx, PurgeScope{Owner: o}); err != nil {
			return fmt.Errorf("finishing the move of %s: %w", o, err)
		}
	}
	return nil
}

// Close flushes the write queue (until ctx ends) and closes the backends. The
// error names what could not be written.
func (s *Store) Close(ctx context.Context) error {
	werr := s.w.close(ctx)
	var perr error
	if s.pg != nil {
		perr = s.pg.Close()
	}
	return errors.Join(werr, s.json.Close(), s.sqlite.Close(), perr)
}

// Enqueue queues messages of one conversation for writing and returns at once;
// the disk is never waited for. ErrQueueFull when storage has been failing
// long enough to fill the queue.
func (s *Store) Enqueue(msgs ...Message) error {
	return s.w.enqueue(append([]Message(nil), msgs...), nil)
}

// Append queues messages and waits until they are committed (or ctx ends; the
// messages stay queued then).
func (s *Store) Append(ctx context.Context, msgs ...Message) error {
	done := make(chan error, 1)
	if err := s.w.enqueue(append([]Message(nil), msgs...), done); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("storing messages: %w", ctx.Err())
	}
}

// Flush waits until everything queued so far is written.
func (s *Store) Flush(ctx context.Context) error { return s.w.flush(ctx) }

// WriteStats reports the write queue's state.
func (s *Store) WriteStats() WriteStats { return s.w.stats() }

// do runs a write for an owner in queue order.
func (s *Store) do(ctx context.Context, owner string, op func(context.Context, Backend) error) error {
	return s.w.do(ctx, owner, op)
}

// Lookup reports whether a platform message is stored (or queued) in the
// conversation and whether it was answered.
func (s *Store) Lookup(ctx context.Context, key pipeline.Key, platformID string) (stored, answered bool, err error) {
	if platformID == "" {
		return false, false, nil
	}
	for _, m := range s.w.pendingFor(key) {
		if m.PlatformID == platformID {
			stored = true
		}
		if m.Role == RoleAssistant && m.ReplyTo == platformID {
			answered = true
		}
	}
	if stored && answered {
		return true, true, nil
	}
	st, an, err := s.backendFor(key.Owner()).Lookup(ctx, key, platformID)
	if err != nil || answered || an {
		return stored || st, answered || an, err
	}
	handled, err := s.Handled(ctx, key, platformID) // a command, an answer to a question
	return stored || st, handled, err
}

// Recent returns the newest active messages, queued ones included, at most
// limit messages and tokenBudget tokens (0 = no limit), oldest first.
func (s *Store) Recent(ctx context.Context, key pipeline.Key, limit, tokenBudget int) ([]Message, error) {
	stored, err := s.backendFor(key.Owner()).Recent(ctx, key, limit, tokenBudget)
	if err != nil {
		return nil, err
	}
	all := mergePending(stored, s.w.pendingFor(key))
	// Re-apply the limits from the newest end.
	used, start := 0, len(all)
	for i := len(all) - 1; i >= 0; i-- {
		if limit > 0 && len(all)-i > limit {
			break
		}
		if tokenBudget > 0 && used+all[i].Tokens > tokenBudget {
			break
		}
		used += all[i].Tokens
		start = i
	}
	return all[start:], nil
}

// mergePending appends queued messages not yet visible in stored.
func mergePending(stored, pending []Message) []Message {
	if len(pending) == 0 {
		return stored
	}
	seen := map[string]bool{}
	for _, m := range stored {
		if m.PlatformID != "" {
			seen[m.PlatformID] = true
		}
	}
	out := stored
	for _, m := range pending {
		if m.PlatformID != "" && seen[m.PlatformID] {
			continue // stored, or queued twice (accepted on arrival, then by the turn)
		}
		if m.PlatformID != "" {
			seen[m.PlatformID] = true
		}
		out = append(out, m)
	}
	return out
}

// Active returns every active message, committed ones only (summarization
// archives by id).
func (s *Store) Active(ctx context.Context, key pipeline.Key) ([]Message, error) {
	return s.backendFor(key.Owner()).Active(ctx, key)
}

// Archive: see Backend.Archive. It runs after every queued write.
func (s *Store) Archive(ctx context.Context, key pipeline.Key, ids []int64, sum Summary, turnsSeen int) (Summary, error) {
	var out Summary
	err := s.do(ctx, key.Owner(), func(ctx context.Context, b Backend) error {
		var err error
		out, err = b.Archive(ctx, key, ids, sum, turnsSeen)
		return err
	})
	return out, err
}

// Fold: see Backend.Fold.
func (s *Store) Fold(ctx context.Context, key pipeline.Key, ids []int64, sum Summary) (Summary, error) {
	var out Summary
	err := s.do(ctx, key.Owner(), func(ctx context.Context, b Backend) error {
		var err error
		out, err = b.Fold(ctx, key, ids, sum)
		return err
	})
	return out, err
}

// Summaries: see Backend.Summaries.
func (s *Store) Summaries(ctx context.Context, key pipeline.Key, activeOnly bool) ([]Summary, error) {
	return s.backendFor(key.Owner()).Summaries(ctx, key, activeOnly)
}

// Provenance: see Backend.Provenance.
func (s *Store) Provenance(ctx context.Context, key pipeline.Key, summaryID int64) ([]Message, error) {
	return s.backendFor(key.Owner()).Provenance(ctx, key, summaryID)
}

// Status counts a conversation, queued messages included.
func (s *Store) Status(ctx context.Context, key pipeline.Key) (Status, error) {
	st, err := s.backendFor(key.Owner()).Status(ctx, key)
	if err != nil {
		return st, err
	}
	for _, m := range s.w.pendingFor(key) {
		st.Total++
		st.Active++
		if m.Role == RoleAssistant {
			st.TurnsSinceSummary++
		}
	}
	return st, nil
}

// Search: see Backend.Search (committed messages).
func (s *Store) Search(ctx context.Context, key pipeline.Key, q Query) ([]Hit, error) {
	return s.backendFor(key.Owner()).Search(ctx, key, q)
}

// SearchWithin runs q, which names a time range (q.From, q.To), and the
// same query over the whole conversation: within holds q's hits, all the
// hits without the range, as two Search calls would return them. The SQLite
// backend reads its index once for both (a question naming a time cost a
// turn two searches); the others search twice.
func (s *Store) SearchWithin(ctx context.Context, key pipeline.Key, q Query) (within, all []Hit, err error) {
	b := s.backendFor(key.Owner())
	if w, ok := b.(withinSearcher); ok {
		return w.SearchWithin(ctx, key, q)
	}
	if within, err = b.Search(ctx, key, q); err != nil {
		return nil, nil, err
	}
	q.From, q.To = time.Time{}, time.Time{}
	all, err = b.Search(ctx, key, q)
	return within, all, err
}

// withinSearcher is a Backend that answers SearchWithin from one search.
type withinSearcher interface {
	SearchWithin(ctx context.Context, key pipeline.Key, q Query) (within, all []Hit, err error)
}

// Around: see Backend.Around (committed messages).
func (s *Store) Around(ctx context.Context, key pipeline.Key, ids []int64) ([]Message, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return s.backendFor(key.Owner()).Around(ctx, key, ids)
}

// Settings returns the owner's settings, or the defaults when the owner never
// chose; Storage always names where the owner's data is.
func (s *Store) Settings(ctx context.Context, owner string) (Settings, error) {
	b := s.backendFor(owner)
	st, ok, err := b.Settings(ctx, owner)
	if err != nil {
		return st, err
	}
	if !ok {
		st = s.opts.Defaults
		st.Owner = owner
		st.Created, st.Updated = time.Time{}, time.Time{}
	}
	st.Storage = StorageSQLite
	if b == Backend(s.json) {
		st.Storage = StorageJSON
	}
	return st, nil
}

// PutSettings stores settings. A change of Storage moves the owner's data
// (see Move) before the other settings are stored.
func (s *Store) PutSettings(ctx context.Context, st Settings) error {
	if st.Owner == "" {
		return errors.New("settings without an owner")
	}
	if err := ValidateThreshold(st.Threshold); err != nil {
		return err
	}
	if !st.Storage.Valid() {
		return fmt.Errorf("storage type must be sqlite or json, got %q", st.Storage)
	}
	if s.pg != nil && st.Storage == StorageJSON {
		return ErrNoJSONStorage
	}
	if err := s.Move(ctx, st.Owner, st.Storage); err != nil {
		return err
	}
	st.Updated = time.Now()
	return s.do(ctx, st.Owner, func(ctx context.Context, b Backend) error {
		old, ok, err := b.Settings(ctx, st.Owner)
		if err != nil {
			return err
		}
		if ok {
			st.Created = old.Created
		}
		return b.PutSettings(ctx, st)
	})
}

// Move moves an owner's data to the given backend: copy, verify, then remove
// the old copy. Interrupted at any point it loses nothing (see recoverMoves).
func (s *Store) Move(ctx context.Context, owner string, to Storage) error {
	return s.do(ctx, owner, func(ctx context.Context, from Backend) error {
		target := s.db
		if to == StorageJSON {
			if s.pg != nil {
				return ErrNoJSONStorage
			}
			target = s.json
		}
		if from == target {
			return nil
		}
		d, err := from.Export(ctx, owner, nil)
		if err != nil {
			return fmt.Errorf("moving %s: reading: %w", owner, err)
		}
		if d.Settings == nil {
			st := s.opts.Defaults
			st.Owner, st.Created = owner, time.Now()
			d.Settings = &st
		}
		d.Settings.Storage = to
		if to == StorageSQLite {
			// Any SQLite data of a JSON owner is a stale copy: clear it so
			// the verification compares like with like.
			if _, err := s.db.Purge(ctx, PurgeScope{Owner: owner}); err != nil {
				return fmt.Errorf("moving %s: clearing stale copy: %w", owner, err)
			}
		}
		if _, err := target.Import(ctx, d); err != nil {
			s.undoCopy(ctx, target, owner)
			return fmt.Errorf("moving %s to %s: %w", owner, to, err)
		}
		got, err := target.Export(ctx, owner, nil)
		if err != nil || ownerFingerprint(got) != ownerFingerprint(d) {
			s.undoCopy(ctx, target, owner)
			return fmt.Errorf("moving %s to %s: the copy does not match the original (%v); nothing was changed", owner, to, err)
		}
		if _, err := from.Purge(ctx, PurgeScope{Owner: owner}); err != nil {
			return fmt.Errorf("moving %s: removing the old copy: %w", owner, err)
		}
		s.log.Info("moved owner's data", "owner", owner, "to", to, "conversations", len(d.Conversations))
		return nil
	})
}

func (s *Store) undoCopy(ctx context.Context, target Backend, owner string) {
	if _, err := target.Purge(ctx, PurgeScope{Owner: owner}); err != nil {
		s.log.Error("removing a failed copy", "owner", owner, "err", err)
	}
}

// Remember validates and stores a memory (ErrBadMemoryKey, ErrMemoryCap)
// whose author is unknown (the operator's, an import's): RememberBy with
// no author.
func (s *Store) Remember(ctx context.Context, owner, key, content string) error {
	return s.RememberBy(ctx, owner, "", key, content)
}

// RememberBy validates and stores a memory (ErrBadMemoryKey, ErrMemoryCap)
// written by author (a user id such as "telegram:123456"; "" unknown). A
// note that exists is replaced, author included: who may replace whose
// note is the caller's decision (in a group, its author or a bot admin).
func (s *Store) RememberBy(ctx context.Context, owner, author, key, content string) error {
	if err := ValidateMemoryKey(key); err != nil {
		return err
	}
	content = strings.TrimSpace(content)
	if content == "" {
		return errors.New("the memory text is empty")
	}
	if n := len([]rune(content)); n > MaxMemoryContent {
		return fmt.Errorf("the memory text has %d characters; at most %d fit", n, MaxMemoryContent)
	}
	return s.do(ctx, owner, func(ctx context.Context, b Backend) error {
		return b.Remember(ctx, owner, UserMemory{Key: key, Content: content, Updated: time.Now(), Author: author}, s.opts.MaxMemories)
	})
}

// Memories lists an owner's memories by key.
func (s *Store) Memories(ctx context.Context, owner string) ([]UserMemory, error) {
	return s.backendFor(owner).Memories(ctx, owner)
}

// Forget deletes a memory; false when there was none.
func (s *Store) Forget(ctx context.Context, owner, key string) (bool, error) {
	var ok bool
	err := s.do(ctx, owner, func(ctx context.Context, b Backend) error {
		var err error
		ok, err = b.Forget(ctx, owner, key)
		return err
	})
	return ok, err
}

// AddFact: see Backend.AddFact.
func (s *Store) AddFact(ctx context.Context, owner string, f Fact) (Fact, bool, error) {
	var out Fact
	var merged bool
	err := s.do(ctx, owner, func(ctx context.Context, b Backend) error {
		var err error
		out, merged, err = b.AddFact(ctx, owner, f)
		return err
	})
	return out, merged, err
}

// Facts: see Backend.Facts.
func (s *Store) Facts(ctx context.Context, owner, text string, limit int) ([]Fact, error) {
	return s.backendFor(owner).Facts(ctx, owner, text, limit)
}

// Purge removes what the scope selects after every queued write has landed,
// then checkpoints SQLite so no copy of the text stays in the WAL.
func (s *Store) Purge(ctx context.Context, scope PurgeScope) (PurgeReport, error) {
	var rep PurgeReport
	err := s.do(ctx, scope.Owner, func(ctx context.Context, b Backend) error {
		var err error
		rep, err = b.Purge(ctx, scope)
		return err
	})
	if err != nil {
		return rep, err
	}
	if err := s.sqlite.Checkpoint(ctx); err != nil {
		s.log.Warn("checkpoint after purge", "err", err)
	}
	s.log.Info("purged", "owner", scope.Owner, "conversation", scope.Key.String(), "older_than", scope.OlderThan, "messages", rep.Messages, "summaries", rep.Summaries)
	return rep, nil
}

// Owners lists every owner in both backends.
func (s *Store) Owners(ctx context.Context) ([]string, error) {
	a, err := s.db.Owners(ctx)
	if err != nil {
		return nil, err
	}
	b, err := s.json.Owners(ctx)
	if err != nil {
		return nil, err
	}
	out := unionStrings(a, b)
	sort.Strings(out)
	return out, nil
}

// Export returns one owner's data (key narrows it to a conversation), after
// queued writes have landed.
func (s *Store) Export(ctx context.Context, owner string, key *pipeline.Key) (OwnerData, error) {
	var d OwnerData
	err := s.do(ctx, owner, func(ctx context.Context, b Backend) error {
		var err error
		d, err = b.Export(ctx, owner, key)
		return err
	})
	return d, err
}

// ExportAll returns every owner's data.
func (s *Store) ExportAll(ctx context.Context) (Export, error) {
	owners, err := s.Owners(ctx)
	if err != nil {
		return Export{}, err
	}
	e := NewExport()
	for _, o := range owners {
		d, err := s.Export(ctx, o, nil)
		if err != nil {
			return Export{}, fmt.Errorf("exporting %s: %w", o, err)
		}
		e.Owners = append(e.Owners, d)
	}
	return e, nil
}

// Import merges an export into the store, each owner into its backend
// (an owner new to this store goes where its settings say). A message over
// MaxMessageBytes is stored cut (CutText), counted in the report's Cut.
func (s *Store) Import(ctx context.Context, e Export) (ImportReport, error) {
	var total ImportReport
	for _, d := range e.Owners {
		if err := d.Validate(); err != nil {
			return total, err
		}
		err := s.do(ctx, d.Owner, func(ctx context.Context, b Backend) error {
			if d.Settings != nil && d.Settings.Storage == StorageJSON && b == Backend(s.sqlite) && s.pg == nil {
				if has, err := s.hasData(ctx, b, d.Owner); err == nil && !has {
					b = s.json
				}
			}
			if d.Settings != nil {
				cp := *d.Settings
				cp.Storage = StorageSQLite
				if b == Backend(s.json) {
					cp.Storage = StorageJSON
				}
				d.Settings = &cp
			}
			rep, err := b.Import(ctx, d)
			total = total.Add(rep)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("importing %s: %w", d.Owner, err)
		}
	}
	return total, nil
}

func (s *Store) hasData(ctx context.Context, b Backend, owner string) (bool, error) {
	d, err := b.Export(ctx, owner, nil)
	return !d.Empty(), err
}

// ApplyRetention purges, for every owner, messages older than days (calendar
// days back from now: no duration arithmetic that could wrap) and what was
// built from them. days <= 0 purges nothing.
func (s *Store) ApplyRetention(ctx context.Context, days int) (PurgeReport, error) {
	var total PurgeReport
	if days <= 0 {
		return total, nil
	}
	owners, err := s.Owners(ctx)
	if err != nil {
		return total, err
	}
	// Past a million days (2,700 years) nothing more is kept anyway; the
	// cap keeps AddDate's day arithmetic from wrapping.
	cutoff := time.Now().AddDate(0, 0, -min(days, 1_000_000))
	for _, o := range owners {
		rep, err := s.Purge(ctx, PurgeScope{Owner: o, OlderThan: cutoff})
		if err != nil {
			return total, fmt.Errorf("retention for %s: %w", o, err)
		}
		total = total.Add(rep)
	}
	return total, nil
}

// RunRetention applies retention (ApplyRetention) every interval until ctx
// ends. days 0 turns it off (it returns at once).
func (s *Store) RunRetention(ctx context.Context, days int, interval time.Duration) error {
	if days <= 0 {
		return nil
	}
	if interval <= 0 {
		interval = time.Hour
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		rep, err := s.ApplyRetention(ctx, days)
		if err != nil && ctx.Err() == nil {
			s.log.Error("retention", "err", err)
		} else if rep.Messages > 0 {
			s.log.Info("retention purged old data", "messages", rep.Messages, "summaries", rep.Summaries, "facts", rep.Facts)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Unanswered returns user messages of a channel stored since the given time
// that no assistant message answers and that were not handled otherwise
// (MarkHandled: an answer to a question, a turn that failed and told the
// user so, a message refused with a notice): messages that reached the bot
// before it stopped (or crashed) and still wait for their reply. Oldest
// first. A message older than an answered one is listed too: a turn that
// ran and ended without a reply is marked handled, so one that is not was
// never run (or was cut short by the stop).
func (s *Store) Unanswered(ctx context.Context, channel string, since time.Time) ([]Message, error) {
	if err := s.Flush(ctx); err != nil {
		return nil, err
	}
	var out []Message
	var err error
	if s.pg != nil {
		out, err = s.pg.unanswered(ctx, channel, since)
	} else {
		out, err = s.sqlite.unanswered(ctx, channel, since)
	}
	if err != nil {
		return nil, err
	}
	owners, err := s.json.Owners(ctx)
	if err != nil {
		return nil, err
	}
	for _, o := range owners {
		if !strings.HasPrefix(o, channel+":") {
			continue
		}
		d, err := s.json.Export(ctx, o, nil)
		if err != nil {
			return nil, err
		}
		for _, c := range d.Conversations {
			key, err := pipeline.ParseKey(c.Key)
			if err != nil {
				continue
			}
			answered := map[string]bool{}
			for _, m := range c.Messages {
				if m.Role == RoleAssistant && m.ReplyTo != "" {
					answered[m.ReplyTo] = true
				}
			}
			for _, m := range c.Messages {
				if m.Role != RoleUser || m.PlatformID == "" || answered[m.PlatformID] || m.Time.Before(since) {
					continue
				}
				handled, err := s.Handled(ctx, key, m.PlatformID)
				if err != nil {
					return nil, err
				}
				if !handled {
					m.Key = key
					out = append(out, m)
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

// sqlTurnsSinceSummary reads the summary trigger's stored counter.
const sqlTurnsSinceSummary = `SELECT turns_since_summary FROM conversations WHERE key = ?`

// TurnsSinceSummary is the summary trigger's counter for a conversation,
// queued replies included. Unlike Status it counts no messages, so it is
// cheap enough to ask after every reply.
func (s *Store) TurnsSinceSummary(ctx context.Context, key pipeline.Key) (int, error) {
	// The stored counter first, then the queue: a reply committed in
	// between is missed once (the trigger fires a turn later), never
	// counted twice.
	var turns int
	if b := s.backendFor(key.Owner()); b == Backend(s.pg) {
		err := s.pg.pool.QueryRow(ctx, `SELECT turns_since_summary FROM conversations WHERE key = $1`, key.String()).Scan(&turns)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return 0, err
		}
	} else if b != Backend(s.sqlite) {
		st, err := b.Status(ctx, key) // in memory for JSON owners
		if err != nil {
			return 0, err
		}
		turns = st.TurnsSinceSummary
	} else {
		err := s.sqlite.rd.QueryRowContext(ctx, sqlTurnsSinceSummary, key.String()).Scan(&turns)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, err
		}
	}
	for _, m := range s.w.pendingFor(key) {
		if m.Role == RoleAssistant {
			turns++
		}
	}
	return turns, nil
}

// privateDir makes an existing data directory that others may enter (a
// Docker volume, a directory made by hand) 0700: it holds every user's
// conversations. A directory we cannot change is logged, not an error.
func privateDir(dir string, log *slog.Logger) {
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		log.Warn("the data directory is open to other users and could not be made private", "dir", dir, "mode", fmt.Sprintf("%#o", fi.Mode().Perm()), "err", err)
		return
	}
	log.Info("made the data directory private (0700)", "dir", dir, "was", fmt.Sprintf("%#o", fi.Mode().Perm()))
}

// Database names the database that holds everything not in a JSON file:
// "PostgreSQL" with database.url, else "SQLite".
func (s *Store) Database() string {
	if s.pg != nil {
		return "PostgreSQL"
	}
	return "SQLite"
}
