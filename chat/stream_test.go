package chat

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/pipeline"
)

// streamer is a recorder that also streams: it records what each stream
// was given.
type streamer struct {
	recorder
	onFinish func(pipeline.Outbound)

	smu     sync.Mutex
	streams []*fakeStream
}

type fakeStream struct {
	key      pipeline.Key
	replyTo  string
	appended strings.Builder
	finished []pipeline.Outbound
	typingAt int // typing indicators sent before the first Append
	rec      *streamer
}

func (s *streamer) Stream(_ context.Context, key pipeline.Key, replyTo string) pipeline.Stream {
	st := &fakeStream{key: key, replyTo: replyTo, rec: s, typingAt: -1}
	s.smu.Lock()
	s.streams = append(s.streams, st)
	s.smu.Unlock()
	return st
}

func (st *fakeStream) Append(text string) {
	if st.typingAt < 0 {
		st.rec.mu.Lock()
		st.typingAt = st.rec.typing
		st.rec.mu.Unlock()
	}
	st.appended.WriteString(text)
}

func (st *fakeStream) Finish(_ context.Context, out pipeline.Outbound) (string, error) {
	if st.rec.onFinish != nil {
		st.rec.onFinish(out)
	}
	st.finished = append(st.finished, out)
	return "1", nil
}

// A streamed reply is shown as it comes, then stored durably, then
// finished; nothing goes through Send.
func TestStreamedReplyIsDurableBeforeFinish(t *testing.T) {
	f := newFixture(t, llmtest.Echo("echo: "), Options{})
	rec := &streamer{}
	rec.onFinish = func(pipeline.Outbound) {
		if _, answered, _ := f.store.SQLite().Lookup(context.Background(), key, "m1"); !answered {
			t.Error("the reply is not committed when the stream is finished")
		}
	}
	if err := f.turn(t, inbound("m1", "hello there"), rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.streams) != 1 {
		t.Fatalf("%d streams, want 1", len(rec.streams))
	}
	st := rec.streams[0]
	if st.key != key || st.replyTo != "m1" || st.appended.String() != "echo: hello there" {
		t.Errorf("stream to %v replying to %q got %q", st.key, st.replyTo, st.appended.String())
	}
	if len(st.finished) != 1 || st.finished[0].Text != "echo: hello there" || st.finished[0].Plain {
		t.Errorf("finished with %+v", st.finished)
	}
	if got := rec.texts(); len(got) != 0 {
		t.Errorf("Send was used too: %q", got)
	}
	if reqs := f.server.Requests(); len(reqs) != 1 || !reqs[0].Stream {
		t.Errorf("requests %+v, want one streamed", reqs)
	}
}

// A model failing before any text: the stream ends with the plain failure
// message, and the user's message stays unanswered, as without streaming.
func TestStreamFailingBeforeTextGivesThePlainMessage(t *testing.T) {
	f := newFixture(t, func(llmtest.Request) llmtest.Response { return llmtest.Response{Status: 500} }, Options{})
	rec := &streamer{}
	if err := f.turn(t, inbound("7", "are you there?"), rec); err == nil {
		t.Error("a failed turn reported no error")
	}
	st := rec.streams[0]
	if st.appended.Len() != 0 || len(st.finished) != 1 || !st.finished[0].Plain ||
		st.finished[0].Text != llm.UserMessage(&llm.StatusError{Code: 500}) {
		t.Fatalf("appended %q, finished %+v", st.appended.String(), st.finished)
	}
	must(t, f.store.Flush(context.Background()))
	keptNotAnswered(t, f.store)
}

// A stream cut after some text: the text shown is kept with a note, stored
// as the reply (the message is answered; nothing is answered twice).
func TestStreamCutKeepsWhatWasShown(t *testing.T) {
	f := newFixture(t, func(llmtest.Request) llmtest.Response {
		return llmtest.Response{Pieces: []string{"Part", " one", " part", " two"}, StreamCut: true}
	}, Options{})
	rec := &streamer{}
	if err := f.turn(t, inbound("8", "tell me"), rec); err != nil {
		t.Fatalf("turn: %v", err)
	}
	st := rec.streams[0]
	shown := st.appended.String()
	if shown != "Part one" {
		t.Fatalf("appended %q", shown)
	}
	want := shown + "\n\n⚠️ " + llm.UserMessage(&llm.StreamError{Err: llm.ErrUnavailable})
	if len(st.finished) != 1 || st.finished[0].Text != want {
		t.Fatalf("finished %+v, want %q", st.finished, want)
	}
	must(t, f.store.Flush(context.Background()))
	if _, answered, _ := f.store.Lookup(context.Background(), key, "8"); !answered {
		t.Error("the cut reply is not stored as the answer")
	}
	msgs, err := f.store.Recent(context.Background(), key, 0, 0)
	if err != nil || len(msgs) != 2 || msgs[1].Text != want {
		t.Errorf("stored %+v, %v", msgs, err)
	}
}

// The typing indicator runs until the first text, not after it.
func TestStreamTypingStopsAtFirstText(t *testing.T) {
	f := newFixture(t, func(llmtest.Request) llmtest.Response {
		return llmtest.Response{Pieces: []string{"a", " b"}, PieceDelay: 60 * time.Millisecond}
	}, Options{TypingEvery: 5 * time.Millisecond})
	rec := &streamer{}
	if err := f.turn(t, inbound("9", "hi"), rec); err != nil {
		t.Fatal(err)
	}
	st := rec.streams[0]
	rec.mu.Lock()
	total := rec.typing
	rec.mu.Unlock()
	// A loop still running after the first text would have ticked about
	// ten more times before the second.
	if st.typingAt < 1 || total > st.typingAt+1 {
		t.Errorf("typing: %d before the first text, %d in all", st.typingAt, total)
	}
}

// shownStreamer streams like a chat platform that shows the reply in a
// message (id "41") from the first text, and can edit its messages.
type shownStreamer struct {
	streamer
	edits []pipeline.Outbound // Key, ReplyTo (the message id) and Text of each Edit
}

type shownStream struct {
	*fakeStream
	onShown func(id string)
	shown   bool
}

func (s *shownStreamer) Stream(ctx context.Context, key pipeline.Key, replyTo string) pipeline.Stream {
	return &shownStream{fakeStream: s.streamer.Stream(ctx, key, replyTo).(*fakeStream)}
}

func (s *shownStreamer) Edit(_ context.Context, key pipeline.Key, id, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.edits = append(s.edits, pipeline.Outbound{Key: key, ReplyTo: id, Text: text})
	return nil
}

func (st *shownStream) OnShown(fn func(id string)) { st.onShown = fn }

func (st *shownStream) Append(text string) {
	st.fakeStream.Append(text)
	if !st.shown && st.onShown != nil {
		st.shown = true
		st.onShown("41")
	}
}

// midStream runs turn m1 on ctx against a model that streams "The answer"
// and then waits for step, to a sender that shows it in message 41, with
// the outbox at path as the journal. It returns once the journal names
// that message; done receives the turn's result, and closing step lets the
// model finish.
func midStream(t *testing.T, ctx context.Context) (f *fixture, path string, step chan struct{}, done chan error) {
	t.Helper()
	step = make(chan struct{})
	f = newFixture(t, func(llmtest.Request) llmtest.Response {
		return llmtest.Response{Pieces: []string{"The answer", " is"}, Step: step}
	}, Options{})
	path = filepath.Join(f.dir, "outbox.jsonl")
	f.respond(Options{Journal: openOutbox(t, path)})
	done = make(chan error, 1)
	go func() {
		done <- f.chain.Handle(ctx, &pipeline.Turn{In: inbound("m1", "what is it?"), Out: &shownStreamer{}})
	}()
	step <- struct{}{} // "The answer" is shown
	waitFor(t, func() bool {
		data, _ := os.ReadFile(path)
		return strings.Contains(string(data), `"op":"shown"`)
	})
	return f, path, step, done
}

// The bot is killed while a streamed reply is showing in a message (here
// the turn hangs in the model's stream while the next run opens the same
// store and journal, as after kill -9): the next start replaces that
// partial text with a note, once, and the message is answered again.
func TestStreamCutByACrashIsReplacedAtTheNextStart(t *testing.T) {
	f, path, step, done := midStream(t, context.Background())
	must(t, f.store.Flush(context.Background()))

	for run := range 2 {
		next := &shownStreamer{}
		sent, unsure, err := openOutbox(t, path).Redeliver(context.Background(), f.store, "telegram", next, time.Hour)
		if err != nil || sent+unsure != 0 || len(next.sent) != 0 {
			t.Fatalf("start %d: sent %d, unsure %d, %v: %+v; want no reply sent", run, sent, unsure, err, next.sent)
		}
		want := 1
		if run == 1 {
			want = 0
		}
		if len(next.edits) != want {
			t.Fatalf("start %d: edits %+v, want %d", run, next.edits, want)
		}
		if want == 1 && (next.edits[0].ReplyTo != "41" || next.edits[0].Key != key || next.edits[0].Text != CutReplyFollows) {
			t.Errorf("edit %+v, want message 41 replaced by the note", next.edits[0])
		}
	}
	pending, err := Pending(context.Background(), f.store, "telegram", time.Hour)
	if err != nil || len(pending) != 1 || pending[0].MessageID != "m1" {
		t.Errorf("pending %+v, %v; want m1 answered again", pending, err)
	}
	close(step) // the frozen run ends (its journal file was replaced)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A streamed reply that completes closes its journal entry: the next start
// edits nothing.
func TestFinishedStreamLeavesNothingToReplace(t *testing.T) {
	f := newFixture(t, llmtest.Echo("echo: "), Options{})
	path := filepath.Join(f.dir, "outbox.jsonl")
	f.respond(Options{Journal: openOutbox(t, path)})
	rec := &shownStreamer{}
	if err := f.turn(t, inbound("m1", "hello"), rec); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"op":"shown","key":"telegram:555:","reply_to":"m1","shown":"41"`) {
		t.Errorf("no shown record in the journal:\n%s", data)
	}
	next := &shownStreamer{}
	if sent, unsure, err := openOutbox(t, path).Redeliver(context.Background(), f.store, "telegram", next, time.Hour); err != nil || sent+unsure != 0 || len(next.edits)+len(next.sent) != 0 {
		t.Fatalf("after a finished stream: %d, %d, %v, edits %+v, sent %+v", sent, unsure, err, next.edits, next.sent)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The bot stops (its turn is cancelled) while a streamed reply is showing:
// as after a crash, nothing is stored, the message stays unanswered and the
// next start replaces what was shown with a note.
func TestStreamCancelledByAStopIsLeftAsACrashLeavesIt(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	f, path, _, done := midStream(t, ctx)
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the stopped turn returned %v", err)
	}
	must(t, f.store.Flush(context.Background()))
	if stored, answered, _ := f.store.Lookup(context.Background(), key, "m1"); !stored || answered {
		t.Errorf("stored=%v answered=%v, want the message kept unanswered", stored, answered)
	}
	next := &shownStreamer{}
	if _, _, err := openOutbox(t, path).Redeliver(context.Background(), f.store, "telegram", next, time.Hour); err != nil {
		t.Fatal(err)
	}
	if len(next.edits) != 1 || next.edits[0].ReplyTo != "41" || next.edits[0].Text != CutReplyFollows {
		t.Errorf("edits at the next start %+v, want message 41 replaced by the note", next.edits)
	}
	pending, err := Pending(context.Background(), f.store, "telegram", time.Hour)
	if err != nil || len(pending) != 1 || pending[0].MessageID != "m1" {
		t.Errorf("pending %+v, %v; want m1 answered again", pending, err)
	}
}
