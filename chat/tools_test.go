package chat

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/memtools"
	"github.com/recallbot/recall/pipeline"
)

// toolFixture is a Responder with memory tools over a real store and the
// fake OpenAI-compatible server.
type toolFixture struct {
	store  *memory.Store
	server *llmtest.Server
	chain  pipeline.Handler
	calls  *toolCounter
}

type toolCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *toolCounter) ToolCall(name, outcome string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[name+"/"+outcome]++
}

func (c *toolCounter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

func newToolFixture(t *testing.T, dir string, h llmtest.Handler, mode string) *toolFixture {
	t.Helper()
	return newToolFixtureWith(t, dir, h, func(o *Options, _ *memory.Store, _ llm.Counter) { o.Tools.Mode = mode })
}

// newToolFixtureWith is newToolFixture with options set by opt.
func newToolFixtureWith(t *testing.T, dir string, h llmtest.Handler, opt func(*Options, *memory.Store, llm.Counter)) *toolFixture {
	t.Helper()
	store, err := memory.Open(context.Background(), memory.Options{Dir: dir, Defaults: memory.Settings{MemoryEnabled: true, Threshold: 10}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close(context.Background()) })
	counter := llm.NewCounter("test-model")
	f := &toolFixture{store: store, server: llmtest.NewServer(t, h), calls: &toolCounter{n: map[string]int{}}}
	model := llm.New(llm.Options{BaseURL: f.server.URL, APIKey: "sk-test", Model: "test-model", MaxRetries: -1, Timeout: 5 * time.Second})
	box := memtools.New(store, counter, memtools.Options{Budget: 300, Observer: f.calls, Location: time.UTC})
	opts := Options{Tools: Tools{Box: box, MaxRounds: 3}}
	opt(&opts, store, counter)
	resp := New(store, model, assemble.New(store, counter, assemble.DefaultBudget), nil, counter, opts)
	f.chain = pipeline.Chain(resp, pipeline.Dedupe(store, nil))
	return f
}

func (f *toolFixture) turn(t *testing.T, in pipeline.Inbound) []string {
	t.Helper()
	rec := &recorder{}
	if err := f.chain.Handle(context.Background(), &pipeline.Turn{In: in, Out: rec}); err != nil {
		t.Fatal(err)
	}
	return rec.texts()
}

// lastToolResult is the content of the last tool message in a request.
func lastToolResult(r llmtest.Request) (string, bool) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == llm.RoleTool {
			return r.Messages[i].Content, true
		}
	}
	return "", false
}

// scripted answers each request by the model's script: calls for the
// requests that carry no tool result yet, then text.
func scripted(calls func(n int, r llmtest.Request) []llm.ToolCall, final func(r llmtest.Request) string) llmtest.Handler {
	return func(r llmtest.Request) llmtest.Response {
		if c := calls(r.N, r); len(c) > 0 && len(r.Tools) > 0 {
			return llmtest.Response{ToolCalls: c}
		}
		return llmtest.Response{Text: final(r)}
	}
}

func TestRememberThroughTheToolSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	h := scripted(func(n int, r llmtest.Request) []llm.ToolCall {
		if _, done := lastToolResult(r); done || !strings.Contains(r.Messages[len(r.Messages)-1].Content, "Remember that") {
			return nil
		}
		return []llm.ToolCall{{ID: "c1", Name: "remember", Arguments: `{"key":"sister_birthday","text":"My sister's birthday is 3 May"}`}}
	}, func(r llmtest.Request) string {
		if res, ok := lastToolResult(r); ok {
			return "Done: " + res
		}
		for _, m := range r.Messages {
			if m.Role == llm.RoleSystem && strings.Contains(m.Content, "3 May") {
				return "Her birthday is on 3 May."
			}
		}
		return "I don't know."
	})
	f := newToolFixture(t, dir, h, ToolsAuto)
	got := f.turn(t, inbound("1", "Remember that my sister's birthday is 3 May"))
	if len(got) != 1 || got[0] != "Done: Saved note sister_birthday." {
		t.Fatalf("reply = %q", got)
	}
	reqs := f.server.Requests()
	if len(reqs) != 2 || len(reqs[0].Tools) != 5 {
		t.Fatalf("want 2 requests, the first offering the 5 tools; got %d, tools %v", len(reqs), reqs[0].Tools)
	}
	// The second request carries the assistant's call and the result.
	var sawCall bool
	for _, m := range reqs[1].Messages {
		if m.Role == llm.RoleAssistant && len(m.ToolCalls) == 1 && m.ToolCalls[0].ID == "c1" {
			sawCall = true
		}
	}
	if !sawCall {
		t.Fatalf("the tool round lost the assistant's call: %+v", reqs[1].Messages)
	}
	if n := f.calls.get("remember/ok"); n != 1 {
		t.Fatalf("remember/ok counted %d times", n)
	}
	if err := f.store.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// A restart: a new store and responder on the same directory.
	f2 := newToolFixture(t, dir, h, ToolsAuto)
	if got := f2.turn(t, inbound("2", "When is my sister's birthday?")); len(got) != 1 || got[0] != "Her birthday is on 3 May." {
		t.Fatalf("after restart reply = %q (the note must be in the prompt)", got)
	}
}

func TestToolsActOnlyOnTheTurnsConversation(t *testing.T) {
	dir := t.TempDir()
	other := pipeline.Key{Channel: "telegram", Chat: "999"}
	var results []string
	var mu sync.Mutex
	h := func(r llmtest.Request) llmtest.Response {
		if res, ok := lastToolResult(r); ok {
			mu.Lock()
			results = append(results, res)
			mu.Unlock()
			return llmtest.Response{Text: "ok"}
		}
		return llmtest.Response{ToolCalls: []llm.ToolCall{
			{ID: "a", Name: "search_memory", Arguments: `{"query":"password","key":"telegram:999","owner":"telegram:999"}`},
			{ID: "b", Name: "remember", Arguments: `{"key":"x","text":"y","owner":"telegram:999"}`},
			{ID: "c", Name: "recall_summary", Arguments: `{"id":1}`},
			{ID: "d", Name: "delete_everything", Arguments: `{}`},
			{ID: "e", Name: "forget", Arguments: `{"key":`},
		}}
	}
	f := newToolFixture(t, dir, h, ToolsAuto)
	ctx := context.Background()
	// The other conversation has an archived secret and a summary.
	if err := f.store.Append(ctx, memory.Message{Key: other, Role: memory.RoleUser, PlatformID: "s1", Text: "my password is hunter2", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	act, err := f.store.Active(ctx, other)
	if err != nil || len(act) != 1 {
		t.Fatal(act, err)
	}
	if _, err := f.store.Archive(ctx, other, []int64{act[0].ID}, memory.Summary{Level: 1, Text: "secret talk", From: act[0].Time, To: act[0].Time}, 0); err != nil {
		t.Fatal(err)
	}
	f.turn(t, inbound("1", "what is the password?"))
	mu.Lock()
	defer mu.Unlock()
	if len(results) != 1 {
		t.Fatalf("results = %q", results)
	}
	all := strings.Join(results, "\n")
	if strings.Contains(all, "hunter2") || strings.Contains(all, "secret talk") {
		t.Fatalf("another conversation's data reached the model: %s", all)
	}
	// The last tool message of the request holds e's answer; check each call was answered.
	req := f.server.Requests()[1]
	byID := map[string]string{}
	for _, m := range req.Messages {
		if m.Role == llm.RoleTool {
			byID[m.ToolCallID] = m.Content
		}
	}
	for id, want := range map[string]string{"a": "No archived messages", "c": "error: there is no summary 1", "d": "error: there is no tool named", "e": "error: the arguments are not valid JSON"} {
		if !strings.HasPrefix(byID[id], want) {
			t.Errorf("call %s answered %q, want prefix %q", id, byID[id], want)
		}
	}
	// remember acted on the turn's owner, not the one named in the arguments.
	if ms, _ := f.store.Memories(ctx, other.Owner()); len(ms) != 0 {
		t.Fatalf("a note landed in another owner's memory: %+v", ms)
	}
	if ms, _ := f.store.Memories(ctx, key.Owner()); len(ms) != 1 || ms[0].Key != "x" {
		t.Fatalf("the turn's notes = %+v", ms)
	}
	if f.calls.get("unknown/unknown") != 1 || f.calls.get("forget/error") != 1 {
		t.Fatalf("metrics: %v", f.calls.n)
	}
}

func TestToolRoundsAreBounded(t *testing.T) {
	h := func(r llmtest.Request) llmtest.Response {
		if len(r.Tools) > 0 {
			return llmtest.Response{ToolCalls: []llm.ToolCall{{Name: "list_memories", Arguments: `{}`}}}
		}
		return llmtest.Response{Text: "final answer"}
	}
	f := newToolFixture(t, t.TempDir(), h, ToolsAuto)
	if got := f.turn(t, inbound("1", "loop forever")); len(got) != 1 || got[0] != "final answer" {
		t.Fatalf("reply = %q", got)
	}
	reqs := f.server.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests; want 3 tool rounds and one final answer without tools", len(reqs))
	}
	if len(reqs[3].Tools) != 0 {
		t.Fatal("the last round still offered tools")
	}
}

func TestServerThatRefusesToolsIsNotOfferedThemAgain(t *testing.T) {
	h := func(r llmtest.Request) llmtest.Response {
		if len(r.Tools) > 0 {
			return llmtest.Response{Status: 400, Text: "registry.ollama.ai/library/gemma:2b does not support tools"}
		}
		return llmtest.Response{Text: "plain answer"}
	}
	f := newToolFixture(t, t.TempDir(), h, ToolsAuto)
	for i, id := range []string{"1", "2"} {
		if got := f.turn(t, inbound(id, "hello")); len(got) != 1 || got[0] != "plain answer" {
			t.Fatalf("turn %d reply = %q", i, got)
		}
	}
	reqs := f.server.Requests()
	if len(reqs) != 3 || len(reqs[0].Tools) == 0 || len(reqs[1].Tools) != 0 || len(reqs[2].Tools) != 0 {
		t.Fatalf("want: tools refused once, retried without, then never offered; got %d requests", len(reqs))
	}
}

func TestToolsOffOffersNone(t *testing.T) {
	f := newToolFixture(t, t.TempDir(), llmtest.Echo("e: "), ToolsOff)
	f.turn(t, inbound("1", "hi"))
	if reqs := f.server.Requests(); len(reqs) != 1 || len(reqs[0].Tools) != 0 {
		t.Fatalf("tools offered with mode off: %+v", reqs)
	}
}

func TestGroupNotesAreAnnounced(t *testing.T) {
	h := func(r llmtest.Request) llmtest.Response {
		if _, ok := lastToolResult(r); ok {
			return llmtest.Response{Text: "Sure."}
		}
		return llmtest.Response{ToolCalls: []llm.ToolCall{{ID: "1", Name: "remember", Arguments: `{"key":"standup","text":"Standup is at 9:30"}`}}}
	}
	f := newToolFixture(t, t.TempDir(), h, ToolsAuto)
	in := inbound("1", "@bot remember standup is at 9:30")
	in.Key = pipeline.Key{Channel: "telegram", Chat: "-100"}
	in.IsGroup, in.MentionsBot = true, true
	got := f.turn(t, in)
	if len(got) != 1 || got[0] != "Sure.\n📝 noted: standup — Standup is at 9:30" {
		t.Fatalf("reply = %q", got)
	}
}

// A provider's context-length error, whether it names the window (OpenAI's
// message, or only its error code) or not (llama.cpp), is answered by a
// smaller prompt on a second call; the smaller size is kept for later turns.
func TestContextLengthErrorIsAnsweredByASmallerPrompt(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: shrinks a prompt round by round (5 s on a busy 2-core machine); go test without -short runs it")
	}
	for _, tc := range []struct {
		refusal llmtest.Response
		calls   int // for the first turn
	}{
		{llmtest.Response{Status: 400, Text: "This model's maximum context length is 1024 tokens. However, your messages resulted in many more tokens."}, 2},
		{llmtest.Response{Status: 400, Text: "Input tokens exceed the configured limit of 1024 tokens.", ErrorCode: "context_length_exceeded"}, 2},
		// No window named: the prompt is halved until it fits.
		{llmtest.Response{Status: 400, Text: "the request exceeds the available context size, try increasing it"}, 3},
	} {
		t.Run(tc.refusal.Text[:20], func(t *testing.T) { testContextLengthRefusal(t, tc.refusal, tc.calls) })
	}
}

func testContextLengthRefusal(t *testing.T, refusal llmtest.Response, calls int) {
	size := func(r llmtest.Request) int {
		n := 0
		for _, m := range r.Messages {
			n += len(m.Content)
		}
		return n
	}
	const window = 1024 // tokens; the fake counts 4 characters a token
	h := func(r llmtest.Request) llmtest.Response {
		if size(r)/4 > window-100 { // the provider's tokenizer counts a little more than ours
			return refusal
		}
		return llmtest.Response{Text: "fits"}
	}
	f := newToolFixture(t, t.TempDir(), h, ToolsOff)
	ctx := context.Background()
	long := strings.Repeat("word ", 100) // ~125 tokens
	for i := range 20 {
		role := memory.RoleUser
		if i%2 == 1 {
			role = memory.RoleAssistant
		}
		if err := f.store.Append(ctx, memory.Message{Key: key, Role: role, PlatformID: "old" + string(rune('a'+i)), Text: long, Time: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.turn(t, inbound("1", "hello")); len(got) != 1 || got[0] != "fits" {
		t.Fatalf("reply = %q; a context-length error must be answered by a smaller prompt", got)
	}
	reqs := f.server.Requests()
	if len(reqs) != calls {
		t.Fatalf("%d requests for the turn, want %d", len(reqs), calls)
	}
	for i := 1; i < len(reqs); i++ {
		if size(reqs[i]) >= size(reqs[i-1]) {
			t.Fatalf("request %d is not smaller than the one refused", i+1)
		}
	}
	// The window is remembered: the next turn fits at once.
	if got := f.turn(t, inbound("2", "again")); len(got) != 1 || got[0] != "fits" {
		t.Fatalf("reply = %q", got)
	}
	if n := len(f.server.Requests()); n != calls+1 {
		t.Fatalf("%d requests after the second turn; the learned window was not used", n)
	}
}

func TestBudgetWithinAWindow(t *testing.T) {
	b := assemble.DefaultBudget
	if got := b.Within(0); got != b {
		t.Fatal("no cap changed the budget")
	}
	if got := b.Within(b.Total); got != b {
		t.Fatal("a cap at the total changed the budget")
	}
	small := b.Within(1536)
	if small.Total != 1536 || small.System != 384 || small.Memories != 384 || small.Summaries != 512 || small.Snippets != 384 || small.Recent != 1536 {
		t.Fatalf("Within(1536) = %+v: each part within its share of the window", small)
	}
}

func TestFactsOffStopsExtraction(t *testing.T) {
	h := func(r llmtest.Request) llmtest.Response {
		if strings.Contains(r.Messages[0].Content, "extract important facts") {
			return llmtest.Response{Text: "- The user lives in Lisbon."}
		}
		return llmtest.Response{Text: "Nice!"}
	}
	f := newFixture(t, h, Options{Facts: true})
	ctx := context.Background()
	st, err := f.store.Settings(ctx, key.Owner())
	must(t, err)
	st.FactsOff = true
	must(t, f.store.PutSettings(ctx, st))
	must(t, f.turn(t, inbound("1", "I live in Lisbon"), &recorder{}))
	f.resp.Wait()
	if facts, _ := f.store.Facts(ctx, key.Owner(), "", 0); len(facts) != 0 {
		t.Fatalf("facts learned while /facts off: %+v", facts)
	}
	if n := len(f.server.Requests()); n != 1 {
		t.Fatalf("%d model calls; the extraction call must not be made", n)
	}
}

func TestContextShowsToolsOfferedAndCalled(t *testing.T) {
	h := func(r llmtest.Request) llmtest.Response {
		if _, ok := lastToolResult(r); ok || len(r.Tools) == 0 {
			return llmtest.Response{Text: "none"}
		}
		return llmtest.Response{ToolCalls: []llm.ToolCall{{ID: "1", Name: "list_memories", Arguments: `{}`}}}
	}
	store, err := memory.Open(context.Background(), memory.Options{Dir: t.TempDir(), Defaults: memory.Settings{MemoryEnabled: true}})
	must(t, err)
	t.Cleanup(func() { store.Close(context.Background()) })
	srv := llmtest.NewServer(t, h)
	counter := llm.NewCounter("test-model")
	resp := New(store, llm.New(llm.Options{BaseURL: srv.URL, Model: "test-model", MaxRetries: -1}),
		assemble.New(store, counter, assemble.DefaultBudget), nil, counter,
		Options{Tools: Tools{Box: memtools.New(store, counter, memtools.Options{}), Mode: ToolsAuto}})
	bd, err := resp.Preview(context.Background(), key, "hi")
	must(t, err)
	if len(bd.Notes) != 1 || !strings.Contains(bd.Notes[0], "search_memory, remember, forget, list_memories, recall_summary") {
		t.Fatalf("notes before a turn = %q", bd.Notes)
	}
	must(t, resp.Handle(context.Background(), &pipeline.Turn{In: inbound("1", "what do you know?"), Out: &recorder{}}))
	bd, _ = resp.Preview(context.Background(), key, "hi")
	if len(bd.Notes) != 2 || bd.Notes[1] != "my last answer here called: list_memories" {
		t.Fatalf("notes after a turn = %q", bd.Notes)
	}
}

// A model whose context window (2,048 tokens) is smaller than the prompt
// budget (8,000 tokens): every request of a long conversation with notes,
// summaries and an archive fits in the window less the reply's reserve, so
// the provider never has to refuse one; with the memory tools offered, the
// tools' declarations and the results of two searches fit too.
func TestPromptsFitASmallContextWindow(t *testing.T) {
	for _, mode := range []string{ToolsOff, ToolsAuto} {
		t.Run(mode, func(t *testing.T) { testPromptsFitASmallWindow(t, mode) })
	}
}

func testPromptsFitASmallWindow(t *testing.T, mode string) {
	const window, reserve = 2048, 512
	counter := llm.NewCounter("test-model")
	var declared int // the tools' declarations, in the fake's count
	tokens := func(r llmtest.Request) int {
		n := 0
		for _, m := range r.Messages {
			n += counter.Count(m.Content)
			for _, c := range m.ToolCalls {
				n += counter.Count(c.Name + c.Arguments)
			}
		}
		if len(r.Tools) > 0 {
			n += declared
		}
		return n
	}
	var mu sync.Mutex
	var sizes []int
	h := func(r llmtest.Request) llmtest.Response {
		n := tokens(r)
		mu.Lock()
		sizes = append(sizes, n)
		mu.Unlock()
		if n > window-reserve {
			return llmtest.Response{Status: 400, Text: "This model's maximum context length is 2048 tokens.", ErrorCode: "context_length_exceeded"}
		}
		if len(r.Tools) > 0 {
			results := 0
			for _, m := range r.Messages {
				if m.Role == llm.RoleTool {
					results++
				}
			}
			switch results {
			case 0:
				return llmtest.Response{ToolCalls: []llm.ToolCall{{ID: "s1", Name: memtools.SearchMemory, Arguments: `{"query":"lease flat garden"}`}}}
			case 1:
				return llmtest.Response{ToolCalls: []llm.ToolCall{{ID: "s2", Name: memtools.SearchMemory, Arguments: `{"query":"talked again"}`}}}
			}
		}
		return llmtest.Response{Text: "fits"}
	}
	f := newToolFixtureWith(t, t.TempDir(), h, func(o *Options, store *memory.Store, counter llm.Counter) {
		o.Tools.Mode, o.ContextWindow, o.ReplyReserve = mode, window, reserve
		// The app's budget for one result: the snippet budget.
		o.Tools.Box = memtools.New(store, counter, memtools.Options{Budget: assemble.DefaultBudget.Snippets})
		for _, tool := range o.Tools.Box.Tools() {
			declared += counter.Count(tool.Name + tool.Description + string(tool.Parameters))
		}
	})
	ctx := context.Background()
	long := strings.Repeat("we talked about the lease of the flat and the garden again ", 8) // ~120 tokens
	var msgs []memory.Message
	for i := range 40 {
		at := time.Now().Add(time.Duration(i-100) * time.Hour)
		msgs = append(msgs,
			memory.Message{Key: key, Role: memory.RoleUser, PlatformID: fmt.Sprint("old", i), Text: long, Time: at},
			memory.Message{Key: key, Role: memory.RoleAssistant, ReplyTo: fmt.Sprint("old", i), Text: long, Time: at.Add(time.Second)})
	}
	must(t, f.store.Append(ctx, msgs...))
	act, err := f.store.Active(ctx, key)
	must(t, err)
	var ids []int64
	for _, m := range act[:60] {
		ids = append(ids, m.ID)
	}
	_, err = f.store.Archive(ctx, key, ids, memory.Summary{Level: 1, Text: strings.Repeat("They discussed the lease at length. ", 60), From: act[0].Time, To: act[59].Time}, 30)
	must(t, err)
	must(t, f.store.Remember(ctx, key.Owner(), "flat", strings.Repeat("the flat is on Elm Street ", 20)))
	turns := []string{"what about the lease?", "and the garden?", "tell me everything about the flat"}
	for i, text := range turns {
		if got := f.turn(t, inbound(fmt.Sprint(i+1), text)); len(got) != 1 || got[0] != "fits" {
			t.Fatalf("turn %d reply = %q", i+1, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	perTurn := 1
	if mode != ToolsOff {
		perTurn = 3 // two searches, then the answer
	}
	if len(sizes) != len(turns)*perTurn {
		t.Fatalf("%d requests for %d turns (tokens %v): a request did not fit the window", len(sizes), len(turns), sizes)
	}
	for i, n := range sizes {
		if n > window-reserve || n < (window-reserve)/2 {
			t.Errorf("request %d: %d tokens; want it to fill the window less the reserve (%d), not more", i+1, n, window-reserve)
		}
	}
	t.Logf("tokens per request: %v", sizes)
}

// A streamed answer goes through tool rounds: the typing indicator keeps
// running while the tools work (no text yet), the answer streams after
// them, and it is what is stored and finished, with the note saved.
func TestStreamingAndTypingThroughToolRounds(t *testing.T) {
	h := func(r llmtest.Request) llmtest.Response {
		if _, ok := lastToolResult(r); !ok {
			return llmtest.Response{ToolCalls: []llm.ToolCall{{ID: "1", Name: memtools.Remember, Arguments: `{"key":"sister_birthday","text":"3 May"}`}},
				Delay: 60 * time.Millisecond}
		}
		return llmtest.Response{Pieces: []string{"Noted", ", her birthday", " is 3 May."}}
	}
	f := newFixture(t, h, Options{})
	f.respond(Options{TypingEvery: 5 * time.Millisecond,
		Tools: Tools{Box: memtools.New(f.store, llm.NewCounter("gpt-4o-mini"), memtools.Options{}), Mode: ToolsAuto}})
	rec := &streamer{}
	must(t, f.turn(t, inbound("1", "Remember that my sister's birthday is 3 May"), rec))
	reqs := f.server.Requests()
	if len(reqs) != 2 || !reqs[0].Stream || !reqs[1].Stream || len(reqs[0].Tools) == 0 {
		t.Fatalf("want two streamed requests, the first offering tools; got %+v", reqs)
	}
	if len(rec.streams) != 1 {
		t.Fatalf("%d streams, want 1", len(rec.streams))
	}
	st := rec.streams[0]
	const want = "Noted, her birthday is 3 May."
	if st.appended.String() != want || len(st.finished) != 1 || st.finished[0].Text != want {
		t.Fatalf("streamed %q, finished %+v", st.appended.String(), st.finished)
	}
	if st.typingAt < 2 {
		t.Errorf("%d typing indicators before the first text; the tool round took 60 ms at 5 ms a tick", st.typingAt)
	}
	if ms, _ := f.store.Memories(context.Background(), key.Owner()); len(ms) != 1 || ms[0].Content != "3 May" {
		t.Errorf("notes = %+v", ms)
	}
	if msgs, _ := f.store.Active(context.Background(), key); len(msgs) != 2 || msgs[1].Text != want {
		t.Errorf("stored %+v", msgs)
	}
}

// A group turn whose tool round outgrows the window is retried with a
// smaller prompt; the model saving its note again is announced once.
func TestRetriedGroupTurnAnnouncesANoteOnce(t *testing.T) {
	var refused sync.Once
	h := func(r llmtest.Request) llmtest.Response {
		if _, ok := lastToolResult(r); !ok {
			return llmtest.Response{ToolCalls: []llm.ToolCall{{ID: "1", Name: memtools.Remember, Arguments: `{"key":"standup","text":"Standup is at 9:30"}`}}}
		}
		resp := llmtest.Response{Text: "Sure."}
		refused.Do(func() {
			resp = llmtest.Response{Status: 400, Text: "This model's maximum context length is 4096 tokens."}
		})
		return resp
	}
	f := newToolFixture(t, t.TempDir(), h, ToolsAuto)
	in := inbound("1", "@bot remember standup is at 9:30")
	in.Key = pipeline.Key{Channel: "telegram", Chat: "-100"}
	in.IsGroup, in.MentionsBot = true, true
	for i := range 20 { // a long conversation: a smaller prompt can be built
		must(t, f.store.Append(context.Background(), memory.Message{Key: in.Key, Role: memory.RoleUser, PlatformID: fmt.Sprint("old", i),
			Text: strings.Repeat("word ", 100), Time: time.Now().Add(-time.Hour)}))
	}
	got := f.turn(t, in)
	if len(got) != 1 || got[0] != "Sure.\n📝 noted: standup — Standup is at 9:30" {
		t.Fatalf("reply = %q", got)
	}
	if n := len(f.server.Requests()); n != 4 {
		t.Fatalf("%d requests; want a tool round refused, then the turn again", n)
	}
}
