package chat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// MaybeLostReply is sent in reply to a message whose answer was being sent
// when the bot stopped abruptly.
const MaybeLostReply = "I was restarted while sending my answer to this message, so it may not have reached you. If you don't see it just above, please send your message again."

// Notes that replace the part of a streamed answer a crash left showing:
// the answer follows (sent again, or the message answered again), or, for
// a message too old to be answered again, the user is asked to resend it.
const (
	CutReplyFollows = "✂️ This answer was cut off when I was restarted; the full answer follows below."
	CutReplyResend  = "✂️ This answer was cut off when I was restarted. Please send your message again."
)

// Outbox is a journal of the replies being delivered, so a restart after a
// crash sends a reply that was stored but never sent — once — and never
// sends one twice. Each reply goes through three records, each written
// (write(2), no fsync: a killed process loses nothing, a power cut may lose
// the last records) before the step it announces:
//
//	reply    the reply and its text, before it is stored
//	sending  before it is handed to the platform
//	done     once the platform answered (delivered, or refused for good)
//	failed   the platform did not take it yet (pipeline.ErrNotDelivered):
//	         it stays pending, is sent again by RunRetries once the
//	         channel is back, or at the next start
//
// A streamed reply adds a fourth, before the others:
//
//	shown    the id of the message showing the reply while it is written
//
// Once a reply is done, its reply record is overwritten with blanks in place:
// the journal keeps no text of a finished reply, so what a user purges is
// not left behind in it. A write that fails (a full disk) may leave part of
// a record: the next one starts on a fresh line, so it is not swallowed.
//
// At the next start Redeliver sends every reply that has no sending record
// and is in the store (stored, never handed over), and skips those with
// sending but no done: the process died while the platform was being called,
// so the user may have it, and sending it again could show it twice. A
// message left showing part of a reply is edited into a note saying the
// answer was cut off and follows (its message is answered again).
type Outbox struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	f       journalFile
	size    int64                     // where the next record goes
	torn    bool                      // the last write failed: it may have left part of a line
	texts   map[outboxID][]span       // the reply records of open replies, blanked when done
	open    map[outboxID]*outboxEntry // replies not done, in the journal
	left    []outboxEntry             // those the last run left (Redeliver's work)
	compact int64                     // rewrite the journal past this size
	failed  chan struct{}             // closed and replaced when a reply failed

	retryBase, retryMax time.Duration // RunRetries' backoff
}

// journalFile is the open journal (an *os.File; tests stand a full disk in).
type journalFile interface {
	io.WriterAt
	io.Closer
}

// span is where a record lies in the journal, its newline excluded.
type span struct{ off, n int64 }

type outboxID struct {
	Key     string `json:"key"`
	ReplyTo string `json:"reply_to"`
}

type outboxEntry struct {
	Op string `json:"op"` // reply, shown, sending, done
	outboxID
	Text    string    `json:"text,omitempty"`
	Shown   string    `json:"shown,omitempty"` // the message showing a streamed reply
	At      time.Time `json:"at,omitzero"`
	sending bool
	failed  bool // not taken by the platform in this run: RunRetries sends it
}

// replied reports whether the entry has the reply (not only a shown
// message).
func (e *outboxEntry) replied() bool { return e.Op == "reply" }

// OpenOutbox opens (creating) the journal at path and reads what the last
// run left open.
func OpenOutbox(path string, log *slog.Logger) (*Outbox, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := &Outbox{path: path, log: log, open: map[outboxID]*outboxEntry{}, texts: map[outboxID][]span{}, compact: 4 << 20,
		failed: make(chan struct{}), retryBase: 5 * time.Second, retryMax: 2 * time.Minute}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading the outbox %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	for sc.Scan() {
		var e outboxEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // a record cut by the crash
		}
		o.applyLocked(e)
	}
	for _, e := range o.open {
		o.left = append(o.left, *e)
	}
	slices.SortStableFunc(o.left, func(a, b outboxEntry) int { return a.At.Compare(b.At) })
	if err := o.rewriteLocked(); err != nil {
		return nil, err
	}
	return o, nil
}

// Close closes the journal.
func (o *Outbox) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.f == nil {
		return nil
	}
	err := o.f.Close()
	o.f = nil
	return err
}

// rewriteLocked writes the open entries to a new journal and switches to it.
func (o *Outbox) rewriteLocked() error {
	var buf bytes.Buffer
	texts := map[outboxID][]span{}
	for _, e := range o.open {
		if !e.replied() {
			writeRecord(&buf, outboxEntry{Op: "shown", outboxID: e.outboxID, Shown: e.Shown, At: e.At})
			continue
		}
		off := int64(buf.Len())
		writeRecord(&buf, outboxEntry{Op: "reply", outboxID: e.outboxID, Text: e.Text, Shown: e.Shown, At: e.At})
		texts[e.outboxID] = []span{{off, int64(buf.Len()) - off - 1}}
		if e.sending {
			writeRecord(&buf, outboxEntry{Op: "sending", outboxID: e.outboxID})
		}
	}
	tmp := o.path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("writing the outbox: %w", err)
	}
	if err := os.Rename(tmp, o.path); err != nil {
		return fmt.Errorf("writing the outbox: %w", err)
	}
	// Not O_APPEND: finished replies are blanked in place (WriteAt), and
	// only this process writes the journal (the data directory is locked).
	f, err := os.OpenFile(o.path, os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("opening the outbox: %w", err)
	}
	if o.f != nil {
		o.f.Close()
	}
	o.f, o.size, o.texts, o.torn = f, int64(buf.Len()), texts, false
	return nil
}

// applyLocked updates the open entries with a record.
func (o *Outbox) applyLocked(e outboxEntry) {
	switch e.Op {
	case "reply":
		if p := o.open[e.outboxID]; p != nil && e.Shown == "" {
			e.Shown = p.Shown
		}
		o.open[e.outboxID] = &e
	case "shown":
		if p := o.open[e.outboxID]; p != nil {
			p.Shown = e.Shown
		} else {
			o.open[e.outboxID] = &e
		}
	case "sending":
		if p := o.open[e.outboxID]; p != nil {
			p.sending, p.failed = true, false
		}
	case "failed":
		// Not taken by the platform: sending it again cannot show it
		// twice, so it is as if it was never handed over.
		if p := o.open[e.outboxID]; p != nil {
			p.sending, p.failed = false, true
		}
	case "done":
		delete(o.open, e.outboxID)
	}
}

func writeRecord(w io.Writer, e outboxEntry) {
	b, _ := json.Marshal(e)
	_, _ = w.Write(append(b, '\n'))
}

// record appends one record in a single write; done blanks the finished
// reply's text.
func (o *Outbox) record(e outboxEntry) error {
	rec, err := json.Marshal(e)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.f == nil {
		return errors.New("the outbox is closed")
	}
	o.applyLocked(e)
	var b []byte
	if o.torn {
		b = append(b, '\n') // end the part of a line a failed write left
	}
	start := o.size + int64(len(b))
	b = append(append(b, rec...), '\n')
	n, err := o.f.WriteAt(b, o.size)
	o.size += int64(n)
	o.torn = err != nil
	if err != nil {
		return fmt.Errorf("writing the outbox: %w", err)
	}
	switch e.Op {
	case "reply":
		o.texts[e.outboxID] = append(o.texts[e.outboxID], span{start, int64(len(rec))})
	case "done":
		if err := o.blankLocked(e.outboxID); err != nil {
			return err
		}
		if o.size > o.compact {
			return o.rewriteLocked()
		}
	}
	return nil
}

// blankLocked overwrites the reply records of a finished reply with spaces,
// after its done record is written (a crash between the two leaves a
// finished reply with its text, never an open one without).
func (o *Outbox) blankLocked(id outboxID) error {
	for _, sp := range o.texts[id] {
		if _, err := o.f.WriteAt(bytes.Repeat([]byte{' '}, int(sp.n)), sp.off); err != nil {
			return fmt.Errorf("erasing a delivered reply from the outbox: %w", err)
		}
	}
	delete(o.texts, id)
	return nil
}

// Forget drops the open replies of the conversations a purge removed —
// scope.Key's, or every one of scope.Owner's — and rewrites the journal, so
// that no text of theirs stays on disk; they are not sent either.
func (o *Outbox) Forget(scope memory.PurgeScope) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.f == nil {
		return errors.New("the outbox is closed")
	}
	for id := range o.open {
		k, err := pipeline.ParseKey(id.Key)
		if err != nil || k.Owner() != scope.Owner || (scope.Key != (pipeline.Key{}) && k != scope.Key) {
			continue
		}
		delete(o.open, id)
	}
	return o.rewriteLocked()
}

// Reply records a reply about to be stored.
func (o *Outbox) Reply(key pipeline.Key, replyTo, text string) error {
	return o.record(outboxEntry{Op: "reply", outboxID: outboxID{key.String(), replyTo}, Text: text, At: time.Now()})
}

// Shown records the message that shows a reply while it is streamed.
func (o *Outbox) Shown(key pipeline.Key, replyTo, id string) error {
	return o.record(outboxEntry{Op: "shown", outboxID: outboxID{key.String(), replyTo}, Shown: id, At: time.Now()})
}

// Sending records that the reply is being handed to the platform.
func (o *Outbox) Sending(key pipeline.Key, replyTo string) error {
	return o.record(outboxEntry{Op: "sending", outboxID: outboxID{key.String(), replyTo}})
}

// Failed records that the platform did not take the reply yet
// (pipeline.ErrNotDelivered): it stays pending and is sent again by
// RunRetries, or at the next start.
func (o *Outbox) Failed(key pipeline.Key, replyTo string) error {
	err := o.record(outboxEntry{Op: "failed", outboxID: outboxID{key.String(), replyTo}})
	o.mu.Lock()
	close(o.failed)
	o.failed = make(chan struct{})
	o.mu.Unlock()
	return err
}

// Done records that the platform answered.
func (o *Outbox) Done(key pipeline.Key, replyTo string) error {
	return o.record(outboxEntry{Op: "done", outboxID: outboxID{key.String(), replyTo}})
}

// Redeliver sends the replies of channel the last run stored but never
// handed to the platform, oldest first, and reports how many it sent and
// how many it did not because the last run died while sending them. A reply
// that is not in the store (the crash came before it was written) is
// dropped: its message is unanswered and answered again (Pending). Replies
// older than window are dropped too.
func (o *Outbox) Redeliver(ctx context.Context, seen pipeline.Seen, channel string, out pipeline.Sender, window time.Duration) (sent, unsure int, err error) {
	r, err := o.Unsent(ctx, seen, channel, window)
	if err != nil {
		return 0, 0, err
	}
	return r.Send(ctx, out)
}

// Redelivery is the work Unsent found: replies to send, replies cut
// mid-send whose users are to be told, and messages showing part of a
// streamed reply, to be replaced by a note.
type Redelivery struct {
	o      *Outbox
	send   []outboxEntry
	unsure []outboxEntry
	cut    []cutReply
}

// cutReply is a message left showing part of a reply, and the note that
// replaces it.
type cutReply struct {
	key  pipeline.Key
	id   string
	note string
}

// Unsent sorts out the replies of channel the last run left open, without
// sending anything: it must run before this run answers anything of the
// channel (before Pending is submitted), so that a reply this run stores is
// not taken for one the last run left. Send, which may wait for the
// platform, can run later.
func (o *Outbox) Unsent(ctx context.Context, seen pipeline.Seen, channel string, window time.Duration) (*Redelivery, error) {
	r := &Redelivery{o: o}
	for _, e := range o.left {
		key, perr := pipeline.ParseKey(e.Key)
		if perr != nil || key.Channel != channel {
			continue
		}
		if e.sending {
			// Finish was replacing what was shown: it is the reply, or
			// the note about it.
			r.unsure = append(r.unsure, e)
			continue
		}
		recent := time.Since(e.At) <= window
		if !e.replied() {
			// The stream was cut before the reply was stored: the
			// message is answered again (Pending) if it is recent.
			r.cutShown(key, e, recent)
			_ = o.Done(key, e.ReplyTo)
			continue
		}
		if !recent {
			r.cutShown(key, e, false)
			_ = o.Done(key, e.ReplyTo)
			continue
		}
		_, answered, err := seen.Lookup(ctx, key, e.ReplyTo)
		if err != nil {
			return nil, fmt.Errorf("looking up a stored reply: %w", err)
		}
		r.cutShown(key, e, true) // the reply follows, or the message is answered again
		if !answered {
			_ = o.Done(key, e.ReplyTo) // not stored: the message is answered again
			continue
		}
		r.send = append(r.send, e)
	}
	return r, nil
}

// cutShown notes the message e's stream left showing, if any: follows
// says whether the answer comes after the note.
func (r *Redelivery) cutShown(key pipeline.Key, e outboxEntry, follows bool) {
	if e.Shown == "" {
		return
	}
	note := CutReplyResend
	if follows {
		note = CutReplyFollows
	}
	r.cut = append(r.cut, cutReply{key: key, id: e.Shown, note: note})
}

// Send replaces the partial replies with their notes (when out is a
// pipeline.Editor), then sends the replies and the notes about replies cut
// mid-send.
func (r *Redelivery) Send(ctx context.Context, out pipeline.Sender) (sent, unsure int, err error) {
	o := r.o
	if ed, ok := out.(pipeline.Editor); ok {
		for _, c := range r.cut {
			o.log.Warn("the last run stopped while streaming a reply; replacing the part shown with a note",
				"key", c.key, "message", c.id)
			if eerr := ed.Edit(ctx, c.key, c.id, c.note); eerr != nil {
				if ctx.Err() != nil {
					return sent, unsure, ctx.Err()
				}
				o.log.Warn("replacing the part of a reply shown before the restart", "key", c.key, "message", c.id, "err", eerr)
			}
		}
	}
	for _, e := range r.unsure {
		// Sending it again could show it twice: the user is told instead,
		// in reply to the message.
		key, _ := pipeline.ParseKey(e.Key)
		unsure++
		o.log.Warn("the last run stopped while sending a reply: it may not have been delivered; it is not sent again (it could show twice), the user is told",
			"key", e.Key, "reply_to", e.ReplyTo)
		if _, serr := out.Send(ctx, pipeline.Outbound{Key: key, Text: MaybeLostReply, Plain: true, ReplyTo: e.ReplyTo}); serr != nil && ctx.Err() != nil {
			return sent, unsure, ctx.Err()
		}
		_ = o.Done(key, e.ReplyTo)
	}
	for _, e := range r.send {
		key, _ := pipeline.ParseKey(e.Key)
		if err := o.Sending(key, e.ReplyTo); err != nil {
			o.log.Warn("recording a reply being sent", "key", e.Key, "err", err)
		}
		_, serr := out.Send(ctx, pipeline.Outbound{Key: key, Text: e.Text, ReplyTo: e.ReplyTo})
		if serr != nil && ctx.Err() != nil {
			return sent, unsure, ctx.Err()
		}
		if errors.Is(serr, pipeline.ErrNotDelivered) {
			// The channel is not up yet: RunRetries sends it later.
			_ = o.Failed(key, e.ReplyTo)
			o.log.Warn("a reply left unsent by the last run could not be sent yet; it stays pending", "key", e.Key, "reply_to", e.ReplyTo, "err", serr)
			continue
		}
		_ = o.Done(key, e.ReplyTo)
		if serr != nil {
			o.log.Warn("sending a reply left unsent by the last run failed", "key", e.Key, "reply_to", e.ReplyTo, "err", serr)
			continue
		}
		sent++
	}
	return sent, unsure, nil
}

// SetRetryBackoff sets RunRetries' first pause and its longest (5 s and
// 2 minutes by default); for tests.
func (o *Outbox) SetRetryBackoff(first, longest time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.retryBase, o.retryMax = first, longest
}

// RunRetries sends again, until ctx ends, the replies of channel that out
// did not deliver in this run (Failed): a while after each failure, then
// with a growing pause (5 s up to 2 minutes) while they keep failing, so a
// reply whose send failed during an outage goes out once the channel is
// back. Replies are sent oldest first, in reply to their message. Its
// owner runs it beside the channel; it returns nil when ctx ends.
func (o *Outbox) RunRetries(ctx context.Context, channel string, out pipeline.Sender) error {
	attempt := 0
	for {
		o.mu.Lock()
		wake := o.failed
		o.mu.Unlock()
		if o.pendingFailed(channel) == 0 {
			attempt = 0
			select {
			case <-ctx.Done():
				return nil
			case <-wake:
			}
		}
		o.mu.Lock()
		wait := min(o.retryBase<<min(attempt, 10), o.retryMax)
		o.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		if _, err := o.Retry(ctx, channel, out); err != nil {
			return nil // ctx ended
		}
		attempt++
	}
}

// pendingFailed counts the replies of channel waiting to be sent again.
func (o *Outbox) pendingFailed(channel string) int {
	return len(o.failedOf(channel))
}

// failedOf lists the replies of channel that failed in this run, oldest
// first.
func (o *Outbox) failedOf(channel string) []outboxEntry {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []outboxEntry
	for _, e := range o.open {
		if !e.failed || !e.replied() {
			continue
		}
		if k, err := pipeline.ParseKey(e.Key); err == nil && k.Channel == channel {
			out = append(out, *e)
		}
	}
	slices.SortStableFunc(out, func(a, b outboxEntry) int { return a.At.Compare(b.At) })
	return out
}

// Retry sends the replies of channel that failed in this run once more,
// oldest first, and reports how many went out. It stops at the first one
// that fails again with pipeline.ErrNotDelivered (the channel is still
// down; it stays pending); one refused for good is dropped and logged. The
// error is ctx's when it ended.
func (o *Outbox) Retry(ctx context.Context, channel string, out pipeline.Sender) (sent int, err error) {
	for _, e := range o.failedOf(channel) {
		key, _ := pipeline.ParseKey(e.Key)
		if err := o.Sending(key, e.ReplyTo); err != nil {
			o.log.Warn("recording a reply being sent", "key", e.Key, "err", err)
		}
		_, serr := out.Send(ctx, pipeline.Outbound{Key: key, Text: e.Text, ReplyTo: e.ReplyTo})
		switch {
		case serr == nil:
			_ = o.Done(key, e.ReplyTo)
			sent++
			o.log.Info("sent a reply whose first send failed", "key", e.Key, "reply_to", e.ReplyTo)
		case ctx.Err() != nil:
			return sent, ctx.Err() // left open, as a stop mid-send leaves it
		case errors.Is(serr, pipeline.ErrNotDelivered):
			_ = o.Failed(key, e.ReplyTo)
			o.log.Warn("sending a reply again failed; it stays pending", "key", e.Key, "reply_to", e.ReplyTo, "err", serr)
			return sent, nil
		default:
			_ = o.Done(key, e.ReplyTo)
			o.log.Error("a reply could not be sent and is given up", "key", e.Key, "reply_to", e.ReplyTo, "err", serr)
		}
	}
	return sent, nil
}
