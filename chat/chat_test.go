package chat

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// recorder is a Sender that records what was sent and can look into the
// store at the moment of sending.
type recorder struct {
	mu      sync.Mutex
	sent    []pipeline.Outbound
	typing  int
	onSend  func(pipeline.Outbound)
	failErr error
}

func (r *recorder) Send(_ context.Context, out pipeline.Outbound) (string, error) {
	if r.onSend != nil {
		r.onSend(out)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, out)
	return "", r.failErr
}

func (r *recorder) Typing(context.Context, pipeline.Key) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.typing++
	return errors.New("typing is optional and may fail")
}

func (r *recorder) texts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, o := range r.sent {
		out = append(out, o.Text)
	}
	return out
}

var key = pipeline.Key{Channel: "telegram", Chat: "555"}

func inbound(id, text string) pipeline.Inbound {
	return pipeline.Inbound{Key: key, SenderID: "555", SenderName: "Ann", MessageID: id, Text: text, Time: time.Now()}
}

type fixture struct {
	store  *memory.Store
	server *llmtest.Server
	resp   *Responder
	chain  pipeline.Handler
	dir    string
	model  Model
	sum    Summarizer // nil: no background summaries
}

func newFixture(t *testing.T, h llmtest.Handler, opts Options) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir()}
	f.open(t, h, opts)
	return f
}

func (f *fixture) open(t *testing.T, h llmtest.Handler, opts Options) {
	t.Helper()
	store, err := memory.Open(context.Background(), memory.Options{Dir: f.dir, Defaults: memory.Settings{MemoryEnabled: true, Threshold: 10},
		RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close(context.Background()) })
	f.store = store
	var model Model
	if h != nil {
		if f.server == nil {
			f.server = llmtest.NewServer(t, h)
		}
		model = llm.New(llm.Options{BaseURL: f.server.URL, APIKey: "sk-test", Model: "gpt-4o-mini", MaxRetries: -1, Timeout: 5 * time.Second})
	}
	f.model = model
	f.respond(opts)
}

// respond builds the responder and the chain with opts, on the fixture's
// store and model.
func (f *fixture) respond(opts Options) {
	counter := llm.NewCounter("gpt-4o-mini")
	f.resp = New(f.store, f.model, assemble.New(f.store, counter, assemble.DefaultBudget), f.sum, counter, opts)
	f.chain = pipeline.Chain(f.resp, pipeline.Dedupe(f.store, nil))
}

func (f *fixture) turn(t *testing.T, in pipeline.Inbound, out pipeline.Sender) error {
	t.Helper()
	return f.chain.Handle(context.Background(), &pipeline.Turn{In: in, Out: out})
}

func TestReplyIsDurableBeforeItIsSent(t *testing.T) {
	f := newFixture(t, llmtest.Echo("echo: "), Options{})
	rec := &recorder{}
	rec.onSend = func(out pipeline.Outbound) {
		stored, answered, err := f.store.Lookup(context.Background(), key, "m1")
		if err != nil || !stored || !answered {
			t.Errorf("at send time: stored=%v answered=%v err=%v; the reply must be durable first", stored, answered, err)
		}
		// Durable means on disk, not only queued: ask the backend itself.
		if _, answered, _ := f.store.SQLite().Lookup(context.Background(), key, "m1"); !answered {
			t.Error("the reply is only queued, not committed, when it is sent")
		}
	}
	if err := f.turn(t, inbound("m1", "hello"), rec); err != nil {
		t.Fatal(err)
	}
	if got := rec.texts(); len(got) != 1 || got[0] != "echo: hello" {
		t.Fatalf("sent %q", got)
	}
	if rec.typing == 0 {
		t.Error("no typing indicator while the LLM worked")
	}
}

func TestRedeliveryAfterRestartIsNotAnsweredTwice(t *testing.T) {
	f := newFixture(t, llmtest.Echo("echo: "), Options{})
	rec := &recorder{}
	if err := f.turn(t, inbound("42", "remember the milk"), rec); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.open(t, llmtest.Echo("echo: "), Options{}) // a restart: new store, new dedupe memory
	calls := len(f.server.Requests())
	if err := f.turn(t, inbound("42", "remember the milk"), rec); err != nil {
		t.Fatal(err)
	}
	if got := rec.texts(); len(got) != 1 {
		t.Errorf("redelivered message answered again: %q", got)
	}
	if len(f.server.Requests()) != calls {
		t.Error("redelivered message went to the LLM again")
	}
	st, _ := f.store.Status(context.Background(), key)
	if st.Total != 2 {
		t.Errorf("stored %d messages, want 2", st.Total)
	}
	// A new message is answered, with the history restored by key.
	if err := f.turn(t, inbound("43", "what should I buy?"), rec); err != nil {
		t.Fatal(err)
	}
	reqs := f.server.Requests()
	last := reqs[len(reqs)-1]
	var prompt strings.Builder
	for _, m := range last.Messages {
		prompt.WriteString(m.Content + "\n")
	}
	if !strings.Contains(prompt.String(), "remember the milk") {
		t.Errorf("history not restored after restart; prompt:\n%s", prompt.String())
	}
}

func TestFailingLLMGivesAPlainMessageAndKeepsTheUserMessage(t *testing.T) {
	cases := []struct {
		name string
		resp llmtest.Response
		want string
	}{
		{"server error", llmtest.Response{Status: 500}, "model server failed (HTTP 500)"},
		{"rate limited", llmtest.Response{Status: 429, RetryAfter: "30"}, "busy"},
		{"bad key", llmtest.Response{Status: 401}, "key"},
		{"garbage", llmtest.Response{Garbage: true}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(llmtest.Request) llmtest.Response { return tc.resp }, Options{})
			rec := &recorder{}
			if err := f.turn(t, inbound("7", "are you there?"), rec); err == nil {
				t.Error("a failed turn reported no error to the dispatcher")
			}
			got := rec.texts()
			if len(got) != 1 || !rec.sent[0].Plain {
				t.Fatalf("want one plain message, got %q", got)
			}
			if !strings.Contains(strings.ToLower(got[0]), strings.ToLower(tc.want)) || strings.Contains(got[0], "sk-test") {
				t.Errorf("user message %q, want it to mention %q and never the key", got[0], tc.want)
			}
			must(t, f.store.Flush(context.Background()))
			keptNotAnswered(t, f.store)
		})
	}
}

// keptNotAnswered checks the user's message "7" after a failed turn: kept
// in the history with no reply stored, and handled — the user was told, so
// neither a redelivery nor a restart answers it late.
func keptNotAnswered(t *testing.T, store *memory.Store) {
	t.Helper()
	ctx := context.Background()
	stored, handled, _ := store.Lookup(ctx, key, "7")
	if !stored || !handled {
		t.Errorf("stored=%v handled=%v: the user's message must be kept, and handled", stored, handled)
	}
	active, err := store.Active(ctx, key)
	must(t, err)
	for _, m := range active {
		if m.Role == memory.RoleAssistant {
			t.Errorf("a reply is stored for a failed turn: %+v", m)
		}
	}
	un, err := store.Unanswered(ctx, key.Channel, time.Now().Add(-time.Hour))
	must(t, err)
	if len(un) != 0 {
		t.Errorf("a failed turn the user was told about is left for a restart to answer: %+v", un)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestNoLLMConfigured(t *testing.T) {
	f := newFixture(t, nil, Options{NotConfigured: "configure llm.base_url please"})
	rec := &recorder{}
	must(t, f.turn(t, inbound("1", "hi"), rec))
	if got := rec.texts(); len(got) != 1 || got[0] != "configure llm.base_url please" {
		t.Fatalf("sent %q", got)
	}
}

func TestGroupMessagesNotForTheBotAreIgnored(t *testing.T) {
	f := newFixture(t, llmtest.Echo("echo: "), Options{})
	rec := &recorder{}
	in := inbound("1", "people chatting among themselves")
	in.IsGroup = true
	must(t, f.turn(t, in, rec))
	in = inbound("2", "@recall what do you think?")
	in.IsGroup, in.MentionsBot = true, true
	must(t, f.turn(t, in, rec))
	if got := rec.texts(); len(got) != 1 || !strings.Contains(got[0], "what do you think") {
		t.Fatalf("sent %q, want one answer to the mention", got)
	}
	must(t, f.store.Flush(context.Background()))
	st, _ := f.store.Status(context.Background(), key)
	if st.Total != 2 {
		t.Errorf("stored %d messages; only the mention and its answer belong in memory", st.Total)
	}
}

func TestStorageOutageWarnsOnce(t *testing.T) {
	f := newFixture(t, llmtest.Echo("echo: "), Options{StoreTimeout: 50 * time.Millisecond})
	rec := &recorder{}
	must(t, f.turn(t, inbound("1", "first"), rec))
	_, err := f.store.SQLite().DB().Exec(`PRAGMA query_only = 1`)
	must(t, err)
	for i, text := range []string{"second", "third", "fourth"} {
		_ = f.turn(t, inbound(string(rune('2'+i)), text), rec)
	}
	warnings := 0
	answers := 0
	for _, s := range rec.texts() {
		if strings.Contains(s, "trouble saving") {
			warnings++
		}
		if strings.HasPrefix(s, "echo: ") {
			answers++
		}
	}
	if warnings != 1 || answers != 4 {
		t.Errorf("got %d warnings and %d answers, want 1 warning and every message answered:\n%q", warnings, answers, rec.texts())
	}
	_, err = f.store.SQLite().DB().Exec(`PRAGMA query_only = 0`)
	must(t, err)
	must(t, f.store.Flush(context.Background()))
	st, _ := f.store.SQLite().Status(context.Background(), key)
	if st.Total != 8 {
		t.Errorf("after recovery %d messages stored, want 8", st.Total)
	}
}

func TestFactsAreExtractedAndDeduplicated(t *testing.T) {
	h := func(r llmtest.Request) llmtest.Response {
		if strings.Contains(r.Messages[0].Content, "extract important facts") {
			return llmtest.Response{Text: "- The user lives in Lisbon.\n- The user lives in Lisbon\n- The user has a dog called Rex."}
		}
		return llmtest.Response{Text: "Nice!"}
	}
	f := newFixture(t, h, Options{Facts: true})
	rec := &recorder{}
	must(t, f.turn(t, inbound("1", "I live in Lisbon with my dog Rex"), rec))
	must(t, f.turn(t, inbound("2", "Lisbon is lovely"), rec))
	f.resp.Wait()
	facts, err := f.store.Facts(context.Background(), key.Owner(), "", 0)
	must(t, err)
	if len(facts) != 2 {
		t.Fatalf("facts = %+v, want 2 distinct facts", facts)
	}
	hits, _ := f.store.Facts(context.Background(), key.Owner(), "dog", 5)
	if len(hits) != 1 || !strings.Contains(hits[0].Content, "Rex") {
		t.Errorf("fact search for dog = %+v", hits)
	}
}

func TestParseFacts(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"NONE", nil},
		{"none.", nil},
		{"", nil},
		{"- likes tea\n* lives in Oslo\n1. born 1990\n2) has two cats", []string{"likes tea", "lives in Oslo", "born 1990", "has two cats"}},
		{`["likes tea", "lives in Oslo"]`, []string{"likes tea", "lives in Oslo"}},
		{"```json\n[{\"fact\": \"likes tea\"}, {\"content\": \"owns a bike\"}]\n```", []string{"likes tea", "owns a bike"}},
		{`{"facts": ["speaks Portuguese"]}`, []string{"speaks Portuguese"}},
		{"• likes tea\n• Likes tea.", []string{"likes tea"}},
		{"[not json", []string{"[not json"}},
	}
	for _, tc := range cases {
		got := ParseFacts(tc.in)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("ParseFacts(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The kind the extraction prompt asks for becomes the fact's tag, which
// search_memory can search by.
func TestParseFactTags(t *testing.T) {
	cases := []struct {
		in   string
		want []string // "text#tag"
	}{
		{"[personal] Ann's sister has her birthday on 3 May\n- [Preference]: likes tea\n[other] -", []string{"Ann's sister has her birthday on 3 May#personal", "likes tea#preference"}},
		{"likes tea", []string{"likes tea#"}},
		{"[not a tag!] likes tea", []string{"[not a tag!] likes tea#"}},
		{`[{"fact": "owns a bike", "category": "Personal"}, {"fact": "runs", "tags": ["goal", "health"]}]`, []string{"owns a bike#personal", "runs#goal,health"}},
	}
	for _, tc := range cases {
		var got []string
		for _, f := range parseFacts(tc.in) {
			got = append(got, f.Content+"#"+strings.Join(f.Tags, ","))
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("parseFacts(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzParseFacts(f *testing.F) {
	for _, s := range []string{"NONE", "- a\n- b", `["x"]`, `[{"fact":"y"}]`, "```json\n{}\n```"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, fact := range ParseFacts(s) {
			if fact == "" || len([]rune(fact)) > 500 {
				t.Fatalf("bad fact %q", fact)
			}
		}
	})
}

// A failed turn run by the dispatcher is logged once, with why (it was
// logged twice: by the responder and by the dispatcher).
func TestFailedTurnIsLoggedOnce(t *testing.T) {
	f := newFixture(t, func(llmtest.Request) llmtest.Response { return llmtest.Response{Status: 401} }, Options{})
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	d := pipeline.NewDispatcher(f.chain, 1, log)
	rec := &recorder{}
	if err := d.Submit(inbound("9", "hi"), rec); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if len(rec.texts()) != 1 {
		t.Fatalf("the user was not told: %q", rec.texts())
	}
	if n := strings.Count(buf.String(), "level=ERROR"); n != 1 || !strings.Contains(buf.String(), "HTTP 401") {
		t.Errorf("%d error records, want 1 naming HTTP 401:\n%s", n, buf.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// noter is a recorder that can show and take away a wait note.
type noter struct {
	recorder
	shown   chan string
	removed chan struct{}
}

func (n *noter) ShowWaitNote(_ context.Context, _ pipeline.Key, text string) (func(context.Context) error, error) {
	n.shown <- text
	return func(context.Context) error { close(n.removed); return nil }, nil
}

// A slow model gets a "still thinking" note after StillThinkingAfter, taken
// away before the answer is sent.
func TestSlowAnswerShowsStillThinking(t *testing.T) {
	release := make(chan struct{})
	f := newFixture(t, func(r llmtest.Request) llmtest.Response {
		<-release
		return llmtest.Response{Text: "at last"}
	}, Options{StillThinkingAfter: 10 * time.Millisecond})
	n := &noter{shown: make(chan string, 1), removed: make(chan struct{})}
	n.onSend = func(pipeline.Outbound) {
		select {
		case <-n.removed:
		default:
			t.Error("the answer was sent while the note still showed")
		}
	}
	done := make(chan error, 1)
	go func() { done <- f.turn(t, inbound("s1", "a hard question"), n) }()
	select {
	case text := <-n.shown:
		if text != StillThinking {
			t.Errorf("note %q", text)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no note while the model was slow")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := n.texts(); len(got) != 1 || got[0] != "at last" {
		t.Errorf("sent %q", got)
	}

	// A quick answer gets no note.
	f2 := newFixture(t, llmtest.Echo(""), Options{StillThinkingAfter: time.Hour})
	n2 := &noter{shown: make(chan string, 1), removed: make(chan struct{})}
	if err := f2.turn(t, inbound("s2", "easy"), n2); err != nil {
		t.Fatal(err)
	}
	if len(n2.shown) != 0 {
		t.Error("a quick answer got a note")
	}
}

// typingCounter is a recorder whose Typing calls a test can wait for.
type typingCounter struct {
	recorder
	typed chan struct{} // one value per Typing call (never blocks)
}

func (c *typingCounter) Typing(ctx context.Context, key pipeline.Key) error {
	select {
	case c.typed <- struct{}{}:
	default:
	}
	return c.recorder.Typing(ctx, key)
}

// A platform that cannot take a message away (Telegram, WhatsApp) is sent
// "still thinking" as a message, in reply to the user's, once per turn
// even when the model is asked twice; its typing indicator goes on.
func TestSlowAnswerSendsStillThinkingOnce(t *testing.T) {
	noted := make(chan struct{})
	out := &typingCounter{typed: make(chan struct{}, 100)}
	out.onSend = func(o pipeline.Outbound) {
		if o.Text == StillThinking {
			close(noted) // a second note panics: once per turn
		}
	}
	f := newFixture(t, func(r llmtest.Request) llmtest.Response {
		if r.N == 1 {
			select {
			case <-noted:
			case <-time.After(10 * time.Second):
				return llmtest.Response{Status: 500, Text: "the test saw no note"}
			}
			// The model takes no images: the turn asks again, text only.
			return llmtest.Response{Status: 400, Text: "this model does not support image input"}
		}
		// Well past StillThinkingAfter (5 ms) in the second ask: three
		// typing renewals (20 ms apart).
		for range 3 {
			<-out.typed
		}
		return llmtest.Response{Text: "at last"}
	}, Options{StillThinkingAfter: 5 * time.Millisecond, TypingEvery: 20 * time.Millisecond})
	in := inbound("n1", "what is in this picture?")
	in.Image = &pipeline.Image{JPEG: []byte{0xff, 0xd8, 0xff, 0xd9}, Width: 1, Height: 1, Tokens: 85}
	if err := f.turn(t, in, out); err != nil {
		t.Fatal(err)
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	var texts []string
	for _, o := range out.sent {
		texts = append(texts, o.Text)
	}
	if len(texts) != 2 || texts[0] != StillThinking || texts[1] != "at last" {
		t.Fatalf("sent %q, want the note once, then the answer", texts)
	}
	if out.sent[0].ReplyTo != "n1" || !out.sent[0].Plain {
		t.Errorf("the note %+v: want a plain reply to the user's message", out.sent[0])
	}
}

// A turn its user cancels (pipeline.ErrInterrupted, Ctrl-C in the
// terminal) tells the user, keeps their message, stores no reply, and is
// not answered after a restart.
func TestInterruptedTurnKeepsTheMessageAndStoresNoReply(t *testing.T) {
	asked := make(chan struct{})
	f := newFixture(t, func(llmtest.Request) llmtest.Response {
		close(asked)
		return llmtest.Response{Hang: true}
	}, Options{})
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { <-asked; cancel(pipeline.ErrInterrupted) }()
	rec := &recorder{}
	err := f.chain.Handle(ctx, &pipeline.Turn{In: inbound("c1", "tell me everything"), Out: rec})
	if !errors.Is(err, pipeline.ErrInterrupted) {
		t.Fatalf("Handle: %v, want pipeline.ErrInterrupted", err)
	}
	if got := rec.texts(); len(got) != 1 || got[0] != Interrupted {
		t.Fatalf("sent %q, want only %q", got, Interrupted)
	}
	bg := context.Background()
	if err := f.store.Flush(bg); err != nil {
		t.Fatal(err)
	}
	data, err := f.store.Export(bg, key.Owner(), &key)
	if err != nil {
		t.Fatal(err)
	}
	var kept bool
	for _, c := range data.Conversations {
		for _, m := range c.Messages {
			switch {
			case m.Role == memory.RoleUser && m.Text == "tell me everything":
				kept = true
			case m.Role == memory.RoleAssistant:
				t.Errorf("a reply is stored for a cancelled answer: %q", m.Text)
			}
		}
	}
	if !kept {
		t.Errorf("the user's message is not kept: %+v", data.Conversations)
	}
	left, err := f.store.Unanswered(bg, key.Channel, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range left {
		if m.PlatformID == "c1" {
			t.Fatalf("the cancelled message would be answered after a restart: %+v", m)
		}
	}
}
