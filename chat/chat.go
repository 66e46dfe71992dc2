package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
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
	// MarkHandled records that a message's turn ended without a reply
	// stored for it (it failed and the user was told), so that it is not
	// answered after a restart (memory.Store.Unanswered).
	MarkHandled(ctx context.Context, key pipeline.Key, platformID string) (first bool, err error)
	// TrimToWindow deletes the conversation's messages written since a
	// time that are older than its last keep exchanges (memory off).
	TrimToWindow(ctx context.Context, key pipeline.Key, since time.Time, keep int) (int, error)
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

// Summarizer is poked after each stored reply. onFail hears, once per
// failure streak, that a background summary failed.
type Summarizer interface {
	MaybeStart(ctx context.Context, key pipeline.Key, threshold int, onFail func(ctx context.Context, err error)) bool
}

// Observer hears about each finished turn (metrics).
type Observer interface {
	Turn(channel, outcome string, latency time.Duration, reply llm.Reply)
}

// Journal records the delivery of each reply (Outbox), so a restart can
// send a reply that was stored but never sent.
type Journal interface {
	Reply(key pipeline.Key, replyTo, text string) error
	Shown(key pipeline.Key, replyTo, id string) error // a streamed reply is showing in message id
	Sending(key pipeline.Key, replyTo string) error
	Failed(key pipeline.Key, replyTo string) error // not taken yet (pipeline.ErrNotDelivered): stays pending
	Done(key pipeline.Key, replyTo string) error
}

// Vision hears that the model refused a turn's images (media.Stage): it
// remembers that this model takes none, tells the user once how to change
// that, and returns the text the model reads instead of the turn's.
type Vision interface {
	ImagesRefused(ctx context.Context, t *pipeline.Turn, err error) (text string)
}

// cannotSee is what the model reads for a photo it refused, when no Vision
// says otherwise.
const cannotSee = "[the user sent a photo you cannot see]"

// WaitNoter is a Sender that can show a short note while a slow answer is
// awaited and take it away again (the terminal erases it). A platform that
// cannot take a message away does not implement it: it is sent the note as
// a message (Send), and its typing indicator goes on.
type WaitNoter interface {
	ShowWaitNote(ctx context.Context, key pipeline.Key, text string) (remove func(context.Context) error, err error)
}

// StillThinking is the note shown after Options.StillThinkingAfter, once
// per turn: by a WaitNoter, or sent as a message.
const StillThinking = "⏳ still thinking…"

// Options configure the responder.
type Options struct {
	SystemPrompt string
	Facts        bool          // extract facts after each exchange
	MaxMemories  int           // user memories injected at most
	KeepRecent   int           // exchanges kept while memory is off (memory.keep_recent_turns; default 4)
	StoreTimeout time.Duration // how long a reply waits to be durable before it is sent anyway (default 10s)
	TypingEvery  time.Duration // typing indicator refresh (default 4s)
	// StillThinkingAfter is the wait for an answer after which the user
	// is shown StillThinking, once per turn (a WaitNoter shows it until
	// the answer starts; other senders get it as a message); 0 = never.
	StillThinkingAfter time.Duration
	NotConfigured      string // reply when no LLM is configured
	Log                *slog.Logger
	Tools              Tools // memory tools offered to the model (none when zero)
	// ContextWindow is the model's context window in tokens (0: from
	// llm.ContextWindow's table); the prompt is capped to it less
	// ReplyReserve (the reply's max_tokens).
	ContextWindow, ReplyReserve int

	// Observer hears about each finished turn (metrics); nil hears nothing.
	Observer Observer
	// Usage hears what each answer cost (the daily token quota); nil
	// records nothing.
	Usage Usage
	// Journal records the delivery of each reply (the Outbox); nil
	// records nothing (a crash may then lose a stored reply's delivery).
	Journal Journal
	// Vision hears when the model refuses a turn's images (the turn is
	// then answered without them); nil: the model is told it cannot see
	// the photo.
	Vision Vision
}

// Responder is the final stage of the chain: it answers a turn (assemble,
// LLM), delivers the answer (durable first, then sent), and starts what
// comes after (summaries, facts). It owns the fact extractions it starts:
// their contexts derive from a base context that Close cancels.
type Responder struct {
	store   Store
	model   Model // nil when no LLM is configured
	asm     Assembler
	sum     Summarizer
	counter llm.Counter
	facts   *FactExtractor
	opts    Options
	base    context.Context // parent of background work; Close cancels it
	stop    context.CancelFunc

	tools       Tools
	toolSupport toolSupport
	toolsOnce   sync.Once
	toolTokens  int // toolOverhead, counted once

	mu      sync.Mutex
	warned  map[pipeline.Key]time.Time // the storage outage a conversation was warned about
	learned int                        // the prompt cap a context-length error taught (0: none)
	called  map[pipeline.Key][]string  // the tools each conversation's last answer called (bounded: maxCalledKeys)
	closed  bool                       // Close was called: no new background work
	bg      sync.WaitGroup
}

// New returns a Responder. store, asm and counter are required; model may
// be nil (no LLM configured): the bot then explains how to configure one and
// commands keep working. sum may be nil (no background summaries).
func New(store Store, model Model, asm Assembler, sum Summarizer, counter llm.Counter, opts Options) *Responder {
	if store == nil || asm == nil || counter == nil {
		panic("chat.New: the store, the assembler and the token counter are required")
	}
	if opts.StoreTimeout <= 0 {
		opts.StoreTimeout = 10 * time.Second
	}
	if opts.TypingEvery <= 0 {
		opts.TypingEvery = 4 * time.Second
	}
	if opts.KeepRecent <= 0 {
		opts.KeepRecent = 4
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.NotConfigured == "" {
		opts.NotConfigured = llm.UserMessage(llm.ErrNotConfigured)
	}
	r := &Responder{store: store, model: model, asm: asm, sum: sum, counter: counter, opts: opts, tools: opts.Tools, warned: map[pipeline.Key]time.Time{}}
	r.base, r.stop = context.WithCancel(context.Background())
	if opts.Facts && model != nil {
		r.facts = &FactExtractor{Model: model}
	}
	return r
}

// factTimeout bounds one fact extraction.
const factTimeout = 2 * time.Minute

// Wait waits for background work (fact extraction) to finish.
func (r *Responder) Wait() { r.bg.Wait() }

// Close refuses new background work and lets the fact extractions in
// progress finish until ctx ends; then it cancels them and returns once
// they have returned. The error says work was cut.
func (r *Responder) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		r.bg.Wait()
		close(done)
	}()
	select {
	case <-done:
		r.stop()
		return nil
	case <-ctx.Done():
	}
	r.stop()
	<-done
	return fmt.Errorf("stopping fact extraction: %w", context.Cause(ctx))
}

// answered is what answer produced for deliver.
type answered struct {
	reply llm.Reply
	send  func(context.Context, pipeline.Outbound) (string, error) // delivers the final reply (or the failure message)
	cut   bool                                                     // the stream broke after the user saw some of it
}

// Handle answers one message: answer (assemble, ask the model), deliver
// (durable, then sent), after (summaries, facts).
func (r *Responder) Handle(ctx context.Context, t *pipeline.Turn) error {
	in := t.In
	if !in.Addressed() {
		return nil // a group message not meant for the bot
	}
	if in.Text == "" {
		return nil
	}
	start := time.Now()
	settings, err := r.store.Settings(ctx, in.Key.Owner())
	if err != nil {
		return r.fail(ctx, t, "storage", fmt.Errorf("loading settings: %w", err), "Sorry, I can't reach my storage right now. Please try again in a moment.")
	}
	if err := r.store.Enqueue(UserMessage(in, r.counter)); err != nil {
		t.Logger().Error("queueing the user message", "err", err)
		r.warnStorage(ctx, t, true)
	} else {
		r.warnStorage(ctx, t, false)
	}
	if r.model == nil {
		_, err := t.Out.Send(ctx, pipeline.Outbound{Key: in.Key, Text: r.opts.NotConfigured, Plain: true, ReplyTo: in.MessageID})
		r.observe(in.Key.Channel, "not_configured", start, llm.Reply{})
		return err
	}
	a, err := r.answer(ctx, t, settings)
	if err != nil {
		return err // the user was told
	}
	if err := r.deliver(ctx, t, a, start); err != nil {
		return err
	}
	if !settings.MemoryEnabled {
		r.trimWindow(ctx, t, settings)
	}
	if a.cut {
		r.observe(in.Key.Channel, "llm_error", start, a.reply)
		return nil // a partial answer teaches no facts; the user was told
	}
	r.observe(in.Key.Channel, "ok", start, a.reply)
	r.after(ctx, t, settings, a.reply)
	return nil
}

// answer assembles the prompt and asks the model, streaming when both the
// model and the sender can. An error ends the turn: the user was told.
func (r *Responder) answer(ctx context.Context, t *pipeline.Turn, settings memory.Settings) (answered, error) {
	in := t.In
	log := t.Logger()
	model, tools := r.turnModel(in, settings, log)
	req := r.request(in, settings)
	req.MaxTotal = tools.promptRoom(req.MaxTotal)
	prompt, err := r.asm.Build(ctx, req)
	if err != nil {
		return answered{}, r.fail(ctx, t, "storage", err, "Sorry, I couldn't load our conversation from storage. Please try again in a moment.")
	}
	a := answered{send: t.Out.Send}
	sm, isM := model.(StreamModel)
	st, isS := t.Out.(pipeline.Streamer)
	note := &stillThinking{}
	ask := func(msgs []llm.Message) {
		tools.fitResults(r.promptCap(), prompt.Breakdown.Total)
		if isM && isS {
			a.reply, a.send, a.cut, err = r.stream(ctx, t, sm, st, msgs, note)
		} else {
			stopTyping := r.typing(ctx, t, note)
			a.reply, err = model.Chat(ctx, msgs)
			stopTyping()
		}
	}
	ask(prompt.Messages)
	if in.Image != nil && llm.IsImageRejected(err) && !a.cut && ctx.Err() == nil {
		// The model takes no images: it answers the text, told that a
		// photo came that it cannot see.
		text := cannotSee + "\n" + in.Text
		if r.opts.Vision != nil {
			text = r.opts.Vision.ImagesRefused(ctx, t, err)
		}
		in.Text, in.Image = text, nil
		req := r.request(in, settings)
		req.MaxTotal = tools.promptRoom(req.MaxTotal)
		if prompt, err = r.asm.Build(ctx, req); err != nil {
			return answered{}, r.fail(ctx, t, "storage", err, "Sorry, I couldn't load our conversation from storage. Please try again in a moment.")
		}
		ask(prompt.Messages)
	}
	for retry := 0; retry < maxCompactions; retry++ {
		w, ok := llm.IsContextLength(err)
		if !ok || a.cut || ctx.Err() != nil || (w > 0 && retry > 0) {
			break
		}
		// Emergency compaction: the model's window is smaller than we
		// thought. Rebuild at a budget that fits and try again: once when
		// the provider named its window, a few times, halving, when not.
		req := r.request(in, settings)
		req.MaxTotal = tools.promptRoom(r.learnWindow(w, prompt.Breakdown.Total, log))
		smaller, berr := r.asm.Build(ctx, req)
		if berr != nil || smaller.Breakdown.Total >= prompt.Breakdown.Total {
			break
		}
		prompt = smaller
		ask(prompt.Messages)
	}
	if err == nil {
		a.reply.Text += tools.announce()
	}
	r.rememberCalls(in.Key, tools)
	if err != nil && errors.Is(context.Cause(ctx), pipeline.ErrInterrupted) {
		return answered{}, r.interrupted(ctx, t, a.send, err)
	}
	if err != nil {
		ferr := r.failTo(ctx, t, a.send, "llm_error", err, llm.UserMessage(err))
		if isM && isS && r.opts.Journal != nil && in.MessageID != "" && ctx.Err() == nil {
			// The failure message replaced what the stream showed.
			r.journal(t.Logger(), r.opts.Journal.Done(in.Key, in.MessageID))
		}
		return answered{}, ferr
	}
	r.recordUsage(ctx, t, prompt, a.reply)
	return a, nil
}

// deliver makes the reply durable, then sends it. The reply is durable
// before the user sees it: after a crash every answer the user read is in
// the store, and a redelivered message is recognized as answered. The
// journal tells a restart which stored replies were never sent.
func (r *Responder) deliver(ctx context.Context, t *pipeline.Turn, a answered, start time.Time) error {
	in, log := t.In, t.Logger()
	answer := memory.Message{
		Key: in.Key, Role: memory.RoleAssistant, ReplyTo: in.MessageID, Text: a.reply.Text,
		Time: time.Now(), Tokens: r.counter.Count(a.reply.Text),
	}
	journal := r.opts.Journal != nil && answer.ReplyTo != ""
	if journal {
		r.journal(log, r.opts.Journal.Reply(in.Key, answer.ReplyTo, a.reply.Text))
	}
	// While storage fails, waiting would only hold the reply back: it is
	// queued and lands once storage recovers (the user was warned).
	var err error
	if r.store.WriteStats().Failing != nil {
		err = r.store.Enqueue(answer)
	} else {
		sctx := ctx
		if errors.Is(context.Cause(ctx), pipeline.ErrInterrupted) {
			// The answer came before the user's cancel: it is stored and
			// shown whole, not shown unstored.
			sctx = context.WithoutCancel(ctx)
		}
		sctx, cancel := context.WithTimeout(sctx, r.opts.StoreTimeout)
		err = r.store.Append(sctx, answer)
		cancel()
	}
	if err != nil {
		log.Error("storing the reply before sending it", "err", err)
	}
	if journal {
		r.journal(log, r.opts.Journal.Sending(in.Key, answer.ReplyTo))
	}
	_, serr := a.send(ctx, pipeline.Outbound{Key: in.Key, Text: a.reply.Text, ReplyTo: in.MessageID})
	switch {
	case !journal:
	case serr != nil && ctx.Err() != nil:
		// Cut short by a stop, it stays open: the next start cannot know
		// whether it was delivered.
	case serr != nil && errors.Is(serr, pipeline.ErrNotDelivered):
		// Not taken by the platform (not connected, rate limited): it
		// stays pending and is sent again once the channel is back.
		r.journal(log, r.opts.Journal.Failed(in.Key, answer.ReplyTo))
	default:
		// Answered by the platform: delivered, or refused for good.
		r.journal(log, r.opts.Journal.Done(in.Key, answer.ReplyTo))
	}
	if serr != nil {
		r.observe(in.Key.Channel, "send_error", start, a.reply)
		return fmt.Errorf("sending the reply: %w", serr)
	}
	if err != nil {
		r.warnStorage(ctx, t, true)
	}
	return nil
}

// summaryFailed is what a conversation reads, once per failure streak, when
// its background summary failed.
const summaryFailed = "⚠️ I couldn't update my summary of our conversation. Nothing was archived and nothing is lost; I'll retry."

// noticeTimeout bounds sending a notice from background work.
const noticeTimeout = 30 * time.Second

// after starts the work that follows a delivered answer: the summary when
// its trigger holds (a failure is told to the conversation through the
// turn's sender, once per failure streak), and fact extraction.
func (r *Responder) after(ctx context.Context, t *pipeline.Turn, settings memory.Settings, reply llm.Reply) {
	if !settings.MemoryEnabled {
		return
	}
	in, log := t.In, t.Logger()
	if r.sum != nil {
		out := t.Out
		r.sum.MaybeStart(ctx, in.Key, settings.Threshold, func(ctx context.Context, err error) {
			nctx, cancel := context.WithTimeout(ctx, noticeTimeout)
			defer cancel()
			if _, serr := out.Send(nctx, pipeline.Outbound{Key: in.Key, Text: summaryFailed, Plain: true}); serr != nil {
				log.Warn("telling the conversation its summary failed", "err", serr)
			}
		})
	}
	if r.facts == nil || settings.FactsOff {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		fctx, cancel := context.WithTimeout(r.base, factTimeout)
		defer cancel()
		r.extractFacts(fctx, in, reply.Text, log)
	}()
}

// trimWindow keeps, while the owner's memory is off, nothing written since
// it went off (Settings.Updated) beyond the conversation's recent window:
// the older messages are deleted, not archived. A failure is logged; the
// next reply tries again.
func (r *Responder) trimWindow(ctx context.Context, t *pipeline.Turn, settings memory.Settings) {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.StoreTimeout)
	defer cancel()
	if _, err := r.store.TrimToWindow(tctx, t.In.Key, settings.Updated, r.opts.KeepRecent); err != nil {
		t.Logger().Warn("memory is off: deleting what left the recent window", "err", err)
	}
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
		Key: in.Key, Text: promptText(in), Images: llmImages(in.Image), MessageID: in.MessageID, SystemPrompt: r.opts.SystemPrompt,
		Memory: st.MemoryEnabled, Facts: r.opts.Facts && !st.FactsOff, MaxMemories: r.opts.MaxMemories,
		MaxTotal: r.promptCap(),
	}
}

// promptText is what the model reads for a message: its Prompt (a long
// document's relevant part) or its Text.
func promptText(in pipeline.Inbound) string {
	if in.Prompt != "" {
		return in.Prompt
	}
	return in.Text
}

// llmImages is a turn's image as the model takes it.
func llmImages(im *pipeline.Image) []llm.Image {
	if im == nil {
		return nil
	}
	return []llm.Image{{JPEG: im.JPEG, Width: im.Width, Height: im.Height, Tokens: im.Tokens}}
}

// Preview assembles without calling the LLM (for /context and `bot context`).
func (r *Responder) Preview(ctx context.Context, key pipeline.Key, text string) (assemble.Breakdown, error) {
	p, err := r.Prompt(ctx, key, text)
	if err == nil {
		p.Breakdown.Notes = append(p.Breakdown.Notes, r.toolNotes(key)...)
	}
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
	in := pipeline.Inbound{Key: key, Text: text}
	req := r.request(in, st)
	_, tools := r.turnModel(in, st, r.opts.Log)
	req.MaxTotal = tools.promptRoom(req.MaxTotal)
	return r.asm.Build(ctx, req)
}

// stream asks the model for a streamed answer, shown by st as it grows. The
// typing indicator runs until the first text. send finishes the stream: it
// delivers the final reply, or the failure message. When the stream broke
// after the user saw some text, the reply is that text with a note saying
// it was cut off (cut): it is stored and delivered like any reply, so what
// the user read is in the history, and the message is not answered again
// after a restart. A stream cut because the turn was cancelled (the bot
// stopping) is left as a crash leaves it.
func (r *Responder) stream(ctx context.Context, t *pipeline.Turn, sm StreamModel, st pipeline.Streamer, msgs []llm.Message, note *stillThinking) (
	reply llm.Reply, send func(context.Context, pipeline.Outbound) (string, error), cut bool, err error) {
	s := st.Stream(ctx, t.In.Key, t.In.MessageID)
	if ss, ok := s.(pipeline.ShownStream); ok && r.opts.Journal != nil && t.In.MessageID != "" {
		// A crash before the reply is stored leaves that message showing
		// part of it: the next start replaces it with a note.
		key, replyTo, log := t.In.Key, t.In.MessageID, t.Logger()
		ss.OnShown(func(id string) { r.journal(log, r.opts.Journal.Shown(key, replyTo, id)) })
	}
	tctx, cancelTyping := context.WithCancel(ctx)
	defer cancelTyping()
	stopTyping := r.typing(tctx, t, note)
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

// Interrupted is what the user reads when they stopped an answer
// (pipeline.ErrInterrupted).
const Interrupted = "Cancelled: I stopped answering. Your message is kept; write again when you're ready."

// interrupted ends a turn its user cancelled (pipeline.ErrInterrupted):
// nothing of the answer is stored (what a stream showed is replaced by the
// note), the user's message stays, and it is recorded as handled so that a
// restart does not answer it. The error says the turn was cancelled.
func (r *Responder) interrupted(ctx context.Context, t *pipeline.Turn, send func(context.Context, pipeline.Outbound) (string, error), err error) error {
	// The turn's context is over: what remains to do is quick and bounded.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), usageTimeout)
	defer cancel()
	r.observe(t.In.Key.Channel, "cancelled", time.Now(), llm.Reply{})
	err = fmt.Errorf("answering: %w (%w)", pipeline.ErrInterrupted, err)
	if _, serr := send(ctx, pipeline.Outbound{Key: t.In.Key, Text: Interrupted, Plain: true, ReplyTo: t.In.MessageID}); serr != nil {
		err = errors.Join(err, serr)
	}
	if t.In.MessageID != "" {
		if _, merr := r.store.MarkHandled(ctx, t.In.Key, t.In.MessageID); merr != nil {
			t.Logger().Warn("recording a cancelled turn as handled", "err", merr)
		}
	}
	return err
}

func (r *Responder) fail(ctx context.Context, t *pipeline.Turn, outcome string, err error, userText string) error {
	return r.failTo(ctx, t, t.Out.Send, outcome, err, userText)
}

// failTo tells the user through send that the turn failed and returns why;
// the caller of the chain (the dispatcher, the terminal chat) logs it, once.
// Once the user is told, the message is recorded as handled: the turn ran,
// and a restart must not answer it late (the user was asked to write
// again). A turn cut short by a stop is not: the next start answers it.
func (r *Responder) failTo(ctx context.Context, t *pipeline.Turn, send func(context.Context, pipeline.Outbound) (string, error),
	outcome string, err error, userText string) error {
	r.observe(t.In.Key.Channel, outcome, time.Now(), llm.Reply{})
	if _, serr := send(ctx, pipeline.Outbound{Key: t.In.Key, Text: userText, Plain: true, ReplyTo: t.In.MessageID}); serr != nil {
		return errors.Join(err, serr)
	}
	if t.In.MessageID != "" && ctx.Err() == nil {
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), usageTimeout)
		if _, merr := r.store.MarkHandled(mctx, t.In.Key, t.In.MessageID); merr != nil {
			t.Logger().Warn("recording a failed turn as handled", "err", merr)
		}
		cancel()
	}
	return err
}

func (r *Responder) observe(channel, outcome string, start time.Time, reply llm.Reply) {
	if r.opts.Observer != nil {
		r.opts.Observer.Turn(channel, outcome, time.Since(start), reply)
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

// stillThinking records that a turn's "still thinking" note was shown: a
// turn asks the model more than once (a smaller prompt, no image) but
// shows the note once.
type stillThinking struct{ shown atomic.Bool }

// typing shows the typing indicator until the returned func is called, and
// after StillThinkingAfter the "still thinking" note unless note says the
// turn showed it already: where the platform can take it away (a
// WaitNoter: it is taken away before the func returns), or else sent as a
// message. The typing indicator is renewed at once after it (Telegram ends
// it with any message).
func (r *Responder) typing(ctx context.Context, t *pipeline.Turn, note *stillThinking) func() {
	typer, isTyper := t.Out.(pipeline.Typer)
	noter, isNoter := t.Out.(WaitNoter)
	slowNote := r.opts.StillThinkingAfter > 0 && !note.shown.Load()
	if !isTyper && !slowNote {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(r.opts.TypingEvery)
		defer tick.Stop()
		var slow <-chan time.Time
		if slowNote {
			st := time.NewTimer(r.opts.StillThinkingAfter)
			defer st.Stop()
			slow = st.C
		}
		var remove func(context.Context) error
		defer func() {
			if remove != nil {
				rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
				if err := remove(rctx); err != nil {
					t.Logger().Debug("taking the still-thinking note away", "err", err)
				}
				rcancel()
			}
		}()
		typing := func() {
			// A failing typing indicator never blocks or fails the turn.
			if isTyper {
				tctx, tcancel := context.WithTimeout(ctx, 2*time.Second)
				_ = typer.Typing(tctx, t.In.Key)
				tcancel()
			}
		}
		typing()
		for {
			select {
			case <-ctx.Done():
				return
			case <-slow:
				slow = nil
				if !note.shown.CompareAndSwap(false, true) {
					continue
				}
				if isNoter {
					nctx, ncancel := context.WithTimeout(ctx, 2*time.Second)
					rm, err := noter.ShowWaitNote(nctx, t.In.Key, StillThinking)
					ncancel()
					if err == nil {
						remove = rm
					}
					typing() // a message ends Telegram's indicator
					continue
				}
				nctx, ncancel := context.WithTimeout(ctx, noticeTimeout)
				_, err := t.Out.Send(nctx, pipeline.Outbound{Key: t.In.Key, Text: StillThinking, Plain: true, ReplyTo: t.In.MessageID})
				ncancel()
				if err != nil && ctx.Err() == nil {
					t.Logger().Debug("sending the still-thinking note", "err", err)
				}
				typing()
			case <-tick.C:
				typing()
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

func (r *Responder) extractFacts(ctx context.Context, in pipeline.Inbound, reply string, log *slog.Logger) {
	facts, err := r.facts.Extract(ctx, promptText(in), reply)
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
