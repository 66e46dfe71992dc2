package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/summary"
)

// Store is what the commands read and change.
type Store interface {
	Settings(ctx context.Context, owner string) (memory.Settings, error)
	PutSettings(ctx context.Context, s memory.Settings) error
	Status(ctx context.Context, key pipeline.Key) (memory.Status, error)
	RememberBy(ctx context.Context, owner, author, key, content string) error
	Memories(ctx context.Context, owner string) ([]memory.UserMemory, error)
	Forget(ctx context.Context, owner, key string) (bool, error)
	Search(ctx context.Context, key pipeline.Key, q memory.Query) ([]memory.Hit, error)
	Purge(ctx context.Context, scope memory.PurgeScope) (memory.PurgeReport, error)
	Export(ctx context.Context, owner string, key *pipeline.Key) (memory.OwnerData, error)
	// MarkHandled records durably that a platform message was handled
	// without a reply stored for it; first is false when it was already.
	MarkHandled(ctx context.Context, key pipeline.Key, platformID string) (first bool, err error)
	// Discard removes a user message a channel stored on arrival
	// (chat.Intake) that turned out to be an answer to a question.
	Discard(ctx context.Context, key pipeline.Key, platformID string) (bool, error)
	// SenderMessages and PurgeSender: a person's messages in groups, for
	// "/purge all" in a private chat.
	SenderMessages(ctx context.Context, sc memory.SenderScope) (messages, groups int, err error)
	PurgeSender(ctx context.Context, sc memory.SenderScope) (memory.PurgeReport, error)
}

// Summarizer runs /summary_now.
type Summarizer interface {
	Run(ctx context.Context, key pipeline.Key) (summary.Result, error)
	Running(key pipeline.Key) bool
}

// Previewer shows what the next prompt would hold (/context).
type Previewer interface {
	Preview(ctx context.Context, key pipeline.Key, text string) (assemble.Breakdown, error)
}

// Command is one slash command, declared as data.
type Command struct {
	Name  string // without "/"
	Usage string // argument synopsis, "" when it takes none
	Help  string // one line, for /help and the platforms' command menus
	Run   func(ctx context.Context, c *Call) error
}

// Call is one invocation.
type Call struct {
	*Commands
	Turn *pipeline.Turn
	Name string // the command's name, "" when answering a pending question
	Args string
	Key  pipeline.Key
}

// Reply sends Markdown text to the conversation.
func (c *Call) Reply(ctx context.Context, text string) error {
	_, err := c.Turn.Out.Send(ctx, pipeline.Outbound{Key: c.Key, Text: text, ReplyTo: c.Turn.In.MessageID})
	return err
}

// ask sends a question with choices (buttons or a numbered list), as a
// reply to the message that asked for it (in a group, it shows whose
// question it is).
func (c *Call) ask(ctx context.Context, text string, choices []pipeline.Choice) error {
	out := pipeline.WithChoices(c.Turn.Out, pipeline.Outbound{Key: c.Key, Text: text, Choices: choices, ReplyTo: c.Turn.In.MessageID})
	_, err := c.Turn.Out.Send(ctx, out)
	return err
}

// Options configure the commands.
type Options struct {
	BotName  string        // the bot's @username on Telegram ("" when unknown)
	FlowTTL  time.Duration // how long a /summary or /purge question waits (default 5 min)
	Defaults memory.Settings
	Facts    bool // memory.facts.enabled, shown in /summary_status
	// KeepRecent is memory.keep_recent_turns: the exchanges kept while
	// memory is off, as /summary_off says (default 4).
	KeepRecent int
	Log        *slog.Logger
	Now        func() time.Time
	ExtraHelp  string // appended to /help (e.g. how to configure the LLM)
	// Admin adds the admin commands (/allow, /deny, /pending, /stats) for
	// the admins of its access list; nil: none.
	Admin *AdminOptions
	// AfterPurge, when set, hears of each /purge (a conversation, all an
	// owner's data, or what is older than a time), after the store's
	// purge: the delivery journal forgets the undelivered replies, kept
	// photos are removed.
	AfterPurge func(scope memory.PurgeScope) error
	// Embeddings, when set (memory.embeddings), says in /summary_status
	// how much of the conversation is embedded.
	Embeddings Embeddings
}

// Embeddings reports how much of a conversation is embedded.
type Embeddings interface {
	Model() string
	Coverage(ctx context.Context, key pipeline.Key) (done, total int64, err error)
}

// Commands is the registry and the stage that runs them.
type Commands struct {
	store   Store
	sum     Summarizer
	preview Previewer
	opts    Options
	list    []*Command
	byName  map[string]*Command
	// off holds, for a command this bot does not offer as configured,
	// what the user reads instead of "I don't know the command".
	off map[string]string

	isAdmin func(userID string) bool // the bot's admins (EnableAdmin); nil: none

	mu    sync.Mutex
	flows map[pipeline.Key]*flow
}

// New builds the command set.
func New(store Store, sum Summarizer, preview Previewer, opts Options) *Commands {
	if opts.FlowTTL <= 0 {
		opts.FlowTTL = 5 * time.Minute
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.KeepRecent <= 0 {
		opts.KeepRecent = 4
	}
	c := &Commands{store: store, sum: sum, preview: preview, opts: opts, flows: map[pipeline.Key]*flow{}}
	c.list = builtins()
	c.off = map[string]string{}
	if _, ok := store.(FactStore); ok && opts.Facts {
		c.list = append(c.list, factsCommand())
	} else if !opts.Facts {
		c.off["facts"] = factsOffText
	}
	c.byName = map[string]*Command{}
	for _, cmd := range c.list {
		c.byName[cmd.Name] = cmd
	}
	if opts.Admin != nil {
		c.enableAdmin(*opts.Admin)
	}
	return c
}

// List returns the commands in menu order.
func (c *Commands) List() []*Command { return c.list }

// Names returns the name of every command that can be run, admin commands
// (Options.Admin) included, sorted: what a test must cover to cover them all.
func (c *Commands) Names() []string {
	names := make([]string, 0, len(c.byName))
	for name := range c.byName {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Middleware is the commands stage: a command is run and the turn ends; a
// reply to a pending question (a number, a button, "cancel") goes to its
// flow; anything else goes on.
func (c *Commands) Middleware() pipeline.Middleware {
	return func(next pipeline.Handler) pipeline.Handler {
		return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
			handled, err := c.Handle(ctx, t)
			if handled {
				return err
			}
			return next.Handle(ctx, t)
		})
	}
}

// Handle runs the turn if it is a command or answers a pending question.
// Either way the message is the command's: it is recorded as handled
// before it runs, so a platform's redelivery (after a restart too) does not
// run it again, and a typed answer ("1", "yes", "cancel") is not kept as a
// message — not in the history, not in prompts, not answered by the LLM.
func (c *Commands) Handle(ctx context.Context, t *pipeline.Turn) (bool, error) {
	key := t.In.Key
	if p, ok := Parse(t.In.Text); ok {
		if !p.ForBot(c.opts.BotName) {
			return true, nil // another bot's command: not ours to answer
		}
		if !c.consume(ctx, t) {
			return true, nil
		}
		call := &Call{Commands: c, Turn: t, Name: p.Name, Args: p.Args, Key: key}
		cmd, known := c.byName[p.Name]
		if !known {
			if why, ok := c.off[p.Name]; ok {
				return true, call.Reply(ctx, why)
			}
			return true, call.Reply(ctx, unknownText(p.Name, c.closest(p.Name)))
		}
		if f := c.flowFor(key); f != nil && f.owner != t.In.SenderID {
			// Someone else's question stays: their /cancel does not end
			// it, their other commands run beside it.
			if p.Name == "cancel" {
				return true, call.Reply(ctx, "Only the member who sent the command can cancel that question.")
			}
		} else if p.Name != "cancel" {
			c.endFlow(ctx, key) // a new command abandons a pending question
		}
		return true, call.fail(ctx, cmd.Run(ctx, call))
	}
	if f := c.flowFor(key); f != nil && f.answers(t.In) {
		if !c.consume(ctx, t) {
			return true, nil
		}
		call := &Call{Commands: c, Turn: t, Key: key}
		answer := t.In.Text
		if t.In.Choice != "" {
			answer = t.In.Choice
		}
		return true, call.fail(ctx, f.step(ctx, call, strings.TrimSpace(answer)))
	}
	if f := c.staleFor(key); f != nil && f.answers(t.In) && looksLikeAnswer(t.In) {
		// The answer to a question that expired, or that a restart could
		// not keep: told so, not taken for chat.
		if !c.consume(ctx, t) {
			return true, nil
		}
		c.endFlow(ctx, key)
		call := &Call{Commands: c, Turn: t, Key: key}
		return true, call.Reply(ctx, "That question expired; "+again(f.kind)+".")
	}
	if t.In.Choice != "" {
		// A button of a question that expired, was answered, or is someone
		// else's.
		if !c.consume(ctx, t) {
			return true, nil
		}
		call := &Call{Commands: c, Turn: t, Key: key}
		if c.flowFor(key) != nil {
			return true, call.Reply(ctx, "Only the member who sent the command can answer that question.")
		}
		return true, call.Reply(ctx, "That question has expired. Send the command again.")
	}
	return false, nil
}

// consumeTimeout bounds recording a consumed message.
const consumeTimeout = 5 * time.Second

// consume records the turn's message as handled and, when a channel stored
// it on arrival as a message for the LLM (a typed answer), removes that
// copy. It reports false for a message recorded already: a redelivery,
// dropped without an answer. When the store fails the command runs anyway:
// better twice than never.
func (c *Commands) consume(ctx context.Context, t *pipeline.Turn) bool {
	in := t.In
	if in.MessageID == "" {
		return true
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), consumeTimeout)
	defer cancel()
	log := t.Logger()
	first, err := c.store.MarkHandled(sctx, in.Key, in.MessageID)
	if err != nil {
		log.Warn("recording a command as handled", "key", in.Key, "msg_id", in.MessageID, "err", err)
		first = true
	}
	if !first {
		log.Debug("dropped a redelivered command or answer", "key", in.Key, "msg_id", in.MessageID)
		return false
	}
	if !in.IsCommand() && in.Choice == "" { // what chat.Intake stores
		if _, err := c.store.Discard(sctx, in.Key, in.MessageID); err != nil {
			log.Warn("removing an answer to a question from the history", "key", in.Key, "msg_id", in.MessageID, "err", err)
		}
	}
	return true
}

// Asking reports whether a question waits for its answer in key: the next
// message there may be that answer, the command's and not a chat message
// (chat.Intake does not store it on arrival).
func (c *Commands) Asking(key pipeline.Key) bool { return c.flowFor(key) != nil }

// fail tells the user about err. A bad argument (UsageError) is the user's
// to fix: they get the message that says what is expected, and it is not an
// error of the bot. Anything else is logged and returned.
func (c *Call) fail(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var ue *UsageError
	if errors.As(err, &ue) {
		return c.Reply(ctx, ue.Msg)
	}
	what := c.Name
	if what == "" {
		what = "answer to a question"
	}
	c.Turn.Logger().Error("command failed", "command", what, "err", err)
	_ = c.Reply(ctx, "Sorry, that did not work: "+userError(err))
	return err
}

func unknownText(name, closest string) string {
	s := fmt.Sprintf("I don't know the command /%s.", name)
	if closest != "" {
		s += fmt.Sprintf(" Did you mean /%s?", closest)
	}
	return s + " Send /help for the list."
}

// closest suggests a known command for a typo: the nearest one within two
// edits, or else one that starts like it (/memory → /memories, /summ →
// /summary).
func (c *Commands) closest(name string) string {
	best, bestD := "", 3
	for _, cmd := range c.list {
		if d := distance(name, cmd.Name); d < bestD {
			best, bestD = cmd.Name, d
		}
	}
	if best != "" || len(name) < 4 {
		return best
	}
	bestP := 3
	for _, cmd := range c.list {
		if p := commonPrefix(name, cmd.Name); p > bestP || p == bestP && best != "" && distance(name, cmd.Name) < distance(name, best) {
			best, bestP = cmd.Name, p
		}
	}
	return best
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// distance is the Levenshtein distance.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// userError turns an error into a sentence for the user.
func userError(err error) string {
	var ue *UsageError
	switch {
	case errors.As(err, &ue):
		return ue.Msg
	case errors.Is(err, context.DeadlineExceeded):
		return "storage is busy right now; please try again in a moment."
	case errors.Is(err, memory.ErrQueueFull), errors.Is(err, memory.ErrClosed):
		return "storage is not available right now; please try again later."
	default:
		return "an internal error occurred (it has been logged)."
	}
}

// UsageError is a bad argument; Msg says what is expected.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usage(format string, a ...any) error { return &UsageError{Msg: fmt.Sprintf(format, a...)} }

// HelpText lists the commands.
func (c *Commands) HelpText() string {
	var b strings.Builder
	b.WriteString("Here is what I understand:\n")
	for _, cmd := range c.list {
		line := "/" + cmd.Name
		if cmd.Usage != "" {
			line += " " + cmd.Usage
		}
		fmt.Fprintf(&b, "%s — %s\n", line, cmd.Help)
	}
	b.WriteString("\nAnything else you write goes to the assistant, who remembers our conversation.")
	if c.opts.ExtraHelp != "" {
		b.WriteString("\n\n" + c.opts.ExtraHelp)
	}
	return b.String()
}

func storageLabel(s memory.Storage) string {
	if s == memory.StorageJSON {
		return "JSON file"
	}
	return "SQLite"
}

// databaser is a store that says which database holds what is not in a
// JSON file ("SQLite", "PostgreSQL"; memory.Store).
type databaser interface{ Database() string }

// storageName is storageLabel as this store keeps it: the database's name
// for the database storage.
func (c *Call) storageName(s memory.Storage) string {
	if d, ok := c.store.(databaser); ok && s != memory.StorageJSON {
		return d.Database()
	}
	return storageLabel(s)
}

// jsonOfferer is a store that says whether a JSON file of one's own can
// be chosen (memory.Store: not with PostgreSQL).
type jsonOfferer interface{ OffersJSON() bool }

// offersJSON reports whether /summary offers a JSON file besides the
// database.
func (c *Call) offersJSON() bool {
	o, ok := c.store.(jsonOfferer)
	return !ok || o.OffersJSON()
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func levelsText(st memory.Status) string {
	if len(st.ActiveByLevel) == 0 {
		return "none"
	}
	var levels []int
	for l := range st.ActiveByLevel {
		levels = append(levels, l)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(levels)))
	var parts []string
	for _, l := range levels {
		parts = append(parts, fmt.Sprintf("%d at level %d", st.ActiveByLevel[l], l))
	}
	return strings.Join(parts, ", ")
}
