package memory

import (
	"context"

	"github.com/recallbot/recall/pipeline"
)

// Backend is one storage implementation. Both SQLite and JSON implement it and
// pass the same conformance suite. All methods are safe for concurrent use.
// Lists are returned oldest first unless a method says otherwise; an empty
// result is a nil slice and no error.
type Backend interface {
	// Append stores messages idempotently: a message whose (conversation,
	// PlatformID) is already stored is skipped. It returns how many were new.
	// A new assistant message counts one turn toward the conversation's
	// summary trigger. Times are truncated to milliseconds.
	Append(ctx context.Context, msgs []Message) (int, error)
	// Lookup reports whether the platform message id is stored in the
	// conversation and whether an assistant message answers it.
	Lookup(ctx context.Context, key pipeline.Key, platformID string) (stored, answered bool, err error)
	// Recent returns the newest active messages, at most limit (0 = no limit)
	// and at most tokenBudget tokens in all (0 = no limit), oldest first.
	Recent(ctx context.Context, key pipeline.Key, limit, tokenBudget int) ([]Message, error)
	// Active returns every active (not yet archived) message, oldest first.
	Active(ctx context.Context, key pipeline.Key) ([]Message, error)
	// Archive moves the given active messages into a new chunk and stores s as
	// the level-1 summary of that chunk, atomically. turnsSeen is the turn
	// counter the caller read before summarizing; it is subtracted from the
	// counter so turns taken meanwhile still count. ErrConflict when any of
	// the messages is no longer active.
	Archive(ctx context.Context, key pipeline.Key, ids []int64, s Summary, turnsSeen int) (Summary, error)
	// Fold archives the given active summaries of level s.Level-1 and stores s
	// in their place, atomically. ErrConflict when any is no longer active.
	Fold(ctx context.Context, key pipeline.Key, ids []int64, s Summary) (Summary, error)
	// Summaries returns the conversation's summaries (only active ones when
	// activeOnly), ordered by id.
	Summaries(ctx context.Context, key pipeline.Key, activeOnly bool) ([]Summary, error)
	// Provenance returns the messages a summary was built from, following
	// higher levels down to their chunks. ErrNotFound for an unknown summary.
	Provenance(ctx context.Context, key pipeline.Key, summaryID int64) ([]Message, error)
	// Status counts what /summary_status shows.
	Status(ctx context.Context, key pipeline.Key) (Status, error)
	// Search ranks the conversation's messages against free text: BM25 over
	// text and sender name (porter stemming), most recent first on ties. Any
	// text is accepted; text without searchable words gives no hits.
	Search(ctx context.Context, key pipeline.Key, q Query) ([]Hit, error)
	// Around returns the given messages of the conversation with their
	// neighbours: for each id, the message itself and the conversation's
	// messages just before and just after it (by id, archived or active),
	// each once, oldest first. Ids of other conversations, or of no message,
	// bring nothing.
	Around(ctx context.Context, key pipeline.Key, ids []int64) ([]Message, error)

	// Settings returns the owner's stored settings; ok is false when none
	// were ever stored.
	Settings(ctx context.Context, owner string) (s Settings, ok bool, err error)
	// PutSettings stores settings for s.Owner.
	PutSettings(ctx context.Context, s Settings) error

	// Remember upserts a memory; a new key beyond max gives ErrMemoryCap.
	// The key must already be valid (ValidateMemoryKey).
	Remember(ctx context.Context, owner string, m UserMemory, max int) error
	// Memories lists the owner's memories ordered by key.
	Memories(ctx context.Context, owner string) ([]UserMemory, error)
	// Forget deletes a memory; false when there was none.
	Forget(ctx context.Context, owner, key string) (bool, error)
	// AddFact stores a fact, or merges it into a near-identical one (see
	// SimilarFacts); merged reports which happened.
	AddFact(ctx context.Context, owner string, f Fact) (stored Fact, merged bool, err error)
	// Facts returns the owner's facts matching free text, best first, or the
	// newest ones when text has no searchable words; at most limit (0 = 20).
	Facts(ctx context.Context, owner, text string, limit int) ([]Fact, error)
	// ForgetFact deletes one of the owner's facts by id, from the store and
	// its search index; false when the owner has no such fact.
	ForgetFact(ctx context.Context, owner string, id int64) (bool, error)

	// Purge deletes what the scope selects, and everything derived from it:
	// the search index, summaries built from purged messages, facts.
	Purge(ctx context.Context, scope PurgeScope) (PurgeReport, error)
	// Export returns an owner's data; key narrows it to one conversation.
	Export(ctx context.Context, owner string, key *pipeline.Key) (OwnerData, error)
	// Import merges exported data idempotently: importing twice changes nothing.
	Import(ctx context.Context, d OwnerData) (ImportReport, error)
	// Owners lists every owner with any data.
	Owners(ctx context.Context) ([]string, error)
	// Close releases the backend.
	Close() error
}
