package memory

import (
	"errors"
	"strconv"
	"strings"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/ext/fts5"
	"github.com/recallbot/recall/memory/internal/fts"
)

// The messages search index (messages_fts) holds per-conversation terms that
// Go computes, not the raw text: every token of a message goes through the
// same port of FTS5's unicode61 tokenizer and Porter stemmer that the other
// backends use (package memory/internal/fts), and becomes
//
//	c<conv>x<stem>   in column text, one per token, in order (phrases work)
//	c<conv>r<stem>   in column sender, one per token of the sender's name, in order
//	c<conv>r<stem>   in column extra, once per occurrence in the text after the first
//
// so a term's doclist holds one conversation's messages and nothing else. A
// token longer than fts.MaxTermBytes is not indexed: its stem is written
// empty (ftsIndexStem: "c<conv>x", "c<conv>r"), which keeps its place for
// phrases and no query term reaches. The
// x term's doclist is the messages whose text contains the stem; the r term's
// is the few others that matter for ranking (the stem in the sender's name,
// or more than once in the text), told apart by column. The table's tokenizer
// is plain 'ascii': the terms are already folded and stemmed, and 'ascii'
// keeps every byte of them (non-ASCII bytes are token characters). "c", the
// conversation's digits and one letter cannot be confused with each other, so
// no query term can reach another conversation's rows.
//
// The index's rowid is the message id times 2^24 plus the message's length
// in tokens (text and name; BM25's D), so ranking never looks the length up.
//
// The table is contentless: the triggers of migration 0001 pass the terms
// (recall_fts) on insert and replay them on delete, with secure-delete on, so
// a deleted message leaves no term behind. recall_fts is deterministic; a
// change to what it computes must come with a migration that rebuilds
// messages_fts ('delete-all', then every message again), or deletes would
// replay terms that were never indexed. searchIndexFormat names the current
// derivation (the benchmark fixture is rebuilt when it changes).
//
// Secure-delete has a read cost: the first delete marks the index (FTS5's
// format version 5; only 'delete-all' clears it), and from then on a
// newest-first read (ORDER BY rowid DESC) of a doclist spread over several
// pages walks them from the first instead of jumping to the last through the
// doclist index. At 100,000 messages searches cost 2-5% more CPU, 11-14%
// for those holding the sender's name, whose doclist is half the
// conversation (BenchmarkSearchAfterDelete); the walk grows with the
// longest doclists a query reads.
const searchIndexFormat = "recall-fts-3"

const (
	ftsLenBits = 24
	ftsMaxLen  = 1<<ftsLenBits - 1 // longer messages are ranked as if this long
	ftsMinID   = -(1 << (62 - ftsLenBits))
	ftsMaxID   = 1<<(62-ftsLenBits) - 1
)

// ftsRowid is a message's rowid in messages_fts.
func ftsRowid(id int64, length int) (int64, error) {
	if id < ftsMinID || id > ftsMaxID {
		return 0, errors.New("message id out of the search index's range")
	}
	return id<<ftsLenBits | int64(min(length, ftsMaxLen)), nil
}

// ftsRowidID and ftsRowidLen decode a messages_fts rowid.
func ftsRowidID(rowid int64) int64 { return rowid >> ftsLenBits }
func ftsRowidLen(rowid int64) int  { return int(rowid & ftsMaxLen) }

// ftsConvPrefix is "c<conv>", the start of every term of a conversation.
func ftsConvPrefix(conv int64) string { return "c" + strconv.FormatUint(uint64(conv), 10) }

// Term kinds (the letter after the conversation).
const (
	ftsKindText = 'x' // every occurrence in the text
	ftsKindRest = 'r' // occurrences in the sender's name; repeats in the text
)

// ftsIndexStem is what the index holds of a token's stem: the stem, or ""
// when it is too long to be indexed (fts.Indexed).
func ftsIndexStem(stem string) string {
	if !fts.Indexed(stem) {
		return ""
	}
	return stem
}

func ftsTerm(prefix string, kind byte, stem string) string {
	return prefix + string(rune(kind)) + stem
}

// ftsIndexed is what recall_fts computes for one message.
type ftsIndexed struct {
	text, sender, extra string
	length              int // tokens in text and sender name
}

// ftsIndexDoc derives a message's index terms.
func ftsIndexDoc(conv int64, text, sender string) ftsIndexed {
	prefix := ftsConvPrefix(conv)
	textToks, senderToks := fts.Tokens(text), fts.Tokens(sender)
	d := ftsIndexed{length: len(textToks) + len(senderToks)}
	var b strings.Builder
	word := func(kind byte, stem string) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(prefix)
		b.WriteByte(kind)
		b.WriteString(stem)
	}
	seen := make(map[string]bool, len(textToks))
	var repeats []string
	for _, t := range textToks {
		t = ftsIndexStem(t)
		word(ftsKindText, t)
		if seen[t] {
			repeats = append(repeats, t)
		}
		seen[t] = true
	}
	d.text = b.String()
	b.Reset()
	for _, t := range senderToks {
		word(ftsKindRest, ftsIndexStem(t))
	}
	d.sender = b.String()
	b.Reset()
	for _, t := range repeats {
		word(ftsKindRest, t)
	}
	d.extra = b.String()
	return d
}

// registerSearchExtensions registers FTS5 on a connection with the search's
// own functions: recall_fts (the triggers') and recall_tf (the search's).
func registerSearchExtensions(c *sqlite3.Conn) error {
	if err := fts5.RegisterCustom(c, func(api *fts5.API) error {
		return api.CreateFunction("recall_tf", recallTF)
	}); err != nil {
		return err
	}
	return registerSearchFunctions(c)
}

// ftsInst is one phrase instance in a row: which phrase of the MATCH
// expression, in which column.
type ftsInst struct{ phrase, col int }

// ftsRowSink receives, through recall_tf, each row's phrase instances.
type ftsRowSink func(rowid int64, insts []ftsInst)

// recallTF is the auxiliary function recall_tf(messages_fts, sink): it passes
// the current row's phrase instances to sink (bound with BindPointer) and
// returns NULL.
func recallTF(fts fts5.Context, ctx sqlite3.Context, arg ...sqlite3.Value) {
	sink, ok := arg[0].Pointer().(*ftsRowSinkBuf)
	if !ok {
		ctx.ResultError(errors.New("recall_tf: no sink"))
		return
	}
	n, err := fts.InstCount()
	if err != nil {
		ctx.ResultError(err)
		return
	}
	sink.buf = sink.buf[:0]
	for i := range n {
		phrase, col, _, err := fts.Inst(i)
		if err != nil {
			ctx.ResultError(err)
			return
		}
		sink.buf = append(sink.buf, ftsInst{phrase, col})
	}
	sink.fn(fts.RowID(), sink.buf)
}

// ftsRowSinkBuf is what a statement binds for recall_tf.
type ftsRowSinkBuf struct {
	fn  ftsRowSink
	buf []ftsInst
}

// registerSearchFunctions adds recall_fts(conv, id, text, sender, part) to a
// connection: part 0 is the messages_fts rowid, 1 to 3 the text, sender and
// extra columns, 4 the message's length in tokens. The triggers call it
// several times per row with the same arguments; the last result is kept.
func registerSearchFunctions(c *sqlite3.Conn) error {
	var last struct {
		ok           bool
		conv         int64
		text, sender string
		doc          ftsIndexed
	}
	return c.CreateFunction("recall_fts", 5, sqlite3.DETERMINISTIC|sqlite3.INNOCUOUS, func(ctx sqlite3.Context, arg ...sqlite3.Value) {
		conv, id := arg[0].Int64(), arg[1].Int64()
		same := last.ok && last.conv == conv
		// A RawText slice is only good until the next call into SQLite.
		if text := arg[2].RawText(); !same || last.text != string(text) {
			last.text, same = string(text), false
		}
		if sender := arg[3].RawText(); !same || last.sender != string(sender) {
			last.sender, same = string(sender), false
		}
		if !same {
			last.ok, last.conv = true, conv
			last.doc = ftsIndexDoc(conv, last.text, last.sender)
		}
		switch arg[4].Int() {
		case 0:
			rowid, err := ftsRowid(id, last.doc.length)
			if err != nil {
				ctx.ResultError(err)
				return
			}
			ctx.ResultInt64(rowid)
		case 1:
			ctx.ResultText(last.doc.text)
		case 2:
			ctx.ResultText(last.doc.sender)
		case 3:
			ctx.ResultText(last.doc.extra)
		case 4:
			ctx.ResultInt64(int64(last.doc.length))
		default:
			ctx.ResultError(errors.New("recall_fts: bad part"))
		}
	})
}
