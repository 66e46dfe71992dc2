package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/ncruces/go-sqlite3"
)

// A copy never stops at one row the target refuses (a value over one of its
// limits, a constraint): a part whose import is refused is imported again
// in halves, down to single rows, and each row still refused is left out,
// reported (CopyReport.Refused) and left out of the verification too. A
// run that resumes tries those rows again, and reports them again when
// they are refused again: it ends either way. Any other error (the
// connection, a cancelled context) stops the copy as before.

// CopyRefusal is a row of the source the target refused: the copy went on
// without it.
type CopyRefusal struct {
	Owner        string `json:"owner"`
	Conversation string `json:"conversation,omitempty"` // a message's or the summaries'
	// Kind is "message", "summaries" (a conversation's), "note", "fact"
	// or "settings".
	Kind   string `json:"kind"`
	ID     int64  `json:"id,omitempty"`  // the source's id of a message or fact
	Key    string `json:"key,omitempty"` // a note's key
	Reason string `json:"reason"`        // what the target said
}

func (r CopyRefusal) String() string {
	var what string
	switch r.Kind {
	case "message":
		what = fmt.Sprintf("message %d of %s", r.ID, r.Conversation)
	case "summaries":
		what = "the summaries of " + r.Conversation
	case "fact":
		what = fmt.Sprintf("fact %d of %s", r.ID, r.Owner)
	case "note":
		what = fmt.Sprintf("note %q of %s", r.Key, r.Owner)
	default:
		what = r.Kind + " of " + r.Owner
	}
	return what + ": " + r.Reason
}

// maxRefusalReason bounds the reason kept: the target's message, not a
// value it quotes.
const maxRefusalReason = 300

// refuses reports whether PostgreSQL refused the data itself: a data
// exception (SQLSTATE class 22), a constraint (23) or one of its limits
// (54: "index row requires … bytes, maximum size is 8191").
func (p *Postgres) refuses(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch {
	case strings.HasPrefix(pe.Code, "22"), strings.HasPrefix(pe.Code, "23"), strings.HasPrefix(pe.Code, "54"):
		return true
	}
	return false
}

// refuses reports whether SQLite refused the data itself: a value over its
// size limit, or a constraint.
func (s *SQLite) refuses(err error) bool {
	return errors.Is(err, sqlite3.TOOBIG) || errors.Is(err, sqlite3.CONSTRAINT)
}

// copyUnit is a row of an owner's data that a copy can import alone: the
// settings, a note, a fact, a conversation (its state and summaries) or one
// of its messages.
type copyUnit struct {
	kind byte // 's', 'n', 'f', 'c', 'm'
	conv int  // the conversation's index ('c', 'm')
	i    int  // the note's, fact's or message's index
}

// copyUnits lists d's rows.
func copyUnits(d OwnerData) []copyUnit {
	var us []copyUnit
	if d.Settings != nil {
		us = append(us, copyUnit{kind: 's'})
	}
	for i := range d.Memories {
		us = append(us, copyUnit{kind: 'n', i: i})
	}
	for i := range d.Facts {
		us = append(us, copyUnit{kind: 'f', i: i})
	}
	for ci, c := range d.Conversations {
		us = append(us, copyUnit{kind: 'c', conv: ci})
		for i := range c.Messages {
			us = append(us, copyUnit{kind: 'm', conv: ci, i: i})
		}
	}
	return us
}

// pickUnits is d with only the rows us names (in d's order): a message
// comes with its conversation's state, not its summaries.
func pickUnits(d OwnerData, us []copyUnit) OwnerData {
	out := OwnerData{Owner: d.Owner}
	at := map[int]int{} // d's conversation → out's
	conv := func(ci int) *ConversationData {
		j, ok := at[ci]
		if !ok {
			c := d.Conversations[ci]
			j = len(out.Conversations)
			at[ci] = j
			out.Conversations = append(out.Conversations, ConversationData{Key: c.Key, TurnsSinceSummary: c.TurnsSinceSummary, LastSummary: c.LastSummary})
		}
		return &out.Conversations[j]
	}
	for _, u := range us {
		switch u.kind {
		case 's':
			out.Settings = d.Settings
		case 'n':
			out.Memories = append(out.Memories, d.Memories[u.i])
		case 'f':
			out.Facts = append(out.Facts, d.Facts[u.i])
		case 'c':
			conv(u.conv).Summaries = d.Conversations[u.conv].Summaries
		case 'm':
			c := conv(u.conv)
			c.Messages = append(c.Messages, d.Conversations[u.conv].Messages[u.i])
		}
	}
	return out
}

// refusal describes a unit of d the target refused with err.
func refusal(d OwnerData, u copyUnit, err error) CopyRefusal {
	reason := err.Error()
	if len(reason) > maxRefusalReason {
		reason = strings.ToValidUTF8(reason[:maxRefusalReason], "") + "…"
	}
	r := CopyRefusal{Owner: d.Owner, Reason: reason}
	switch u.kind {
	case 's':
		r.Kind = "settings"
	case 'n':
		r.Kind, r.Key = "note", d.Memories[u.i].Key
	case 'f':
		r.Kind, r.ID = "fact", d.Facts[u.i].ID
	case 'c':
		r.Kind, r.Conversation = "summaries", d.Conversations[u.conv].Key
	case 'm':
		r.Kind, r.Conversation, r.ID = "message", d.Conversations[u.conv].Key, d.Conversations[u.conv].Messages[u.i].ID
	}
	return r
}

// importRefusing imports the rows us of d; when the target refuses them,
// it imports each half alone, down to single rows, and appends to refused
// each row it still refuses.
func (j copyJob) importRefusing(ctx context.Context, d OwnerData, us []copyUnit, keepIDs bool, refused *[]CopyRefusal) error {
	err := j.dst.importCopy(ctx, pickUnits(d, us), keepIDs)
	if err == nil || !(errors.Is(err, ErrBadImport) || j.dst.refuses(err)) || ctx.Err() != nil {
		return err
	}
	if len(us) == 1 {
		*refused = append(*refused, refusal(d, us[0], err))
		return nil
	}
	half := len(us) / 2
	if err := j.importRefusing(ctx, d, us[:half], keepIDs, refused); err != nil {
		return err
	}
	return j.importRefusing(ctx, d, us[half:], keepIDs, refused)
}

// withoutRefused is d without the rows refused (of any owner): what the
// target is to hold of it.
func withoutRefused(d OwnerData, refused []CopyRefusal) OwnerData {
	if len(refused) == 0 {
		return d
	}
	type msgKey struct {
		conv string
		id   int64
	}
	msgs, facts, notes, sums := map[msgKey]bool{}, map[int64]bool{}, map[string]bool{}, map[string]bool{}
	settings := false
	for _, r := range refused {
		if r.Owner != d.Owner {
			continue
		}
		switch r.Kind {
		case "message":
			msgs[msgKey{r.Conversation, r.ID}] = true
		case "fact":
			facts[r.ID] = true
		case "note":
			notes[r.Key] = true
		case "summaries":
			sums[r.Conversation] = true
		case "settings":
			settings = true
		}
	}
	out := OwnerData{Owner: d.Owner, Settings: d.Settings}
	if settings {
		out.Settings = nil
	}
	for _, m := range d.Memories {
		if !notes[m.Key] {
			out.Memories = append(out.Memories, m)
		}
	}
	for _, f := range d.Facts {
		if !facts[f.ID] {
			out.Facts = append(out.Facts, f)
		}
	}
	for _, c := range d.Conversations {
		kept := c
		kept.Messages = nil
		for _, m := range c.Messages {
			if !msgs[msgKey{c.Key, m.ID}] {
				kept.Messages = append(kept.Messages, m)
			}
		}
		if sums[c.Key] {
			kept.Summaries = nil
		}
		out.Conversations = append(out.Conversations, kept)
	}
	return out
}
