package chat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// After /purge nothing the user said may remain anywhere: the journal held
// the text of every delivered reply (9 copies after /purge all) until it
// grew past its compaction size. A delivered reply keeps no text in it,
// also one the last run left and this run delivered.
func TestDeliveredRepliesLeaveNoTextInTheJournal(t *testing.T) {
	f := newFixture(t, llmtest.Echo("echo: "), Options{})
	path := filepath.Join(f.dir, "outbox.jsonl")
	o := openOutbox(t, path)
	f.respond(Options{Journal: o})
	for i := range 9 {
		if err := f.turn(t, inbound(fmt.Sprint("m", i), fmt.Sprint("my secret number ", i)), &recorder{}); err != nil {
			t.Fatal(err)
		}
	}
	// One the last run left: stored, never sent; this run sends it.
	must(t, o.Reply(key, "m9", "echo: my secret left over"))
	o.Close()
	o = openOutbox(t, path)
	must(t, o.Done(key, "m9")) // delivered by this run

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "secret") {
		t.Errorf("the journal still holds the text of delivered replies:\n%s", data)
	}
	// What is still open keeps its text: a restart needs it.
	must(t, o.Reply(key, "m10", "echo: still being sent"))
	o.Close()
	if o2 := openOutbox(t, path); o2.open[outboxID{key.String(), "m10"}] == nil || o2.open[outboxID{key.String(), "m10"}].Text != "echo: still being sent" {
		t.Errorf("the open reply was lost: %+v", o2.open)
	}
}

// fullDisk is a journal file on a disk that fills up: the write it fails
// lands only its first bytes, as write(2) does with ENOSPC.
type fullDisk struct {
	journalFile
	full bool
}

func (d *fullDisk) WriteAt(b []byte, off int64) (int, error) {
	if d.full {
		d.full = false
		n, _ := d.journalFile.WriteAt(b[:len(b)/2], off)
		return n, syscall.ENOSPC
	}
	return d.journalFile.WriteAt(b, off)
}

// A write cut by a full disk leaves part of a line; the next record, once
// there is room again, starts on a fresh line instead of being swallowed by
// it (before, the reply written after a failed one was lost at the next
// start and never redelivered).
func TestFailedWriteDoesNotSwallowTheNextRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.jsonl")
	o := openOutbox(t, path)
	disk := &fullDisk{journalFile: o.f}
	o.f = disk
	must(t, o.Reply(key, "m1", "first"))
	disk.full = true
	if err := o.Reply(key, "m2", "second"); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("the write on a full disk returned %v", err)
	}
	must(t, o.Reply(key, "m3", "third"))
	must(t, o.Sending(key, "m1"))
	o.Close()

	o2 := openOutbox(t, path)
	for _, id := range []string{"m1", "m3"} {
		if e := o2.open[outboxID{key.String(), id}]; e == nil || !e.replied() {
			t.Errorf("reply to %s lost after the failed write: %+v", id, o2.open)
		}
	}
	if e := o2.open[outboxID{key.String(), "m1"}]; e == nil || !e.sending {
		t.Errorf("the sending record of m1 was lost: %+v", e)
	}
}

// A reply the platform did not take yet stays pending with its text — until
// the user purges the conversation: then it leaves the journal, unsent.
func TestPurgeForgetsUndeliveredReplies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.jsonl")
	o := openOutbox(t, path)
	other := pipeline.Key{Channel: "telegram", Chat: "777"}
	must(t, o.Reply(key, "m1", "echo: my pending secret"))
	must(t, o.Sending(key, "m1"))
	must(t, o.Failed(key, "m1"))
	must(t, o.Reply(other, "x1", "echo: someone else's reply"))
	must(t, o.Forget(memory.PurgeScope{Owner: key.Owner()}))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "secret") {
		t.Errorf("the purged conversation's pending reply is still in the journal:\n%s", data)
	}
	if !strings.Contains(string(data), "someone else's reply") {
		t.Errorf("another owner's pending reply was dropped:\n%s", data)
	}
	o.Close()
	if o2 := openOutbox(t, path); o2.open[outboxID{key.String(), "m1"}] != nil {
		t.Error("the forgotten reply is open again after a restart")
	}
}
