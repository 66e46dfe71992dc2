package memtools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// Store is what the tools read and change in memory.
type Store interface {
	Search(ctx context.Context, key pipeline.Key, q memory.Query) ([]memory.Hit, error)
	RememberBy(ctx context.Context, owner, author, key, content string) error
	Forget(ctx context.Context, owner, key string) (bool, error)
	Memories(ctx context.Context, owner string) ([]memory.UserMemory, error)
	Summaries(ctx context.Context, key pipeline.Key, activeOnly bool) ([]memory.Summary, error)
	Provenance(ctx context.Context, key pipeline.Key, summaryID int64) ([]memory.Message, error)
	SearchFacts(ctx context.Context, owner string, q memory.FactQuery) ([]memory.Fact, error)
}

// Observer hears about each tool call (metrics); outcome is "ok", "error"
// (the tool refused or failed: the model was told why) or "unknown".
type Observer interface {
	ToolCall(name, outcome string)
}

// Options configure a Box.
type Options struct {
	// Budget caps each tool result, in tokens (the snippet budget).
	Budget int
	// Location is the time zone of dates in results and arguments
	// (default time.Local).
	Location *time.Location
	Observer Observer // may be nil
	Log      *slog.Logger
	// IsAdmin tells the bot's admins (access.admins), who may delete or
	// replace any note of a group; nil: nobody is.
	IsAdmin func(userID string) bool
}

// Box runs the memory tools. It is safe for concurrent use; each call is
// scoped by the Scope it is given.
type Box struct {
	store   Store
	counter llm.Counter
	opts    Options
}

// New returns a Box over store; counter measures results against the budget.
func New(store Store, counter llm.Counter, opts Options) *Box {
	if opts.Budget <= 0 {
		opts.Budget = 1500
	}
	if opts.Location == nil {
		opts.Location = time.Local
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Box{store: store, counter: counter, opts: opts}
}

// Scope is the turn a call acts for: its conversation, whether notes are
// the group's (announced in the reply) rather than one person's, and
// whether the facts learned about the owner may be used (the operator
// enabled extraction and the owner did not turn it off with /facts off).
type Scope struct {
	Key   pipeline.Key
	Group bool
	// User is who the turn answers, as access lists name users
	// ("telegram:123456"): the author of the notes it saves; in a group
	// only their own notes may be deleted or replaced (unless they are an
	// admin).
	User  string
	Facts bool
	// Budget, when above 0 and below the Box's, caps this call's result
	// in tokens (what is left of the turn's budget for tool results).
	Budget int
}

// Budget is the most tokens one result may take.
func (b *Box) Budget() int { return b.opts.Budget }

// budget is the cap of one call's result in scope.
func (b *Box) budget(scope Scope) int {
	if scope.Budget > 0 && scope.Budget < b.opts.Budget {
		return scope.Budget
	}
	return b.opts.Budget
}

// maxFactResults caps the facts one search_memory call returns.
const maxFactResults = 10

// Effect is a change a call made that the user should see in the reply
// (in groups: "📝 noted: …").
type Effect struct {
	Tool string // remember or forget
	Key  string
	Text string // the note's text (remember)
}

// Result is what one call returns to the model, and what it changed.
type Result struct {
	Content string
	Effect  *Effect
	Failed  bool // the call was refused or failed; Content says why
}

// Tool names.
const (
	SearchMemory  = "search_memory"
	Remember      = "remember"
	Forget        = "forget"
	ListMemories  = "list_memories"
	RecallSummary = "recall_summary"
)

// Tools declares the tools to offer the model.
func (b *Box) Tools() []llm.Tool {
	return []llm.Tool{
		{Name: SearchMemory, Description: "Search the archive of this conversation (older messages that are no longer in the prompt) and the facts learned from it. " +
			"Returns the matching exchanges with their dates and speakers, and the matching facts with when they were learned. Use it when the user refers to something said earlier that is not in the conversation above; " +
			"call it several times for a question with several parts. With tag and no query it lists the facts of that kind.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"query":{"type":"string","description":"words to look for, e.g. 'lease apartment March'"},` +
				`"tag":{"type":"string","enum":["preference","personal","decision","goal","other"],"description":"optional: only facts of this kind (archived messages are not searched without a query)"},` +
				`"from":{"type":"string","description":"optional earliest date, YYYY-MM-DD"},` +
				`"to":{"type":"string","description":"optional latest date, YYYY-MM-DD (inclusive)"}}}`)},
		{Name: Remember, Description: "Save a note that stays in the prompt of every later turn, e.g. when the user says 'remember that …'. " +
			"Saving under an existing key replaces that note.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"key":{"type":"string","description":"short name: lowercase letters, digits and _, starting with a letter, e.g. sister_birthday"},` +
				`"text":{"type":"string","description":"what to remember"}},"required":["key","text"]}`)},
		{Name: Forget, Description: "Delete a saved note by its key.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}`)},
		{Name: ListMemories, Description: "List the saved notes (key and text).",
			Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
		{Name: RecallSummary, Description: "Without id: list the summaries of this conversation (id, level, period). " +
			"With id: the original messages that summary was built from, to check details.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"id":{"type":"integer","description":"a summary id from the list"},` +
				`"level":{"type":"integer","description":"optional: only summaries of this level (1 = the most detailed)"}}}`)},
	}
}

// Call runs one tool call for the turn in scope. It never returns an error:
// what goes wrong is told to the model in the result.
func (b *Box) Call(ctx context.Context, scope Scope, call llm.ToolCall) Result {
	var res Result
	var err error
	switch call.Name {
	case SearchMemory:
		res, err = b.search(ctx, scope, call.Arguments)
	case Remember:
		res, err = b.remember(ctx, scope, call.Arguments)
	case Forget:
		res, err = b.forget(ctx, scope, call.Arguments)
	case ListMemories:
		res, err = b.list(ctx, scope)
	case RecallSummary:
		res, err = b.summary(ctx, scope, call.Arguments)
	default:
		b.observe(call.Name, "unknown")
		b.opts.Log.Debug("tool call", "tool", call.Name, "outcome", "unknown")
		return Result{Content: fmt.Sprintf("error: there is no tool named %q; the tools are %s, %s, %s, %s and %s.",
			call.Name, SearchMemory, Remember, Forget, ListMemories, RecallSummary), Failed: true}
	}
	outcome := "ok"
	if err != nil {
		res = Result{Content: "error: " + err.Error(), Failed: true}
		outcome = "error"
	}
	b.observe(call.Name, outcome)
	b.opts.Log.Debug("tool call", "tool", call.Name, "conversation", scope.Key, "outcome", outcome)
	res.Content = b.fit(res.Content, b.budget(scope))
	return res
}

func (b *Box) observe(name, outcome string) {
	if b.opts.Observer != nil {
		if len(name) > 40 {
			name = "unknown"
		}
		if outcome == "unknown" {
			name = "unknown"
		}
		b.opts.Observer.ToolCall(name, outcome)
	}
}

// toolError is a refusal worded for the model.
type toolError string

func (e toolError) Error() string { return string(e) }

// decode reads a call's JSON arguments; empty arguments are an empty object.
func decode(args string, v any) error {
	args = strings.TrimSpace(args)
	if args == "" {
		args = "{}"
	}
	if err := json.Unmarshal([]byte(args), v); err != nil {
		return toolError("the arguments are not valid JSON for this tool (" + err.Error() + "); send a JSON object")
	}
	return nil
}

func (b *Box) search(ctx context.Context, scope Scope, args string) (Result, error) {
	var a struct {
		Query string `json:"query"`
		Tag   string `json:"tag"`
		From  string `json:"from"`
		To    string `json:"to"`
	}
	if err := decode(args, &a); err != nil {
		return Result{}, err
	}
	a.Query, a.Tag = strings.TrimSpace(a.Query), strings.TrimSpace(a.Tag)
	if a.Query == "" && a.Tag == "" {
		return Result{}, toolError("query is required: the words to look for (or tag, to list facts of one kind)")
	}
	if a.Query == "" && !scope.Facts {
		return Result{}, toolError("no facts are learned in this chat, so there is nothing to list by tag; search with a query instead")
	}
	from, err := b.date(a.From, "from")
	if err != nil {
		return Result{}, err
	}
	to, err := b.date(a.To, "to")
	if err != nil {
		return Result{}, err
	}
	if !to.IsZero() {
		to = to.AddDate(0, 0, 1) // inclusive
	}
	var fb strings.Builder
	if scope.Facts {
		facts, err := b.store.SearchFacts(ctx, scope.Key.Owner(), memory.FactQuery{
			Text: a.Query, Tag: a.Tag, Key: scope.Key.String(), From: from, To: to, Limit: maxFactResults})
		if err != nil {
			b.opts.Log.Warn("search_memory: searching facts", "conversation", scope.Key, "err", err)
		}
		for _, f := range facts {
			fmt.Fprintf(&fb, "- %s (learned %s", f.Content, f.Created.In(b.opts.Location).Format("2006-01-02"))
			if len(f.Tags) > 0 {
				fmt.Fprintf(&fb, "; %s", strings.Join(f.Tags, ", "))
			}
			fb.WriteString(")\n")
		}
	}
	var sb strings.Builder
	n := 0
	if a.Query != "" {
		budget := b.budget(scope)
		q := memory.Query{Text: a.Query, ArchivedOnly: true, TokenBudget: budget, From: from, To: to}
		hits, err := b.store.Search(ctx, scope.Key, q)
		if err != nil {
			return Result{}, fmt.Errorf("the archive could not be searched right now")
		}
		used := b.counter.Count(fb.String()) // the facts are kept whole
		for _, h := range hits {
			m := h.Message
			if (!from.IsZero() && m.Time.Before(from)) || (!to.IsZero() && !m.Time.Before(to)) {
				continue
			}
			line := b.line(m)
			t := b.counter.Count(line)
			if used+t > budget && n > 0 {
				break
			}
			sb.WriteString(line)
			used += t
			n++
		}
	}
	what := quote(a.Query)
	if a.Query == "" {
		what = "tag " + quote(a.Tag)
	} else if a.Tag != "" {
		what += " (facts tagged " + quote(a.Tag) + ")"
	}
	if n == 0 && fb.Len() == 0 {
		if a.Query == "" {
			return Result{Content: "No facts match " + what + rangeNote(a.From, a.To) + "."}, nil
		}
		return Result{Content: "No archived messages or facts match " + what + rangeNote(a.From, a.To) + "."}, nil
	}
	out := ""
	if n > 0 {
		out = fmt.Sprintf("Archived messages matching %s%s, best first:\n%s", quote(a.Query), rangeNote(a.From, a.To), sb.String())
	}
	if fb.Len() > 0 {
		out += fmt.Sprintf("Facts matching %s%s:\n%s", what, rangeNote(a.From, a.To), fb.String())
	}
	return Result{Content: out}, nil
}

func rangeNote(from, to string) string {
	switch {
	case from != "" && to != "":
		return " between " + from + " and " + to
	case from != "":
		return " since " + from
	case to != "":
		return " until " + to
	}
	return ""
}

func quote(s string) string { return "“" + strings.TrimSpace(s) + "”" }

// line renders one archived message with its date and speaker.
func (b *Box) line(m memory.Message) string {
	who := m.SenderName
	switch {
	case m.Role == memory.RoleAssistant:
		who = "assistant"
	case who == "":
		who = "user"
	}
	return fmt.Sprintf("[%s] %s: %s\n", m.Time.In(b.opts.Location).Format("2006-01-02 15:04"), who, strings.TrimSpace(m.Text))
}

// date parses an optional YYYY-MM-DD argument in the configured zone.
func (b *Box) date(s, name string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation("2006-01-02", s, b.opts.Location)
	if err != nil {
		return time.Time{}, toolError(name + " must be a date like 2024-03-01")
	}
	return t, nil
}

func (b *Box) remember(ctx context.Context, scope Scope, args string) (Result, error) {
	var a struct {
		Key  string `json:"key"`
		Text string `json:"text"`
	}
	if err := decode(args, &a); err != nil {
		return Result{}, err
	}
	a.Key, a.Text = strings.TrimSpace(a.Key), strings.TrimSpace(a.Text)
	if a.Text == "" {
		return Result{}, toolError("text is required: what to remember")
	}
	if err := memory.ValidateMemoryKey(a.Key); err != nil {
		return Result{}, toolError("note not saved: " + strings.TrimPrefix(err.Error(), memory.ErrBadMemoryKey.Error()+": "))
	}
	if refused, err := b.othersNote(ctx, scope, a.Key, "replace"); err != nil || refused != "" {
		if err != nil {
			return Result{}, err
		}
		return Result{}, toolError(refused)
	}
	switch err := b.store.RememberBy(ctx, scope.Key.Owner(), scope.User, a.Key, a.Text); {
	case errors.Is(err, memory.ErrMemoryCap):
		return Result{}, toolError("note not saved: the notes are full; forget one first (list_memories shows them)")
	case errors.Is(err, memory.ErrBadMemoryKey):
		return Result{}, toolError("note not saved: " + strings.TrimPrefix(err.Error(), memory.ErrBadMemoryKey.Error()+": "))
	case err != nil:
		return Result{}, fmt.Errorf("note not saved: storage failed")
	}
	return Result{Content: "Saved note " + a.Key + ".", Effect: &Effect{Tool: Remember, Key: a.Key, Text: a.Text}}, nil
}

func (b *Box) forget(ctx context.Context, scope Scope, args string) (Result, error) {
	var a struct {
		Key string `json:"key"`
	}
	if err := decode(args, &a); err != nil {
		return Result{}, err
	}
	a.Key = strings.TrimSpace(a.Key)
	if a.Key == "" {
		return Result{}, toolError("key is required")
	}
	if refused, err := b.othersNote(ctx, scope, a.Key, "delete"); err != nil || refused != "" {
		if err != nil {
			return Result{}, err
		}
		return Result{}, toolError(refused)
	}
	found, err := b.store.Forget(ctx, scope.Key.Owner(), a.Key)
	if err != nil {
		return Result{}, fmt.Errorf("note not deleted: storage failed")
	}
	if !found {
		return Result{Content: "There is no note " + quote(a.Key) + "."}, nil
	}
	return Result{Content: "Deleted note " + a.Key + ".", Effect: &Effect{Tool: Forget, Key: a.Key}}, nil
}

func (b *Box) list(ctx context.Context, scope Scope) (Result, error) {
	ms, err := b.store.Memories(ctx, scope.Key.Owner())
	if err != nil {
		return Result{}, fmt.Errorf("the notes could not be read right now")
	}
	if len(ms) == 0 {
		return Result{Content: "There are no saved notes."}, nil
	}
	var sb strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&sb, "- %s: %s\n", m.Key, m.Content)
	}
	return Result{Content: sb.String()}, nil
}

func (b *Box) summary(ctx context.Context, scope Scope, args string) (Result, error) {
	var a struct {
		ID    *int64 `json:"id"`
		Level *int   `json:"level"`
	}
	if err := decode(args, &a); err != nil {
		return Result{}, err
	}
	if a.ID != nil {
		msgs, err := b.store.Provenance(ctx, scope.Key, *a.ID)
		if errors.Is(err, memory.ErrNotFound) {
			return Result{}, toolError(fmt.Sprintf("there is no summary %d in this conversation; call recall_summary without id to list them", *a.ID))
		}
		if err != nil {
			return Result{}, fmt.Errorf("the summary's messages could not be read right now")
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "Summary %d was built from %d messages:\n", *a.ID, len(msgs))
		for _, m := range msgs {
			sb.WriteString(b.line(m))
		}
		return Result{Content: sb.String()}, nil
	}
	sums, err := b.store.Summaries(ctx, scope.Key, false)
	if err != nil {
		return Result{}, fmt.Errorf("the summaries could not be read right now")
	}
	var sb strings.Builder
	for i := len(sums) - 1; i >= 0; i-- { // newest first: what fits is the most recent
		s := sums[i]
		if a.Level != nil && s.Level != *a.Level {
			continue
		}
		state := "active"
		if !s.Active {
			state = "folded into a higher level"
		}
		fmt.Fprintf(&sb, "- id %d, level %d, %s – %s (%s): %s\n", s.ID, s.Level,
			s.From.In(b.opts.Location).Format("2006-01-02"), s.To.In(b.opts.Location).Format("2006-01-02"), state, oneLine(s.Text, 300))
	}
	if sb.Len() == 0 {
		return Result{Content: "This conversation has no summaries yet."}, nil
	}
	return Result{Content: "Summaries, newest first:\n" + sb.String()}, nil
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}

// fit cuts a result to the budget, at a line boundary where it can.
func (b *Box) fit(s string, budget int) string {
	if b.counter.Count(s) <= budget {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	var sb strings.Builder
	used := 0
	for _, l := range lines {
		t := b.counter.Count(l)
		if used+t > budget {
			break
		}
		sb.WriteString(l)
		used += t
	}
	if sb.Len() == 0 {
		r := []rune(s)
		n := min(len(r), budget*2)
		for n > 0 && b.counter.Count(string(r[:n])) > budget {
			n /= 2
		}
		sb.WriteString(string(r[:n]))
	}
	return sb.String() + "[cut to fit the budget]"
}

// othersNote says why the call may not delete or replace (verb) note key:
// in a group, a note someone else wrote (or whose author is unknown) is
// changed by a bot admin only. "" when it may.
func (b *Box) othersNote(ctx context.Context, scope Scope, key, verb string) (string, error) {
	if !scope.Group || b.opts.IsAdmin != nil && b.opts.IsAdmin(scope.User) {
		return "", nil
	}
	mems, err := b.store.Memories(ctx, scope.Key.Owner())
	if err != nil {
		return "", fmt.Errorf("note not changed: storage failed")
	}
	for _, m := range mems {
		if m.Key == key && !m.WrittenBy(scope.User) {
			return fmt.Sprintf("refused: note %s was written by another member of the group (or before notes recorded their author), and only its author or the bot's admins may %s it; tell the user so (a note of their own needs another key)", quote(key), verb), nil
		}
	}
	return "", nil
}
