package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// Store is what answering needs from the memory store.
type Store interface {
	Settings(ctx context.Context, owner string) (memory.Settings, error)
	Enqueue(msgs ...memory.Message) error
	Append(ctx context.Context, msgs ...memory.Message) error
	WriteStats() memory.WriteStats
	AddFact(ctx context.Context, owner string, f memory.Fact) (memory.Fact, bool, error)
}

// Model answers chats.
type Model interface {
	Chat(ctx context.Context, msgs []llm.Message) (llm.Reply, error)
}

// StreamModel is a Model that can also stream its answer (llm.Client).
// onDelta is called in the caller's goroutine with each new piece of text;
// a stream broken after some text returns *llm.StreamError with the text.
type StreamModel interface {
	Stream(ctx context.Context, msgs []llm.Message, onDelta func(text string)) (llm.Reply, error)
}

// Assembler builds the prompt.
type Assembler interface {
	Build(ctx context.Context, req assemble.Request) (assemble.Prompt, error)
}

// Summarizer is poked after each stored reply.
type Summarizer interface {
	MaybeStart(ctx context.Context, key pipeline.Key, threshold int) bool
}

// Observer hears about each finished turn (metrics); may be nil.
type Observer interface {
	Turn(channel, outcome string, latency time.Duration, reply llm.Reply)
}

// Journal records the delivery of each reply (Outbox), so a restart can
// send a reply that was stored but never sent; may be nil.
type Journal interface {
	Reply(key pipeline.Key, replyTo, text string) error
	Shown(key pipeline.Key, replyTo, id string) error // a streamed reply is showing in message id
	Sending(key pipeline.Key, replyTo string) error
	Done(key pipeline.Key, replyTo string) error
}

// Options configure the responder.
type Options struct {
	SystemPrompt  string
	Facts         bool          // extract facts after each exchange
	MaxMemories   int           // user memories injected at most
	StoreTimeout  time.Duration // how long a reply waits to be durable before it is sent anyway (default 10s)
	TypingEvery   time.Duration // typing indicator refresh (default 4s)
	NotConfigured string        // reply when no LLM is configured
	Log           *slog.Logger
}

// Responder is the final stage of the chain.
type Responder struct {
	store    Store
	model    Model // nil when no LLM is configured
	asm      Assembler
	sum      Summarizer
	counter  llm.Counter
	facts    *FactExtractor
	opts     Options
	Observer Observer
	Usage    Usage // tokens per user for the daily quota; may be nil
	Journal  Journal

	mu     sync.Mutex
	warned map[pipeline.Key]time.Time // the storage outage a conversation was warned about
	bg     sync.WaitGroup
}

// New returns a Responder. model may be nil (no LLM configured): the bot
// then explains how to configure one and commands keep working.
func New(store Store, model Model, asm Assembler, sum Summarizer, counter llm.Counter, opts Options) *Responder {
	if opts.StoreTimeout <= 0 {
		opts.StoreTimeout = 10 * time.Second
	}
	if opts.TypingEvery <= 0 {
		opts.TypingEvery = 4 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.NotConfigured == "" {
		opts.NotConfigured = llm.UserMessage(llm.ErrNotConfigured)
	}
	r := &Responder{store: store, model: model, asm: asm, sum: sum, counter: counter, opts: opts, warned: map[pipeline.Key]time.Time{}}
	if opts.Facts && model != nil {
		r.facts = &FactExtractor{Model: model}
	}
	return r
}

// Wait waits for background work (fact extraction) to finish.
func (r *Responder) Wait() { r.bg.Wait() }

// Handle answers one message.
func (r *Responder) Handle(ctx context.Context, t *pipeline.Turn) error {
	in := t.In
	if !in.Addressed() {
		return nil // a group message not meant for the bot
	}
	if in.Text == "" {
		return nil
	}
	start := time.Now()
	log := t.Logger()
	settings, err := r.store.Settings(ctx, in.Key.Owner())
	if err != nil {
		return r.fail(ctx, t, "storage", fmt.Errorf("loading settings: %w", err), "Sorry, I can't reach my storage right now. Please try again in a moment.")
	}
	user := UserMessage(in, r.counter)
	if err := r.store.Enqueue(user); err != nil {
		log.Error("queueing the user message", "err", err)
		r.warnStorage(ctx, t, true)
	} else {
		r.warnStorage(ctx, t, false)
	}
	if r.model == nil {
		_, err := t.Out.Send(ctx, pipeline.Outbound{Key: in.Key, Text: r.opts.NotConfigured, Plain: true, ReplyTo: in.MessageID})
		r.observe(in.Key.Channel, "not_configured", start, llm.Reply{})
		return err
	}
	prompt, err := r.asm.Build(ctx, r.request(in, settings))
	if err != nil {
		return r.fail(ctx, t, "storage", err, "Sorry, I couldn't load our conversation from storage. Please try again in a moment.")
	}
	var (
		reply   llm.Reply
		send    = t.Out.Send // delivers the final reply (or the failure message)
		cut     bool         // the stream broke after the user saw some of it
		sm, isM = r.model.(StreamModel)
		st, isS = t.Out.(pipeline.Streamer)
	)
	if isM && isS {
		reply, send, cut, err = r.stream(ctx, t, sm, st, prompt.Messages)
	} else {
		stopTyping := r.typing(ctx, t)
		reply, err = r.model.Chat(ctx, prompt.Messages)
		stopTyping()
	}
	if err != nil {
		ferr := r.failTo(ctx, t, send, "llm_error", err, llm.UserMessage(err))
		if isM && isS && r.Journal != nil && in.MessageID != "" && ctx.Err() == nil {
			// The failure message replaced what the stream showed.
			r.journal(log, r.Journal.Done(in.Key, in.MessageID))
		}
		return ferr
	}
	r.recordUsage(ctx, t, prompt, reply)
	answer := memory.Message{
		Key: in.Key, Role: memory.RoleAssistant, ReplyTo: in.MessageID, Text: reply.Text,
		Time: time.Now(), Tokens: r.counter.Count(reply.Text),
	}
	if answer.ReplyTo == "" {
		answer.ReplyTo = in.MessageID
	}
	// The reply is durable before the user sees it: after a crash every
	// answer the user read is in the store, and a redelivered message is
	// recognized as answered. The journal tells a restart which stored
	// replies were never sent.
	journal := r.Journal != nil && answer.ReplyTo != ""
	if journal {
		r.journal(log, r.Journal.Reply(in.Key, answer.ReplyTo, reply.Text))
	}
	// While storage fails, waiting would only hold the reply back: it is
	// queued and lands once storage recovers (the user was warned).
	if r.store.WriteStats().Failing != nil {
		err = r.store.Enqueue(answer)
	} else {
		sctx, cancel := context.WithTimeout(ctx, r.opts.StoreTimeout)
		err = r.store.Append(sctx, answer)
		cancel()
	}
	if err != nil {
		log.Error("storing the reply before sending it", "err", err)
	}
	if journal {
		r.journal(log, r.Journal.Sending(in.Key, answer.ReplyTo))
	}
	_, serr := send(ctx, pipeline.Outbound{Key: in.Key, Text: reply.Text, ReplyTo: in.MessageID})
	if journal && (serr == nil || ctx.Err() == nil) {
		// Answered by the platform. (Cut short by a stop, it stays open:
		// the next start cannot know whether it was delivered.)
		r.journal(log, r.Journal.Done(in.Key, answer.ReplyTo))
	}
	if serr != nil {
		r.observe(in.Key.Channel, "send_error", start, reply)
		return fmt.Errorf("sending the reply: %w", serr)
	}
	if err != nil {
		r.warnStorage(ctx, t, true)
	}
	if cut {
		r.observe(in.Key.Channel, "llm_error", start, reply)
		return nil // a partial answer teaches no facts; the user was told
	}
	r.observe(in.Key.Channel, "ok", start, reply)
	if settings.MemoryEnabled && r.sum != nil {
		r.sum.MaybeStart(ctx, in.Key, settings.Threshold)
	}
	if r.facts != nil && settings.MemoryEnabled {
		r.bg.Add(1)
		go func() {
			defer r.bg.Done()
			fctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			r.extractFacts(fctx, in, reply.Text, log)
		}()
	}
	return nil
}

// journal logs a failure to record a delivery step (the reply still goes
// out; only a crash right now could lose or repeat it).
func (r *Responder) journal(log *slog.Logger, err error) {
	if err != nil {
		log.Warn("recording the delivery of a reply", "err", err)
	}
}

func (r *Responder) request(in pipeline.Inbound, st memory.Settings) assemble.Request {
	return assemble.Request{
		Key: in.Key, Text: in.Text, MessageID: in.MessageID, SystemPrompt: r.opts.SystemPrompt,
		Memory: st.MemoryEnabled, Facts: r.opts.Facts, MaxMemories: r.opts.MaxMemories,
	}
}

// Preview assembles without calling the LLM (for /context and `bot context`).
func (r *Responder) Preview(ctx context.Context, key pipeline.Key, text string) (assemble.Breakdown, error) {
	p, err := r.Prompt(ctx, key, text)
	return p.Breakdown, err
}

// Search finds snippets of the conversation for text as a turn does (for
// /search), when the assembler can.
func (r *Responder) Search(ctx context.Context, key pipeline.Key, text string, budget int) ([]assemble.Snippet, error) {
	s, ok := r.asm.(interface {
		Search(ctx context.Context, key pipeline.Key, text string, budget int) ([]assemble.Snippet, error)
	})
	if !ok {
		return nil, errors.New("this assembler does not search")
	}
	return s.Search(ctx, key, text, budget)
}

// Prompt assembles the prompt the next message would get.
func (r *Responder) Prompt(ctx context.Context, key pipeline.Key, text string) (assemble.Prompt, error) {
	st, err := r.store.Settings(ctx, key.Owner())
	if err != nil {
		return assemble.Prompt{}, err
	}
	return r.asm.Build(ctx, r.request(pipeline.Inbound{Key: key, Text: text}, st))
}

// stream asks the model for a streamed answer, shown by st as it grows. The
// typing indicator runs until the first text. send finishes the stream: it
// delivers the final reply, or the failure message. When the stream broke
// after the user saw some text, the reply is that text with a note saying
// it was cut off (cut): it is stored and delivered like any reply, so what
// the user read is in the history, and the message is not answered again
// after a restart. A stream cut because the turn was cancelled (the bot
// stopping) is left as a crash leaves it.
func (r *Responder) stream(ctx context.Context, t *pipeline.Turn, sm StreamModel, st pipeline.Streamer, msgs []llm.Message) (
	reply llm.Reply, send func(context.Context, pipeline.Outbound) (string, error), cut bool, err error) {
	s := st.Stream(ctx, t.In.Key, t.In.MessageID)
	if ss, ok := s.(pipeline.ShownStream); ok && r.Journal != nil && t.In.MessageID != "" {
		// A crash before the reply is stored leaves that message showing
		// part of it: the next start replaces it with a note.
		key, replyTo, log := t.In.Key, t.In.MessageID, t.Logger()
		ss.OnShown(func(id string) { r.journal(log, r.Journal.Shown(key, replyTo, id)) })
	}
	tctx, cancelTyping := context.WithCancel(ctx)
	defer cancelTyping()
	stopTyping := r.typing(tctx, t)
	first := true
	reply, err = sm.Stream(ctx, msgs, func(d string) {
		if first {
			first = false
			cancelTyping() // the text itself shows the bot is answering
		}
		s.Append(d)
	})
	stopTyping()
	var se *llm.StreamError
	if errors.As(err, &se) && errors.Is(err, context.Canceled) && ctx.Err() != nil {
		// The turn was cancelled: the bot is stopping. As after a crash,
		// nothing is stored and the message is answered again at the next
		// start, which replaces what was shown with a note (Outbox).
		return reply, s.Finish, false, err
	}
	if errors.As(err, &se) && strings.TrimSpace(se.Partial) != "" {
		t.Logger().Error("the streamed answer broke off; keeping what was shown", "err", err, "partial_bytes", len(se.Partial))
		reply.Text = se.Partial + "\n\n⚠️ " + llm.UserMessage(err)
		return reply, s.Finish, true, nil
	}
	return reply, s.Finish, false, err
}

func (r *Responder) fail(ctx context.Context, t *pipeline.Turn, outcome string, err error, userText string) error {
	return r.failTo(ctx, t, t.Out.Send, outcome, err, userText)
}

// failTo logs a failed turn and tells the user through send.
func (r *Responder) failTo(ctx context.Context, t *pipeline.Turn, send func(context.Context, pipeline.Outbound) (string, error),
	outcome string, err error, userText string) error {
	t.Logger().Error("turn failed", "outcome", outcome, "err", err)
	r.observe(t.In.Key.Channel, outcome, time.Now(), llm.Reply{})
	if _, serr := send(ctx, pipeline.Outbound{Key: t.In.Key, Text: userText, Plain: true, ReplyTo: t.In.MessageID}); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}

func (r *Responder) observe(channel, outcome string, start time.Time, reply llm.Reply) {
	if r.Observer != nil {
		r.Observer.Turn(channel, outcome, time.Since(start), reply)
	}
}

// warnStorage tells a conversation once per storage outage that its
// messages are not being saved yet (they stay queued and are retried).
func (r *Responder) warnStorage(ctx context.Context, t *pipeline.Turn, force bool) {
	st := r.store.WriteStats()
	key := t.In.Key
	r.mu.Lock()
	if st.Failing == nil && !force {
		delete(r.warned, key)
		r.mu.Unlock()
		return
	}
	since := st.Since
	if w, ok := r.warned[key]; ok && (w.Equal(since) || w.IsZero()) {
		// Warned already in this outage: a forced warning (a reply
		// that could not be stored in time) may come before the writer
		// reports failing.
		r.warned[key] = since
		r.mu.Unlock()
		return
	}
	r.warned[key] = since
	r.mu.Unlock()
	_, _ = t.Out.Send(ctx, pipeline.Outbound{Key: key, Plain: true,
		Text: "⚠️ I'm having trouble saving messages right now. I'll keep going and save them as soon as storage recovers."})
}

// typing shows the typing indicator until the returned func is called.
func (r *Responder) typing(ctx context.Context, t *pipeline.Turn) func() {
	typer, ok := t.Out.(pipeline.Typer)
	if !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(r.opts.TypingEvery)
		defer tick.Stop()
		for {
			// A failing typing indicator never blocks or fails the turn.
			tctx, tcancel := context.WithTimeout(ctx, 2*time.Second)
			_ = typer.Typing(tctx, t.In.Key)
			tcancel()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

func (r *Responder) extractFacts(ctx context.Context, in pipeline.Inbound, reply string, log *slog.Logger) {
	facts, err := r.facts.Extract(ctx, in.Text, reply)
	if err != nil {
		log.Warn("fact extraction failed", "err", err)
		return
	}
	for _, f := range facts {
		f.Key = in.Key.String()
		if in.MessageID != "" {
			f.Sources = []string{in.MessageID}
		}
		if _, _, err := r.store.AddFact(ctx, in.Key.Owner(), f); err != nil {
			log.Warn("storing a fact", "err", err)
			return
		}
	}
}
