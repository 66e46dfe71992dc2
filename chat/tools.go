package chat

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/memtools"
	"github.com/recallbot/recall/pipeline"
)

// ToolModel is a Model that can offer tools (llm.Client).
type ToolModel interface {
	ChatTools(ctx context.Context, msgs []llm.Message, tools []llm.Tool) (llm.Reply, error)
	StreamTools(ctx context.Context, msgs []llm.Message, tools []llm.Tool, onDelta func(text string)) (llm.Reply, error)
	Model() string
}

// Tool modes (llm.tools.mode).
const (
	ToolsAuto = "auto" // offer tools; a model whose server refuses them is not offered them again
	ToolsOn   = "on"   // always offer tools; a refusal fails the turn
	ToolsOff  = "off"
)

// Tools configure the memory tools offered to the model. The zero value
// offers none.
type Tools struct {
	Box       *memtools.Box
	Mode      string // ToolsAuto (default when Box is set), ToolsOn or ToolsOff
	MaxRounds int    // tool rounds per turn at most (default 3)
	// MaxCalls caps the calls the model may make in one round (default 5);
	// more are answered with an error.
	MaxCalls int
}

// toolSupport remembers, per model, that its server refused tools.
type toolSupport struct {
	mu      sync.Mutex
	refused map[string]bool
}

func (s *toolSupport) ok(model string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.refused[model]
}

// refuse records a refusal; true the first time (to log it once).
func (s *toolSupport) refuse(model string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused == nil {
		s.refused = map[string]bool{}
	}
	first := !s.refused[model]
	s.refused[model] = true
	return first
}

// turnModel returns the model for one turn: the configured one, wrapped so
// that its calls run tool rounds when tools are on and the model takes them.
// The returned toolTurn (nil without tools) holds what the rounds did.
func (r *Responder) turnModel(in pipeline.Inbound, settings memory.Settings, log *slog.Logger) (Model, *toolTurn) {
	tm, ok := r.model.(ToolModel)
	if !ok || r.tools.Box == nil || r.tools.Mode == ToolsOff {
		return r.model, nil
	}
	if r.tools.Mode != ToolsOn && !r.toolSupport.ok(tm.Model()) {
		return r.model, nil
	}
	tt := &toolTurn{r: r, inner: tm, log: log, scope: memtools.Scope{Key: in.Key, Group: in.IsGroup, User: in.UserID(),
		Facts: r.opts.Facts && settings.MemoryEnabled && !settings.FactsOff}}
	return tt, tt
}

// toolTurn runs one turn's conversation with the model through tool rounds:
// each round offers the tools; calls are run and their results sent back,
// until the model answers in text or the rounds run out (the last round
// offers no tools, so the model must answer).
type toolTurn struct {
	r     *Responder
	inner ToolModel
	log   *slog.Logger
	scope memtools.Scope

	Called  []string          // tool names, in call order
	Effects []memtools.Effect // notes saved or deleted

	results int // tokens the tool results of this turn may take in all
}

// toolOverhead is what the tools' declarations add to a request, in tokens
// (their names, descriptions and JSON schemas, with some framing).
func (r *Responder) toolOverhead() int {
	r.toolsOnce.Do(func() {
		for _, t := range r.tools.Box.Tools() {
			r.toolTokens += r.counter.Count(t.Name) + r.counter.Count(t.Description) + r.counter.Count(string(t.Parameters)) + 8
		}
	})
	return r.toolTokens
}

// promptRoom is the room for the assembled prompt when the window must
// also hold the tools' declarations and one result's worth of tool
// results (the Box's budget); never below half of room. Without tools
// (tt nil) it is room.
func (tt *toolTurn) promptRoom(room int) int {
	if tt == nil || room <= 0 {
		return room
	}
	return max(room-tt.r.toolOverhead()-tt.r.tools.Box.Budget(), room/2)
}

// fitResults sets what the turn's tool results may take in all: what the
// window (room, for the prompt) has left beside a prompt of used tokens,
// the declarations and the calls themselves; at most a full result per
// round, and never nothing (a result of a few lines rather than none).
func (tt *toolTurn) fitResults(room, used int) {
	if tt == nil {
		return
	}
	const calls = 32 // the model's calls, sent back with the results
	one := tt.r.tools.Box.Budget()
	tt.results = min(max(room-used-tt.r.toolOverhead()-calls, 64), one*tt.maxRounds())
}

func (tt *toolTurn) maxRounds() int {
	if tt.r.tools.MaxRounds <= 0 {
		return 3
	}
	return tt.r.tools.MaxRounds
}

var _ StreamModel = (*toolTurn)(nil)

func (tt *toolTurn) Chat(ctx context.Context, msgs []llm.Message) (llm.Reply, error) {
	return tt.run(ctx, msgs, func(ctx context.Context, msgs []llm.Message, tools []llm.Tool) (llm.Reply, error) {
		return tt.inner.ChatTools(ctx, msgs, tools)
	})
}

func (tt *toolTurn) Stream(ctx context.Context, msgs []llm.Message, onDelta func(string)) (llm.Reply, error) {
	return tt.run(ctx, msgs, func(ctx context.Context, msgs []llm.Message, tools []llm.Tool) (llm.Reply, error) {
		return tt.inner.StreamTools(ctx, msgs, tools, onDelta)
	})
}

type roundFunc func(ctx context.Context, msgs []llm.Message, tools []llm.Tool) (llm.Reply, error)

func (tt *toolTurn) run(ctx context.Context, msgs []llm.Message, call roundFunc) (llm.Reply, error) {
	maxRounds, maxCalls := tt.maxRounds(), tt.r.tools.MaxCalls
	if maxCalls <= 0 {
		maxCalls = 5
	}
	msgs = append([]llm.Message(nil), msgs...)
	tools := tt.r.tools.Box.Tools()
	var (
		total llm.Reply
		text  strings.Builder // what every round said, as the user saw it stream
		spent int             // tokens of tool results so far
	)
	for round := 0; ; round++ {
		offer := tools
		if round >= maxRounds {
			offer = nil
		}
		rep, err := call(ctx, msgs, offer)
		if err != nil && offer != nil && tt.r.tools.Mode != ToolsOn && llm.IsToolsRejected(err) {
			if tt.r.toolSupport.refuse(tt.inner.Model()) {
				tt.log.Warn("the model's server refused tool calls; answering without memory tools from now on",
					"model", tt.inner.Model(), "err", err)
			}
			tools, offer = nil, nil
			rep, err = call(ctx, msgs, nil)
		}
		total.Model = rep.Model
		total.PromptTokens += rep.PromptTokens
		total.CompletionTokens += rep.CompletionTokens
		total.FinishReason = rep.FinishReason
		text.WriteString(rep.Text)
		if err != nil {
			total.Text = text.String()
			if se, ok := err.(*llm.StreamError); ok && text.Len() > len(se.Partial) {
				// What earlier rounds showed is part of what was cut.
				return total, &llm.StreamError{Partial: text.String(), Err: se.Err}
			}
			return total, err
		}
		if len(rep.ToolCalls) == 0 || offer == nil {
			total.Text = text.String()
			return total, nil
		}
		calls := rep.ToolCalls
		for i := range calls {
			if calls[i].ID == "" {
				calls[i].ID = fmt.Sprintf("call_%d_%d", round, i)
			}
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: rep.Text, ToolCalls: calls})
		for i, c := range calls {
			var res memtools.Result
			switch {
			case i >= maxCalls:
				res = memtools.Result{Content: fmt.Sprintf("error: at most %d tool calls per round; ask again in the next round", maxCalls), Failed: true}
			case tt.results > 0 && spent >= tt.results:
				res = memtools.Result{Content: "error: the tool results of this answer have filled the room the context window has for them; answer with what you have", Failed: true}
			default:
				scope := tt.scope
				if tt.results > 0 {
					scope.Budget = tt.results - spent
				}
				res = tt.r.tools.Box.Call(ctx, scope, c)
				spent += tt.r.counter.Count(res.Content)
				tt.Called = append(tt.Called, c.Name)
				if res.Effect != nil {
					tt.Effects = append(tt.Effects, *res.Effect)
				}
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Content: res.Content})
		}
	}
}

// announce is the line a group reads about the notes the model changed
// ("📝 noted: …"), "" when none or not a group.
func (tt *toolTurn) announce() string {
	if tt == nil || !tt.scope.Group || len(tt.Effects) == 0 {
		return ""
	}
	var sb strings.Builder
	for i, e := range tt.Effects {
		if slices.Contains(tt.Effects[:i], e) {
			continue // the same change again (a turn retried with a smaller prompt)
		}
		switch e.Tool {
		case memtools.Remember:
			fmt.Fprintf(&sb, "\n📝 noted: %s — %s", e.Key, e.Text)
		case memtools.Forget:
			fmt.Fprintf(&sb, "\n📝 forgot: %s", e.Key)
		}
	}
	return sb.String()
}

// maxCompactions bounds the smaller prompts tried after context-length
// errors in one turn (one when the provider names its window).
const maxCompactions = 3

// promptCap is the most tokens a prompt may take: the model's context window
// less the reply's reserve, or what a context-length error taught.
func (r *Responder) promptCap() int {
	r.mu.Lock()
	learned := r.learned
	r.mu.Unlock()
	if learned > 0 {
		return learned
	}
	w := r.opts.ContextWindow
	if w <= 0 {
		name := ""
		if n, ok := r.model.(interface{ Model() string }); ok {
			name = n.Model()
		}
		w = llm.ContextWindow(name)
	}
	return fitWindow(w, r.opts.ReplyReserve)
}

// fitWindow is the prompt room of a window once the reply's reserve is
// kept, never below half the window.
func fitWindow(window, reserve int) int {
	return max(window-reserve, window/2)
}

// learnWindow records that a prompt of used tokens did not fit: window is
// the size the provider named (0: not named, then the cap is half of what
// was sent; named, nine tenths of it and of what was sent). It returns the
// new cap. The first change is logged as a warning, later ones at debug.
func (r *Responder) learnWindow(window, used int, log *slog.Logger) int {
	next := used / 2
	if window > 0 {
		// A tenth of the named window stays free: the provider counts
		// with its own tokenizer, ours is an estimate for most models.
		next = min(fitWindow(window-window/10, r.opts.ReplyReserve), used-used/10)
	}
	next = max(next, 256)
	r.mu.Lock()
	first := r.learned == 0
	changed := first || next < r.learned
	if changed {
		r.learned = next
	} else {
		next = r.learned
	}
	r.mu.Unlock()
	switch {
	case first:
		log.Warn("the model's context window is smaller than the prompt; prompts are cut to fit from now on (set llm.context_window)",
			"window_named", window, "prompt_tokens", used, "new_cap", next)
	case changed:
		log.Debug("the model's context window is smaller still; prompts are cut further",
			"window_named", window, "prompt_tokens", used, "new_cap", next)
	}
	return next
}

// maxCalledKeys bounds the conversations whose last tool calls /context can
// show; past it the record starts over.
const maxCalledKeys = 1000

// rememberCalls keeps which tools the last answer of a conversation called.
func (r *Responder) rememberCalls(key pipeline.Key, tt *toolTurn) {
	if tt == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.called == nil || (len(r.called) >= maxCalledKeys && r.called[key] == nil) {
		r.called = map[pipeline.Key][]string{}
	}
	r.called[key] = tt.Called
}

// toolNotes are /context's lines about the memory tools: which are offered
// to the model, and which the last answer in this conversation called.
func (r *Responder) toolNotes(key pipeline.Key) []string {
	if _, tt := r.turnModel(pipeline.Inbound{Key: key}, memory.Settings{}, r.opts.Log); tt == nil {
		return nil
	}
	var names []string
	for _, t := range r.tools.Box.Tools() {
		names = append(names, t.Name)
	}
	notes := []string{"memory tools the model may call: " + strings.Join(names, ", ")}
	r.mu.Lock()
	called, ok := r.called[key]
	r.mu.Unlock()
	switch {
	case ok && len(called) == 0:
		notes = append(notes, "my last answer here called no tool")
	case ok:
		notes = append(notes, "my last answer here called: "+strings.Join(called, ", "))
	}
	return notes
}
