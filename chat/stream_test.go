package chat

import (
	"context"
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
		st.finished[0].Text != llm.UserMessage(llm.ErrUnavailable) {
		t.Fatalf("appended %q, finished %+v", st.appended.String(), st.finished)
	}
	must(t, f.store.Flush(context.Background()))
	if stored, answered, _ := f.store.Lookup(context.Background(), key, "7"); !stored || answered {
		t.Errorf("stored=%v answered=%v, want the message kept unanswered", stored, answered)
	}
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
