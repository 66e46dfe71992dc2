package pipeline

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func keyN(i int) Key { return Key{Channel: "telegram", Chat: strconv.Itoa(i), Thread: "0"} }

func turnN(k Key, n int) Inbound {
	return Inbound{Key: k, SenderID: k.Chat, MessageID: strconv.Itoa(n), Text: strconv.Itoa(n)}
}

// mustShutdown shuts d down with no deadline and fails on an error.
func mustShutdown(t *testing.T, d *Dispatcher) {
	t.Helper()
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if in, q := d.Stats(); in != 0 || q != 0 {
		t.Errorf("after Shutdown Stats() = %d, %d", in, q)
	}
}

func TestDispatcherOrdersTurnsPerKey(t *testing.T) {
	tests := []struct{ keys, turns, limit int }{
		{1, 200, 4},
		{50, 40, 8},
		{200, 10, 64},
		{20, 20, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%dx%d/limit%d", tt.keys, tt.turns, tt.limit), func(t *testing.T) {
			var mu sync.Mutex
			got := map[Key][]int{}
			running := map[Key]*atomic.Int32{}
			for i := range tt.keys {
				running[keyN(i)] = new(atomic.Int32)
			}
			h := HandlerFunc(func(_ context.Context, turn *Turn) error {
				r := running[turn.In.Key]
				if r.Add(1) != 1 {
					t.Errorf("two turns of %s at once", turn.In.Key)
				}
				defer r.Add(-1)
				n, _ := strconv.Atoi(turn.In.Text)
				mu.Lock()
				got[turn.In.Key] = append(got[turn.In.Key], n)
				mu.Unlock()
				runtime.Gosched()
				return nil
			})
			d := NewDispatcher(h, tt.limit, nil)
			// Submit from several goroutines, each owning some keys, so
			// submission order per key is well defined.
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Go(func() {
					for n := range tt.turns {
						for i := w; i < tt.keys; i += 4 {
							if err := d.Submit(turnN(keyN(i), n), &recorder{}); err != nil {
								t.Errorf("Submit: %v", err)
							}
						}
					}
				})
			}
			wg.Wait()
			mustShutdown(t, d)
			for i := range tt.keys {
				seq := got[keyN(i)]
				if len(seq) != tt.turns {
					t.Fatalf("%s ran %d turns, want %d", keyN(i), len(seq), tt.turns)
				}
				for n, v := range seq {
					if v != n {
						t.Fatalf("%s ran turn %d at position %d: %v", keyN(i), v, n, seq)
					}
				}
			}
		})
	}
}

func TestDispatcherBoundsConcurrency(t *testing.T) {
	for _, limit := range []int{1, 3, 8} {
		t.Run(strconv.Itoa(limit), func(t *testing.T) {
			var cur, peak atomic.Int32
			entered := make(chan struct{})
			gate := make(chan struct{})
			h := HandlerFunc(func(context.Context, *Turn) error {
				n := cur.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				defer cur.Add(-1)
				select {
				case entered <- struct{}{}:
				case <-gate:
					return nil
				}
				<-gate
				return nil
			})
			d := NewDispatcher(h, limit, nil)
			total := 4 * limit
			for i := range total {
				if err := d.Submit(turnN(keyN(i), 0), &recorder{}); err != nil {
					t.Fatal(err)
				}
			}
			for range limit {
				<-entered
			}
			if in, q := d.Stats(); in != limit || q != total-limit {
				t.Errorf("Stats() = %d in flight, %d queued; want %d, %d", in, q, limit, total-limit)
			}
			close(gate)
			mustShutdown(t, d)
			if p := peak.Load(); int(p) != limit {
				t.Errorf("peak concurrency %d, want exactly %d", p, limit)
			}
		})
	}
}

func TestDispatcherSlowConversationDoesNotDelayOthers(t *testing.T) {
	a, b := keyN(1), keyN(2)
	blockA := make(chan struct{})
	enteredA := make(chan int, 2)
	doneB := make(chan int)
	h := HandlerFunc(func(_ context.Context, turn *Turn) error {
		n, _ := strconv.Atoi(turn.In.Text)
		switch turn.In.Key {
		case a:
			enteredA <- n
			<-blockA
		case b:
			doneB <- n
		}
		return nil
	})
	d := NewDispatcher(h, 2, nil)
	for n := range 2 {
		if err := d.Submit(turnN(a, n), &recorder{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := <-enteredA; n != 0 {
		t.Fatalf("A started with turn %d", n)
	}
	for n := range 5 {
		if err := d.Submit(turnN(b, n), &recorder{}); err != nil {
			t.Fatal(err)
		}
	}
	for want := range 5 {
		if n := <-doneB; n != want {
			t.Fatalf("B turn %d completed, want %d", n, want)
		}
	}
	// All of B is done while A's first turn still blocks and its second waits.
	if _, q := d.Stats(); q != 1 {
		t.Errorf("%d turns queued, want A's second only", q)
	}
	select {
	case n := <-enteredA:
		t.Fatalf("A's turn %d started before turn 0 finished", n)
	default:
	}
	close(blockA)
	mustShutdown(t, d)
	if n := <-enteredA; n != 1 {
		t.Errorf("A's second turn was %d", n)
	}
}

func TestDispatcherRecoversPanic(t *testing.T) {
	log, buf := testLogger()
	var mu sync.Mutex
	var handled []string
	h := HandlerFunc(func(_ context.Context, turn *Turn) error {
		switch turn.In.Text {
		case "panic":
			panic("kaboom")
		case "fail":
			return errors.New("llm unreachable")
		}
		mu.Lock()
		handled = append(handled, turn.In.Text)
		mu.Unlock()
		return nil
	})
	d := NewDispatcher(h, 1, log)
	for _, text := range []string{"panic", "after panic", "fail", "after fail"} {
		if err := d.Submit(Inbound{Key: tgKey, Text: text}, &recorder{}); err != nil {
			t.Fatal(err)
		}
	}
	mustShutdown(t, d)
	if strings.Join(handled, ",") != "after panic,after fail" {
		t.Errorf("handled %v: the lane did not go on after a panic or error", handled)
	}
	logs := buf.String()
	for _, want := range []string{"turn panicked", "kaboom", "key=telegram:123:0", "dispatcher_test.go", "turn failed", "llm unreachable"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

func TestDispatcherShutdownDrainsQueued(t *testing.T) {
	gate := make(chan struct{})
	entered := make(chan struct{})
	var handled atomic.Int32
	h := HandlerFunc(func(_ context.Context, turn *Turn) error {
		if turn.In.Text == "first" {
			close(entered)
			<-gate
		}
		handled.Add(1)
		return nil
	})
	d := NewDispatcher(h, 1, nil)
	if err := d.Submit(Inbound{Key: tgKey, Text: "first"}, &recorder{}); err != nil {
		t.Fatal(err)
	}
	<-entered
	for i := range 5 {
		if err := d.Submit(turnN(keyN(i%2), i), &recorder{}); err != nil {
			t.Fatal(err)
		}
	}
	errc := make(chan error)
	go func() { errc <- d.Shutdown(context.Background()) }()
	<-d.quit // shutdown has begun
	if err := d.Submit(Inbound{Key: tgKey, Text: "late"}, &recorder{}); !errors.Is(err, ErrStopped) {
		t.Errorf("Submit during shutdown: %v, want ErrStopped", err)
	}
	select {
	case err := <-errc:
		t.Fatalf("Shutdown returned %v while a turn was running", err)
	default:
	}
	close(gate)
	if err := <-errc; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := handled.Load(); n != 6 {
		t.Errorf("handled %d turns, want 6 (queued turns drained)", n)
	}
	if err := d.Submit(Inbound{Key: tgKey}, &recorder{}); !errors.Is(err, ErrStopped) {
		t.Errorf("Submit after shutdown: %v, want ErrStopped", err)
	}
}

func TestDispatcherShutdownDeadlineCancelsTurns(t *testing.T) {
	log, buf := testLogger()
	entered := make(chan struct{})
	causes := make(chan error, 2)
	var started atomic.Int32
	h := HandlerFunc(func(ctx context.Context, turn *Turn) error {
		started.Add(1)
		entered <- struct{}{}
		<-ctx.Done() // a turn stuck on a slow LLM call
		causes <- context.Cause(ctx)
		return ctx.Err()
	})
	d := NewDispatcher(h, 2, log)
	for i := range 5 {
		if err := d.Submit(turnN(keyN(i), 0), &recorder{}); err != nil {
			t.Fatal(err)
		}
	}
	<-entered
	<-entered
	ctx, cancel := context.WithDeadline(context.Background(), time.Now()) // already expired
	defer cancel()

	err := d.Shutdown(ctx)
	var se *ShutdownError
	if !errors.As(err, &se) || se.Cancelled != 2 || se.Discarded != 3 || se.Dropped() != 5 {
		t.Fatalf("Shutdown = %v, want 2 cancelled and 3 discarded", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "dropped 5 turns") {
		t.Errorf("Shutdown error %q", err)
	}
	// Shutdown returned: every handler has returned.
	for range 2 {
		if c := <-causes; !errors.Is(c, ErrStopped) {
			t.Errorf("turn context cause %v, want ErrStopped", c)
		}
	}
	if n := started.Load(); n != 2 {
		t.Errorf("%d turns started, want only the 2 in flight", n)
	}
	if in, q := d.Stats(); in != 0 || q != 0 {
		t.Errorf("Stats() = %d, %d after hard stop", in, q)
	}
	if again := d.Shutdown(context.Background()); !errors.Is(again, context.DeadlineExceeded) {
		t.Errorf("second Shutdown = %v, want the same error", again)
	}
	if !strings.Contains(buf.String(), "turn cancelled") {
		t.Errorf("cancelled turns not logged:\n%s", buf.String())
	}
}

func TestDispatcherSubmitErrors(t *testing.T) {
	gate := make(chan struct{})
	entered := make(chan struct{}, 1)
	h := HandlerFunc(func(context.Context, *Turn) error {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-gate
		return nil
	})
	d := NewDispatcher(h, 4, nil, WithMaxQueue(2))
	tests := []struct {
		name string
		in   Inbound
		out  Sender
		want error
	}{
		{"first runs", Inbound{Key: tgKey}, &recorder{}, nil},
		{"second queued", Inbound{Key: tgKey}, &recorder{}, nil},
		{"third queued", Inbound{Key: tgKey}, &recorder{}, nil},
		{"fourth over the cap", Inbound{Key: tgKey}, &recorder{}, ErrBusy},
		{"other key unaffected", Inbound{Key: grpKey}, &recorder{}, nil},
		{"bad key", Inbound{Key: Key{Channel: "Telegram", Chat: "1"}}, &recorder{}, ErrBadKey},
		{"zero key", Inbound{}, &recorder{}, ErrBadKey},
		{"nil sender", Inbound{Key: tgKey}, nil, errors.New("nil Sender")},
	}
	for i, tt := range tests {
		err := d.Submit(tt.in, tt.out)
		switch {
		case tt.want == nil && err != nil,
			tt.want != nil && err == nil,
			tt.want != nil && !errors.Is(err, tt.want) && !strings.Contains(err.Error(), tt.want.Error()):
			t.Errorf("%s: Submit = %v, want %v", tt.name, err, tt.want)
		}
		if i == 0 {
			<-entered // the first turn is running, so the next ones queue
		}
	}
	close(gate)
	mustShutdown(t, d)
}

func TestDispatcherRun(t *testing.T) {
	var handled atomic.Int32
	d := NewDispatcher(HandlerFunc(func(context.Context, *Turn) error {
		handled.Add(1)
		return nil
	}), 4, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() { errc <- d.Run(ctx) }()
	for i := range 20 {
		if err := d.Submit(turnN(keyN(i%3), i), &recorder{}); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := handled.Load(); n != 20 {
		t.Errorf("handled %d, want 20", n)
	}
	if err := d.Submit(turnN(tgKey, 0), &recorder{}); !errors.Is(err, ErrStopped) {
		t.Errorf("Submit after Run returned: %v", err)
	}
}

func TestDispatcherRunReturnsOnShutdown(t *testing.T) {
	d := NewDispatcher(HandlerFunc(func(context.Context, *Turn) error { return nil }), 1, nil)
	errc := make(chan error)
	go func() { errc <- d.Run(context.Background()) }()
	mustShutdown(t, d)
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestDispatcherRunGraceCancelsStuckTurn(t *testing.T) {
	entered := make(chan struct{})
	d := NewDispatcher(HandlerFunc(func(ctx context.Context, _ *Turn) error {
		close(entered)
		<-ctx.Done()
		return ctx.Err()
	}), 1, nil, WithGrace(time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() { errc <- d.Run(ctx) }()
	if err := d.Submit(turnN(tgKey, 0), &recorder{}); err != nil {
		t.Fatal(err)
	}
	<-entered
	cancel()
	var se *ShutdownError
	if err := <-errc; !errors.As(err, &se) || se.Cancelled != 1 {
		t.Fatalf("Run = %v, want one cancelled turn", err)
	}
}

func TestDispatcherLeavesNoGoroutines(t *testing.T) {
	gate := make(chan struct{})
	entered := make(chan struct{}, 100)
	d := NewDispatcher(HandlerFunc(func(context.Context, *Turn) error {
		entered <- struct{}{}
		<-gate
		return nil
	}), 16, nil)
	for i := range 100 {
		if err := d.Submit(turnN(keyN(i), 0), &recorder{}); err != nil {
			t.Fatal(err)
		}
	}
	for range 16 {
		<-entered
	}
	if n := len(pipelineGoroutines()); n != 16 {
		t.Errorf("%d pipeline goroutines while busy, want 16 workers", n)
	}
	close(gate)
	mustShutdown(t, d)
	if left := pipelineGoroutines(); len(left) > 0 {
		t.Errorf("goroutines left after Shutdown:\n%s", strings.Join(left, "\n\n"))
	}
}

// pipelineGoroutines returns the stacks of the goroutines, other than the
// caller's, that are running code of this package. A goroutine past its last
// function (only runtime.goexit left) does not count: it has finished.
func pipelineGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 {
			continue // the caller
		}
		var frames []string
		for line := range strings.SplitSeq(g, "\n") {
			if !strings.HasPrefix(line, "created by ") {
				frames = append(frames, line)
			}
		}
		if strings.Contains(strings.Join(frames, "\n"), "recall/pipeline.") {
			found = append(found, g)
		}
	}
	return found
}

func BenchmarkDispatcher(b *testing.B) {
	const keys, turns = 1000, 10
	out := &recorder{}
	msgs := make([]Inbound, 0, keys*turns)
	for n := range turns {
		for k := range keys {
			msgs = append(msgs, turnN(keyN(k), n))
		}
	}
	var total int
	start := time.Now()
	for b.Loop() {
		d := NewDispatcher(HandlerFunc(func(context.Context, *Turn) error { return nil }), 64, nil)
		for _, in := range msgs {
			if err := d.Submit(in, out); err != nil {
				b.Fatal(err)
			}
		}
		if err := d.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
		total += len(msgs)
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "turns/s")
}

// A turn past its conversation's full queue goes to the Refuser, outside
// Submit; the first of a burst is marked first, and each conversation has
// bursts of its own. A burst ends when the conversation's queue empties.
func TestDispatcherRefusesPastTheQueue(t *testing.T) {
	gate := make(chan struct{})
	entered := make(chan struct{}, 2)
	h := HandlerFunc(func(_ context.Context, turn *Turn) error {
		if turn.In.MessageID == "1" {
			entered <- struct{}{}
			<-gate
		}
		return nil
	})
	var (
		mu      sync.Mutex
		refused []string
	)
	refuser := func(_ context.Context, t *Turn, first bool) error {
		mu.Lock()
		defer mu.Unlock()
		refused = append(refused, fmt.Sprintf("%s/%s first=%v", t.In.Key, t.In.MessageID, first))
		return nil
	}
	d := NewDispatcher(h, 4, nil, WithMaxQueue(1), WithRefuser(refuser))
	submit := func(key Key, id string) error { return d.Submit(Inbound{Key: key, MessageID: id}, &recorder{}) }
	for _, k := range []Key{tgKey, grpKey} {
		if err := submit(k, "1"); err != nil {
			t.Fatal(err)
		}
		<-entered
		if err := submit(k, "2"); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"3", "4"} {
			if err := submit(k, id); !errors.Is(err, ErrBusy) {
				t.Fatalf("%s/%s: Submit = %v, want ErrBusy", k, id, err)
			}
		}
	}
	close(gate)
	mustShutdown(t, d)
	want := []string{tgKey.String() + "/3 first=true", tgKey.String() + "/4 first=false", grpKey.String() + "/3 first=true", grpKey.String() + "/4 first=false"}
	if strings.Join(refused, "|") != strings.Join(want, "|") {
		t.Errorf("refused %q, want %q", refused, want)
	}
}
