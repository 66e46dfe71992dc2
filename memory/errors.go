package memory

import "errors"

// Sentinel errors. Callers match them with errors.Is.
var (
	// ErrNotFound: the conversation, summary, memory or owner does not exist.
	ErrNotFound = errors.New("not found")
	// ErrBadMemoryKey: a memory key broke the key rules (see ValidateMemoryKey).
	ErrBadMemoryKey = errors.New("invalid memory key")
	// ErrMemoryCap: the owner already has the maximum number of memories.
	ErrMemoryCap = errors.New("too many memories")
	// ErrConflict: the messages or summaries to archive changed underneath
	// (already archived, or purged meanwhile). Nothing was written.
	ErrConflict = errors.New("archive conflict")
	// ErrClosed: the store or writer was closed.
	ErrClosed = errors.New("store closed")
	// ErrBadImport: an import document is not in the export format.
	ErrBadImport = errors.New("invalid import")
	// ErrNoStore: the data directory holds no Recall data (Options.Existing).
	ErrNoStore = errors.New("no Recall data")
)
