package limits

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// TestOverflowTellsOnceAndLeavesNothingUnanswered is the red team's burst
// at a small scale: a conversation's queue holds 3 turns, one runs, ten
// messages arrive, each stored on arrival as the channels do. The six
// refused are told once ("too many messages at once") and removed from the
// history; once the turns ran, nothing is left for a restart to answer and
// nothing was answered twice.
func TestOverflowTellsOnceAndLeavesNothingUnanswered(t *testing.T) {
	ctx := context.Background()
	store := openStore(t, t.TempDir())
	key := pipeline.Key{Channel: "telegram", Chat: "5"}
	release := make(chan struct{})
	started := make(chan struct{})
	var (
		mu       sync.Mutex
		answered []string
	)
	h := pipeline.HandlerFunc(func(ctx context.Context, turn *pipeline.Turn) error {
		if turn.In.MessageID == "1" {
			close(started)
			<-release // the model is slow
		}
		mu.Lock()
		answered = append(answered, turn.In.MessageID)
		mu.Unlock()
		return store.Append(ctx, memory.Message{Key: key, Role: memory.RoleAssistant, ReplyTo: turn.In.MessageID, Text: "ok", Time: time.Now()})
	})
	out := &recorder{}
	d := pipeline.NewDispatcher(h, 4, nil, pipeline.WithMaxQueue(3), pipeline.WithRefuser(Overflow(Options{Discard: store})))
	submit := func(i int) error {
		in := private("5", "message "+strconv.Itoa(i))
		in.MessageID, in.Time = strconv.Itoa(i), time.Now()
		// What chat.Intake does on arrival.
		if err := store.Append(ctx, memory.Message{Key: key, Role: memory.RoleUser, SenderID: "5", PlatformID: in.MessageID, Text: in.Text, Time: in.Time}); err != nil {
			t.Fatal(err)
		}
		return d.Submit(in, out)
	}
	if err := submit(1); err != nil {
		t.Fatal(err)
	}
	<-started
	for i := 2; i <= 10; i++ {
		err := submit(i)
		if busy := errors.Is(err, pipeline.ErrBusy); busy != (i > 4) {
			t.Fatalf("message %d: Submit = %v", i, err)
		}
	}
	close(release)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	notices := 0
	for _, o := range out.Sent() {
		if o.Text == QueueFullText {
			notices++
		}
	}
	if notices != 1 {
		t.Errorf("%d notices for one burst of 6 refused messages, want 1: %+v", notices, out.Sent())
	}
	if len(answered) != 4 {
		t.Errorf("answered %v, want the 4 that fitted", answered)
	}
	un, err := store.Unanswered(ctx, "telegram", time.Now().Add(-time.Hour))
	if err != nil || len(un) != 0 {
		t.Errorf("left unanswered for a restart: %+v, %v", un, err)
	}
	active, err := store.Active(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range active {
		if n, _ := strconv.Atoi(m.PlatformID); m.Role == memory.RoleUser && n > 4 {
			t.Errorf("a refused message is in the history: %+v", m)
		}
	}
}
