package commands_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/commands"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/summary"
)

// recorder is a fake Sender without buttons: it keeps what was sent.
type recorder struct {
	mu   sync.Mutex
	sent []pipeline.Outbound
}

func (r *recorder) Send(_ context.Context, out pipeline.Outbound) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, out)
	return strconv.Itoa(len(r.sent)), nil
}

func (r *recorder) Sent() []pipeline.Outbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pipeline.Outbound(nil), r.sent...)
}

// buttonSender renders choices as buttons (a pipeline.Chooser).
type buttonSender struct{ recorder }

func (*buttonSender) Buttons() bool { return true }

// sentFile is one document sent through a fileSender.
type sentFile struct {
	Key     pipeline.Key
	File    pipeline.File
	Caption string
}

// fileSender is a recorder that can also send documents.
type fileSender struct {
	recorder
	files []sentFile
}

func (f *fileSender) SendFile(_ context.Context, key pipeline.Key, file pipeline.File, caption string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files = append(f.files, sentFile{Key: key, File: file, Caption: caption})
	return nil
}

func (f *fileSender) Files() []sentFile {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sentFile(nil), f.files...)
}

// sentLog is what the harness needs from any of the senders.
type sentLog interface {
	pipeline.Sender
	Sent() []pipeline.Outbound
}

// fakeSummarizer records the keys it was run for.
type fakeSummarizer struct {
	mu      sync.Mutex
	calls   []pipeline.Key
	err     error
	res     summary.Result
	running bool
}

func (f *fakeSummarizer) Run(_ context.Context, key pipeline.Key) (summary.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, key)
	return f.res, f.err
}

func (f *fakeSummarizer) Running(pipeline.Key) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running
}

func (f *fakeSummarizer) set(res summary.Result, err error, running bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.res, f.err, f.running = res, err, running
}

func (f *fakeSummarizer) Calls() []pipeline.Key {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]pipeline.Key(nil), f.calls...)
}

// fakePreviewer returns a fixed breakdown and records the texts it was asked about.
type fakePreviewer struct {
	mu    sync.Mutex
	texts []string
	bd    assemble.Breakdown
	err   error
}

func (f *fakePreviewer) Preview(_ context.Context, _ pipeline.Key, text string) (assemble.Breakdown, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.texts = append(f.texts, text)
	return f.bd, f.err
}

// clock is an injectable Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

const ttl = 5 * time.Minute

var errLLM = errors.New("llm: 503 service unavailable")

// shared is the store most tests use: opening one costs a few hundred
// milliseconds under -race, and every harness has conversations of its own
// (owners no other test touches), so they cannot see each other's data.
var shared struct {
	once  sync.Once
	dir   string
	store *memory.Store
	err   error
	seq   atomic.Int64
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.store != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := shared.store.Close(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "closing the shared store:", err)
			code = 1
		}
		cancel()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func sharedStore(t *testing.T) *memory.Store {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "recall-commands-test-")
		if shared.err == nil {
			shared.store, shared.err = memory.Open(context.Background(), memory.Options{Dir: shared.dir})
		}
	})
	if shared.err != nil {
		t.Fatalf("opening the shared store: %v", shared.err)
	}
	return shared.store
}

// msgSeq numbers the platform messages of every test: a platform's ids
// are unique in a chat, and a message id seen twice is a redelivery.
var msgSeq atomic.Int64

// harness is a Commands over a real store, fakes for the rest, and a sender.
type harness struct {
	t     *testing.T
	ctx   context.Context
	store *memory.Store
	sum   *fakeSummarizer
	prev  *fakePreviewer
	clock *clock
	cmds  *commands.Commands
	out   sentLog

	// The harness's own conversations.
	A  pipeline.Key // a private chat
	A2 pipeline.Key // another topic of A's chat: same owner
	B  pipeline.Key // another owner
	WA pipeline.Key // a WhatsApp chat
	X  pipeline.Key // A's chat id on another channel: another owner
}

type harnessOpt func(*memory.Options, *commands.Options)

func withMaxMemories(n int) harnessOpt {
	return func(m *memory.Options, _ *commands.Options) { m.MaxMemories = n }
}

func withDatabaseURL(url string) harnessOpt {
	return func(m *memory.Options, _ *commands.Options) { m.DatabaseURL = url }
}

func withBotName(name string) harnessOpt {
	return func(_ *memory.Options, c *commands.Options) { c.BotName = name }
}

func newHarness(t *testing.T, out sentLog, opts ...harnessOpt) *harness {
	t.Helper()
	ctx := t.Context()
	var mo memory.Options
	clk := &clock{now: time.Now().UTC().Truncate(time.Millisecond)}
	co := commands.Options{BotName: "RecallBot", FlowTTL: ttl, Now: clk.Now}
	for _, o := range opts {
		o(&mo, &co)
	}
	var store *memory.Store
	if mo == (memory.Options{}) {
		store = sharedStore(t)
	} else {
		mo.Dir = t.TempDir()
		var err error
		if store, err = memory.Open(ctx, mo); err != nil {
			t.Fatalf("memory.Open: %v", err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := store.Close(ctx); err != nil {
				t.Errorf("closing store: %v", err)
			}
		})
	}
	n := shared.seq.Add(1)
	a := strconv.FormatInt(100000+10*n, 10)
	h := &harness{t: t, ctx: ctx, store: store, sum: &fakeSummarizer{}, prev: &fakePreviewer{}, clock: clk, out: out,
		A:  pipeline.Key{Channel: "telegram", Chat: a},
		A2: pipeline.Key{Channel: "telegram", Chat: a, Thread: "7"},
		B:  pipeline.Key{Channel: "telegram", Chat: strconv.FormatInt(100000+10*n+1, 10)},
		WA: pipeline.Key{Channel: "whatsapp", Chat: fmt.Sprintf("49151%07d@s.whatsapp.net", n)},
		X:  pipeline.Key{Channel: "whatsapp", Chat: a},
	}
	h.cmds = commands.New(store, h.sum, h.prev, co)
	return h
}

// turn runs one inbound message through Handle.
func (h *harness) turn(in pipeline.Inbound) (bool, error) {
	h.t.Helper()
	in.MessageID = strconv.FormatInt(msgSeq.Add(1), 10)
	if in.SenderID == "" {
		in.SenderID = "42"
	}
	in.Time = h.clock.Now()
	return h.cmds.Handle(h.ctx, &pipeline.Turn{In: in, Out: h.out})
}

// send sends text and returns whether it was handled and the replies it caused.
func (h *harness) send(key pipeline.Key, text string) (bool, []pipeline.Outbound) {
	h.t.Helper()
	before := len(h.out.Sent())
	handled, err := h.turn(pipeline.Inbound{Key: key, Text: text})
	if err != nil {
		h.t.Fatalf("Handle(%q): %v", text, err)
	}
	return handled, h.out.Sent()[before:]
}

// press presses a button: Choice is its data, Text its label.
func (h *harness) press(key pipeline.Key, label, data string) (bool, []pipeline.Outbound) {
	h.t.Helper()
	before := len(h.out.Sent())
	handled, err := h.turn(pipeline.Inbound{Key: key, Text: label, Choice: data})
	if err != nil {
		h.t.Fatalf("pressing %q: %v", data, err)
	}
	return handled, h.out.Sent()[before:]
}

// reply sends text, expects it handled with exactly one reply, and returns its text.
func (h *harness) reply(key pipeline.Key, text string) string {
	h.t.Helper()
	handled, outs := h.send(key, text)
	if !handled {
		h.t.Fatalf("%q was not handled", text)
	}
	if len(outs) != 1 {
		h.t.Fatalf("%q: got %d replies, want 1: %+v", text, len(outs), outs)
	}
	if outs[0].Key != key {
		h.t.Fatalf("%q: reply went to %v, want %v", text, outs[0].Key, key)
	}
	return outs[0].Text
}

func (h *harness) settings(owner string) memory.Settings {
	h.t.Helper()
	st, err := h.store.Settings(h.ctx, owner)
	if err != nil {
		h.t.Fatalf("Settings: %v", err)
	}
	return st
}

func (h *harness) status(key pipeline.Key) memory.Status {
	h.t.Helper()
	st, err := h.store.Status(h.ctx, key)
	if err != nil {
		h.t.Fatalf("Status: %v", err)
	}
	return st
}

// seed stores user/assistant pairs ("<text> n" and "answer n") at the given time.
func (h *harness) seed(key pipeline.Key, at time.Time, texts ...string) {
	h.t.Helper()
	var msgs []memory.Message
	for i, text := range texts {
		msgs = append(msgs,
			memory.Message{Key: key, Role: memory.RoleUser, SenderID: "42", Text: text, Time: at.Add(time.Duration(2*i) * time.Second)},
			memory.Message{Key: key, Role: memory.RoleAssistant, Text: "answer " + strconv.Itoa(i), Time: at.Add(time.Duration(2*i+1) * time.Second)})
	}
	if err := h.store.Append(h.ctx, msgs...); err != nil {
		h.t.Fatalf("Append: %v", err)
	}
}

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(strings.ToLower(got), strings.ToLower(w)) {
			t.Errorf("%s: %q does not contain %q", what, got, w)
		}
	}
}

func mustNotContain(t *testing.T, what, got string, nots ...string) {
	t.Helper()
	for _, w := range nots {
		if strings.Contains(strings.ToLower(got), strings.ToLower(w)) {
			t.Errorf("%s: %q contains %q", what, got, w)
		}
	}
}
