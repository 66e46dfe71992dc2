package memory

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxMessageBytes bounds the text of one stored message. SQLite (the
// WebAssembly build, 256 MB of memory per connection) runs out of memory
// indexing one row of about 12 MB of many words or 16 MB of one word, and
// the driver panics instead of returning an error, which would take the
// whole process down; 4 MiB indexes with a margin of three (TestCutText,
// TestHugeMessageIsStoredCut and TestBigMessagesInOneBatch in cut_test.go).
// The bound holds for every backend so that a conversation moves between
// them unchanged.
const MaxMessageBytes = 4 << 20

// maxStatementBytes bounds the message text one SQLite statement inserts
// (appendTx): the batch travels as one JSON parameter, parsed and indexed
// inside the connection's memory, and 24 messages of 4 MiB in one statement
// exhausted it (16 did not); a transaction of several statements does not.
const maxStatementBytes = 2 * MaxMessageBytes

// CutText returns text cut to MaxMessageBytes with a note saying so, and
// whether it was cut. Losing the tail of a 30 MB paste, with a note the
// user and the model can read, beats crashing the bot on it: the cut is at
// a UTF-8 boundary (text that is not UTF-8 is cut at the bound), the kept
// head and the note together fit the bound, and text within the bound is
// returned unchanged.
func CutText(text string) (string, bool) {
	if len(text) <= MaxMessageBytes {
		return text, false
	}
	note := fmt.Sprintf("\n[… cut: the message was %s; Recall keeps at most %s of one message]",
		megabytes(len(text)), megabytes(MaxMessageBytes))
	end := MaxMessageBytes - len(note)
	// Step back over continuation bytes (at most three) to a rune start.
	for i := 0; i < utf8.UTFMax-1 && end > 0 && !utf8.RuneStart(text[end]); i++ {
		end--
	}
	return text[:end] + note, true
}

// megabytes formats n bytes as MB with one decimal at most ("30.5 MB", "4 MB").
func megabytes(n int) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<20)), ".0") + " MB"
}

// cutMessages cuts each message's text to MaxMessageBytes in place and
// returns how many were cut. A cut message's token count is estimated
// anew (the caller's counted the whole text).
func cutMessages(msgs []Message) int {
	n := 0
	for i := range msgs {
		if t, cut := CutText(msgs[i].Text); cut {
			msgs[i].Text = t
			msgs[i].Tokens = estimateTokens(t)
			n++
		}
	}
	return n
}

// cutOwnerData cuts the messages of d to MaxMessageBytes and returns the
// cut copy (d's slices are not changed) and how many were cut.
func cutOwnerData(d OwnerData) (OwnerData, int) {
	n := 0
	var convs []ConversationData
	for i, c := range d.Conversations {
		for _, m := range c.Messages {
			if len(m.Text) <= MaxMessageBytes {
				continue
			}
			if convs == nil {
				convs = append([]ConversationData(nil), d.Conversations...)
			}
			msgs := append([]Message(nil), c.Messages...)
			n += cutMessages(msgs)
			convs[i].Messages = msgs
			break
		}
	}
	if convs != nil {
		d.Conversations = convs
	}
	return d, n
}
