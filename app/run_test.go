package app

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/pipeline"
)

// fakeChannel is a platform: it delivers scripted messages through the
// wiring, then waits for the stop or fails as told.
type fakeChannel struct {
	name     string
	out      *notifySender
	deliver  []pipeline.Inbound
	fail     error // Run returns it at once
	connects bool
}

// notifySender is a sender that signals each message on sent.
type notifySender struct {
	sender
	sent chan pipeline.Outbound
}

func (s *notifySender) Send(ctx context.Context, out pipeline.Outbound) (string, error) {
	s.sender.Send(ctx, out)
	s.sent <- out
	return "", nil
}

func (c *fakeChannel) make(w Wiring) (Channel, error) {
	run := func(ctx context.Context) error {
		if c.fail != nil {
			return c.fail
		}
		for _, in := range c.deliver {
			if err := w.Accept(ctx, in); err != nil {
				return err
			}
			if err := w.Submit(in, c.out); err != nil {
				return err
			}
		}
		<-ctx.Done()
		return nil
	}
	return Channel{Name: c.name, Sender: c.out, Run: run, Connects: c.connects}, nil
}

func inbound(channel, id, text string) pipeline.Inbound {
	return pipeline.Inbound{Key: pipeline.Key{Channel: channel, Chat: "7"}, SenderID: "7", MessageID: id, Text: text, Time: time.Now()}
}

// One loop runs every channel: a message accepted by the last run but never
// answered is answered at the start, through its channel; a channel that
// connects and fails stops alone while the others keep answering.
func TestRunAnswersWhatTheLastRunLeft(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Echo("echo: "))
	cfg := testConfig(t, srv)
	ctx := t.Context()

	// The last run accepted a message and stopped before answering it.
	last, err := New(ctx, cfg, Parts{LogWriter: discard{}, Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := last.Intake.Accept(ctx, inbound("alpha", "1", "are you there?")); err != nil {
		t.Fatal(err)
	}
	if err := last.Close(); err != nil {
		t.Fatal(err)
	}

	a, err := New(ctx, cfg, Parts{LogWriter: discard{}, Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	alpha := &fakeChannel{name: "alpha", out: &notifySender{sent: make(chan pipeline.Outbound, 4)},
		deliver: []pipeline.Inbound{inbound("alpha", "2", "hello")}}
	beta := &fakeChannel{name: "beta", out: &notifySender{sent: make(chan pipeline.Outbound, 4)},
		fail: errors.New("logged out"), connects: true}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx, alpha.make, beta.make) }()
	got := map[string]bool{}
	for range 2 {
		select {
		case out := <-alpha.out.sent:
			got[out.Text] = true
		case <-time.After(30 * time.Second):
			t.Fatalf("alpha was sent only %v", got)
		}
	}
	if !got["echo: are you there?"] || !got["echo: hello"] {
		t.Errorf("alpha was sent %v; want the answers to the message left unanswered and to the new one", got)
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("Run = %v; a connecting channel's failure stops only that channel", err)
	}
}

// A channel that does not connect and fails stops the bot with its error.
func TestRunStopsWhenAChannelFails(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Echo("echo: "))
	a, err := New(t.Context(), testConfig(t, srv), Parts{LogWriter: discard{}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	bad := errors.New("the token was revoked")
	ch := &fakeChannel{name: "alpha", out: &notifySender{sent: make(chan pipeline.Outbound, 1)}, fail: bad}
	if err := a.Run(t.Context(), ch.make); !errors.Is(err, bad) {
		t.Errorf("Run = %v, want the channel's failure", err)
	}
}

// A stop that comes while the channels are starting (a channel's unanswered
// messages being listed) is a clean stop: Run returns nil, and the channels
// already running have stopped by then.
func TestRunStoppedWhileStarting(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Echo("echo: "))
	a, err := New(t.Context(), testConfig(t, srv), Parts{LogWriter: discard{}, Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	runCtx, stop := context.WithCancel(t.Context())
	alphaDone := make(chan struct{})
	alpha := func(w Wiring) (Channel, error) {
		run := func(ctx context.Context) error {
			<-ctx.Done()
			close(alphaDone)
			return nil
		}
		return Channel{Name: "alpha", Sender: &notifySender{sent: make(chan pipeline.Outbound, 1)}, Run: run}, nil
	}
	beta := func(w Wiring) (Channel, error) {
		stop() // the stop arrives while beta is being started
		run := func(ctx context.Context) error { <-ctx.Done(); return nil }
		return Channel{Name: "beta", Sender: &notifySender{sent: make(chan pipeline.Outbound, 1)}, Run: run, Connects: true}, nil
	}
	if err := a.Run(runCtx, alpha, beta); err != nil {
		t.Errorf("Run = %v; a stop while starting is not a failure", err)
	}
	select {
	case <-alphaDone:
	default:
		t.Error("Run returned while the channel it had started was still running")
	}
}
