package memory

import (
	"time"

	"github.com/recallbot/recall/pipeline"
)

// Role is who wrote a message.
type Role string

// Roles of stored messages.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system"
)

// Valid reports whether r is one of the known roles.
func (r Role) Valid() bool { return r == RoleUser || r == RoleAssistant || r == RoleSystem }

// Message is one stored chat message.
type Message struct {
	ID         int64        `json:"id"`                    // assigned by the backend; 0 until stored
	Key        pipeline.Key `json:"-"`                     // the conversation
	Role       Role         `json:"role"`                  // user, assistant or system
	SenderID   string       `json:"sender_id,omitempty"`   // platform user id
	SenderName string       `json:"sender_name,omitempty"` // display name
	PlatformID string       `json:"platform_id,omitempty"` // platform message id; "" is never deduplicated
	ReplyTo    string       `json:"reply_to,omitempty"`    // for replies: the platform id of the message answered
	Text       string       `json:"text"`
	Time       time.Time    `json:"time"`
	Tokens     int          `json:"tokens"`
	Active     bool         `json:"is_active"` // false once archived
	ChunkID    int64        `json:"chunk_id,omitempty"`
}

// Summary condenses a chunk of messages (level 1) or several summaries of the
// level below (level 2 and up).
type Summary struct {
	ID      int64        `json:"id"`
	Key     pipeline.Key `json:"-"`
	Level   int          `json:"level"`
	Text    string       `json:"text"`
	Active  bool         `json:"is_active"`
	Sources []int64      `json:"sources"` // chunk ids (level 1) or summary ids (level > 1)
	From    time.Time    `json:"from"`    // time range of the messages it covers
	To      time.Time    `json:"to"`
	Tokens  int          `json:"tokens"`
	Created time.Time    `json:"created"`
}

// Storage names a backend.
type Storage string

// The two backends.
const (
	StorageSQLite Storage = "sqlite"
	StorageJSON   Storage = "json"
)

// Valid reports whether s names a backend.
func (s Storage) Valid() bool { return s == StorageSQLite || s == StorageJSON }

// Settings are one owner's memory preferences (seed 002's users table). The
// owner is a user in a private chat and the group in a group.
type Settings struct {
	Owner         string    `json:"owner"`
	MemoryEnabled bool      `json:"memory_enabled"`
	Storage       Storage   `json:"storage_type"`
	Threshold     int       `json:"summary_every_n"`
	FactsOff      bool      `json:"facts_off,omitempty"` // the owner turned fact extraction off (/facts off)
	Created       time.Time `json:"created_at"`
	Updated       time.Time `json:"updated_at"`
}

// UserMemory is an explicit key → content note the user asked the bot to keep.
type UserMemory struct {
	Key     string    `json:"key"`
	Content string    `json:"content"`
	Created time.Time `json:"created_at"`
	Updated time.Time `json:"updated_at"`
	// Author is who wrote the note's current text, as access lists name
	// users ("telegram:123456"); "" when unknown (notes written before
	// notes recorded it, or written by the operator).
	Author string `json:"author,omitempty"`
}

// WrittenBy reports whether user wrote the note (an unknown author is
// nobody).
func (m UserMemory) WrittenBy(user string) bool { return m.Author != "" && m.Author == user }

// Fact is a piece of long-term knowledge extracted from a conversation.
type Fact struct {
	ID      int64     `json:"id"`
	Content string    `json:"content"`
	Key     string    `json:"conversation,omitempty"` // the conversation it came from (Key.String())
	Sources []string  `json:"sources,omitempty"`      // platform message ids it came from
	Tags    []string  `json:"tags,omitempty"`
	Created time.Time `json:"created_at"`
	Updated time.Time `json:"updated_at"`
}

// Status is what /summary_status reports for one conversation.
type Status struct {
	Total             int64       `json:"total"`
	Active            int64       `json:"active"`
	Archived          int64       `json:"archived"`
	ActiveByLevel     map[int]int `json:"active_by_level"`
	HighestLevel      int         `json:"highest_level"`
	TurnsSinceSummary int         `json:"turns_since_summary"`
	LastSummary       time.Time   `json:"last_summary"`
}

// ActiveSummaries is the number of active summaries over all levels.
func (s Status) ActiveSummaries() int {
	n := 0
	for _, c := range s.ActiveByLevel {
		n += c
	}
	return n
}

// Query asks for archived snippets relevant to free user text.
type Query struct {
	Text         string
	ArchivedOnly bool
	Limit        int     // 0 = 20
	TokenBudget  int     // 0 = unlimited; hits are added until the next would exceed it
	Exclude      []int64 // message ids already in context
	// From and To, when set, keep the messages written in [From, To) only.
	From, To time.Time
	// MaxShare, when above 0, leaves out of the query a phrase in more
	// than this share of the conversation's messages (in one the SQLite
	// search prunes, over 5,000 messages: in more than this share of its
	// window, about 1,024): a word that common tells the messages apart
	// too little to pay for reading where it is. SQLite honours it, so a
	// query of many words reads a bounded number of index entries;
	// Postgres too (over all the conversation's messages) when every
	// phrase is one word; JSON, which reads every message anyway, ranks
	// every phrase.
	MaxShare float64
	// TextOnly, when set, counts a phrase once in each message whose text
	// has it: not in the sender's name, a repeat not counted again. The
	// SQLite search then reads one index entry list per word instead of
	// two; for words that stand beside the question's at a small weight
	// (feedback's), where how often a message repeats one says little.
	// SQLite honours it; JSON and Postgres, which have every count at
	// hand, rank as usual.
	TextOnly bool
}

// inTime reports whether t is in the query's time range.
func (q Query) inTime(t time.Time) bool {
	return (q.From.IsZero() || !t.Before(q.From)) && (q.To.IsZero() || t.Before(q.To))
}

// timed reports whether the query has a time range.
func (q Query) timed() bool { return !q.From.IsZero() || !q.To.IsZero() }

// Hit is a search result.
type Hit struct {
	Message Message `json:"message"`
	Score   float64 `json:"score"` // higher is better
}

// PurgeScope selects what a purge removes.
type PurgeScope struct {
	Owner     string       // required
	Key       pipeline.Key // when set, only this conversation
	OlderThan time.Time    // when set, only messages older than this (and what was built from them)
}

// PurgeReport says what a purge removed.
type PurgeReport struct {
	Messages  int64 `json:"messages"`
	Summaries int64 `json:"summaries"`
	Facts     int64 `json:"facts"`
	Memories  int64 `json:"memories"`
}

// Add sums two reports.
func (r PurgeReport) Add(o PurgeReport) PurgeReport {
	return PurgeReport{r.Messages + o.Messages, r.Summaries + o.Summaries, r.Facts + o.Facts, r.Memories + o.Memories}
}
