package whatsapp

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"
	"google.golang.org/protobuf/proto"

	"github.com/recallbot/recall/adapters/adaptertest"
	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/summary"
)

// The full chain, built as cmd/bot wires it: the store on a temp dir, the
// LLM client on an llmtest fake, assembly, summaries, commands, the
// responder, access, dedupe and the dispatcher; the adapter in front, on
// the fake client.

// stackOptions tune a stack.
type stackOptions struct {
	groupsReply string
	splitLimit  int
	allowed     []string        // default: the test user and user2
	llm         llmtest.Handler // default: Echo("echo: ")
	// accept wraps the intake's Accept.
	accept func(ctx context.Context, in pipeline.Inbound, next pipeline.AcceptFunc) error
	// tune adjusts the adapter before it runs.
	tune func(a *Adapter)
	// config adjusts the bot's configuration.
	config func(*config.Config)
}

// stack is a running bot on the fake client.
type stack struct {
	t    testing.TB
	opts stackOptions
	dir  string
	wa   *fakeClient
	llm  *llmtest.Server
	logs *adaptertest.SyncBuffer

	chain       *adaptertest.Chain
	store       *memory.Store
	resp        *chat.Responder
	sum         *summary.Summarizer
	disp        *pipeline.Dispatcher
	ad          *Adapter
	outbox      *chat.Outbox
	cancel      context.CancelFunc
	runErr      chan error
	retryDone   chan struct{} // the outbox's retries ended
	stopRetries context.CancelFunc
	seq         atomic.Int64
}

func newStack(t testing.TB, opts stackOptions) *stack {
	t.Helper()
	if opts.allowed == nil {
		opts.allowed = []string{"whatsapp:" + userPhone, "whatsapp:" + user2}
	}
	if opts.llm == nil {
		opts.llm = llmtest.Echo("echo: ")
	}
	s := &stack{t: t, opts: opts, dir: t.TempDir(), wa: newFakeClient(t), logs: &adaptertest.SyncBuffer{}}
	s.llm = llmtest.NewServer(t, opts.llm)
	t.Cleanup(func() {
		if s.cancel != nil {
			s.stop()
		}
		if t.Failed() {
			t.Logf("logs:\n%s", s.logs.String())
		}
	})
	s.start()
	return s
}

// start opens the store, builds the chain, resubmits the accepted but
// unanswered messages (as cmd/bot does at start) and runs the adapter; it
// returns once the adapter is connected.
func (s *stack) start() {
	t := s.t
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := adaptertest.NewChain(t, adaptertest.ChainOptions{Dir: s.dir, LLMURL: s.llm.URL, Allowed: s.opts.allowed, Log: log, Journal: true, Config: s.opts.config})
	store, resp, sum, disp, intake := c.Store, c.Resp, c.Sum, c.Disp, c.Intake

	var accept pipeline.AcceptFunc = intake.Accept
	if w := s.opts.accept; w != nil {
		accept = func(ctx context.Context, in pipeline.Inbound) error { return w(ctx, in, intake.Accept) }
	}
	s.wa.detach()
	ad, err := New(Options{
		DataDir: s.dir, GroupsReply: s.opts.groupsReply, SplitLimit: s.opts.splitLimit,
		BacklogWindow: 10 * time.Minute, Log: log, Client: s.wa,
		Revoked: func(ctx context.Context, key pipeline.Key, id, sender string) error {
			_, err := store.PurgeMessage(ctx, key, id, sender)
			return err
		},
		Replies: func(ctx context.Context, key pipeline.Key, limit int) ([]Reply, error) {
			msgs, err := store.Recent(ctx, key, limit, 0)
			var out []Reply
			for i := len(msgs) - 1; i >= 0; i-- {
				if msgs[i].Role == memory.RoleAssistant {
					out = append(out, Reply{Text: msgs[i].Text, ReplyTo: msgs[i].ReplyTo})
				}
			}
			return out, err
		},
	}, disp.Submit, accept)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ad.retryBase, ad.retryMax = time.Millisecond, 10*time.Millisecond
	ad.pace, ad.partGap = nil, 0 // the pace has its own test
	if s.opts.tune != nil {
		s.opts.tune(ad)
	}

	// What cmd/bot does at start: the journal of replies being delivered,
	// the replies the last run never sent, then what was accepted but not
	// answered, within the same backlog window.
	outbox := c.App.Outbox
	unsent, err := outbox.Unsent(ctx, store, Channel, time.Hour)
	if err != nil {
		t.Fatalf("listing unsent replies: %v", err)
	}
	pending, err := chat.Pending(ctx, store, Channel, ad.BacklogWindow())
	if err != nil {
		t.Fatalf("listing pending messages: %v", err)
	}
	for _, in := range pending {
		if err := disp.Submit(in, ad.Sender()); err != nil {
			t.Fatalf("resubmitting %s: %v", in.MessageID, err)
		}
	}

	runCtx, cancel := context.WithCancel(context.Background())
	s.chain, s.store, s.resp, s.sum, s.disp, s.ad, s.outbox, s.cancel = c, store, resp, sum, disp, ad, outbox, cancel
	s.runErr = make(chan error, 1)
	s.retryDone = make(chan struct{})
	go func() { s.runErr <- ad.Run(runCtx) }()
	retryCtx, stopRetries := context.WithCancel(context.Background())
	s.stopRetries = stopRetries
	go func() {
		defer close(s.retryDone)
		if _, _, err := unsent.Send(retryCtx, ad.Sender()); err != nil && retryCtx.Err() == nil {
			t.Errorf("sending the replies the last run never sent: %v", err)
		}
		_ = outbox.RunRetries(retryCtx, Channel, retrySender{Sender: ad.Sender(), wa: s.wa})
	}()
	s.wa.waitFor("the adapter to connect", func() bool { return s.wa.connected })
}

// stop stops the adapter, drains the dispatcher, closes the adapter and
// the store, in the order cmd/bot should.
func (s *stack) stop() {
	t := s.t
	t.Helper()
	s.cancel()
	s.cancel = nil
	if err := <-s.runErr; err != nil {
		t.Errorf("Run: %v", err)
	}
	s.shutdown()
}

// shutdown drains and closes what start opened (Run has returned).
func (s *stack) shutdown() {
	s.stopRetries()
	<-s.retryDone
	s.chain.Close(s.t, s.ad.Close)
	s.outbox.Close()
}

// restart stops everything and starts again on the same data and account.
func (s *stack) restart() {
	s.t.Helper()
	s.stop()
	s.start()
}

// id returns a fresh platform message id.
func (s *stack) id() string { return "3EB0" + itoa(1000+s.seq.Add(1)) }

// dm delivers a direct message from sender (its chat is the sender) and
// reports whether it was taken (acknowledged).
func (s *stack) dm(sender types.JID, id, text string) bool {
	s.t.Helper()
	ev := msgEvent(sender, sender, id, text)
	ev.Info.Timestamp = time.Now()
	return s.wa.deliver(ev)
}

// group delivers a group message, mentioning the bot when mention is set.
func (s *stack) group(sender types.JID, id, text string, mention bool) bool {
	s.t.Helper()
	ev := msgEvent(groupJID, sender, id, text)
	if mention {
		ev = extEvent(groupJID, sender, id, "@"+botPhone+" "+text, &waE2E.ContextInfo{MentionedJID: []string{testMe.PN.String()}})
	}
	ev.Info.Timestamp = time.Now()
	return s.wa.deliver(ev)
}

// waitText waits for a message to chat whose text contains sub.
func (s *stack) waitText(chat types.JID, sub string) sentMsg {
	s.t.Helper()
	return s.wa.waitSent("a message to "+chat.String()+" containing "+strconv.Quote(sub), func(m sentMsg) bool {
		return m.To == chat && strings.Contains(m.Text(), sub)
	})
}

// count is how many messages to chat contain sub.
func (s *stack) count(chat types.JID, sub string) int {
	n := 0
	for _, m := range s.wa.sentMsgs() {
		if m.To == chat && strings.Contains(m.Text(), sub) {
			n++
		}
	}
	return n
}

// lookup reports whether a platform message is stored and answered.
func (s *stack) lookup(key pipeline.Key, id string) (stored, answered bool) {
	s.t.Helper()
	st, an, err := s.store.Lookup(context.Background(), key, id)
	if err != nil {
		s.t.Fatalf("lookup: %v", err)
	}
	return st, an
}

// lastPrompt is the newest LLM request's messages.
func (s *stack) lastPrompt() []llm.Message {
	reqs := s.llm.Requests()
	if len(reqs) == 0 {
		return nil
	}
	return reqs[len(reqs)-1].Messages
}

// docMessage is a message with a document, for checks.
func docOf(m sentMsg) *waE2E.DocumentMessage { return m.Msg.GetDocumentMessage() }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// lidEvent is a direct message arriving on the user's @lid chat, without
// the phone number in the message (the mapping comes from the LID store).
func lidEvent(id, text string) *events.Message {
	ev := msgEvent(lidJID, lidJID, id, text)
	ev.Info.Timestamp = time.Now()
	ev.Info.AddressingMode = types.AddressingModeLID
	return ev
}

// quotedReply is a message quoting one of the bot's messages.
func quotedReply(chat, sender types.JID, id, text, quotedID string) *events.Message {
	ev := extEvent(chat, sender, id, text, &waE2E.ContextInfo{
		StanzaID: proto.String(quotedID), Participant: proto.String(testMe.PN.String()),
	})
	ev.Info.Timestamp = time.Now()
	return ev
}

// retrySender is the adapter as the outbox's retries use it; it counts the
// attempts on the fake (retries), so a test can wait for one.
type retrySender struct {
	pipeline.Sender
	wa *fakeClient
}

func (r retrySender) Send(ctx context.Context, out pipeline.Outbound) (string, error) {
	id, err := r.Sender.Send(ctx, out)
	r.wa.mu.Lock()
	r.wa.retries++
	r.wa.notifyLocked()
	r.wa.mu.Unlock()
	return id, err
}
