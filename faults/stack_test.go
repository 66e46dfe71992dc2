package faults

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3/vfs"

	"github.com/recallbot/recall/adapters/adaptertest"
	"github.com/recallbot/recall/adapters/telegram"
	"github.com/recallbot/recall/adapters/telegram/telegramtest"
	"github.com/recallbot/recall/app"
	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// Timing of the stack: the shape of production (several LLM attempts,
// backoff, a client timeout on Bot API calls), short enough that each fault
// is over in a few seconds, long enough that a loaded machine (-race, two
// cores) does not turn a slow answer into a timeout — a timed-out sendMessage
// is sent again, and one that was only slow would then show twice.
const (
	llmTimeout   = time.Second             // each LLM attempt
	llmRetries   = 2                       // attempts after the first
	botTimeout   = 1500 * time.Millisecond // each Bot API call (http.Client.Timeout)
	storeTimeout = 2 * time.Second         // how long a reply waits to be durable before it is sent anyway
	intakeWait   = 300 * time.Millisecond  // how long an update waits to be durable before the intake looks whether storage fails
)

// vfsSeq names each test's faulty disk.
var vfsSeq atomic.Int64

// stack is the whole bot as package app builds it, on a temp data dir
// whose recall.db goes through a faulty disk, the fake OpenAI server and the
// fake Bot API.
type stack struct {
	t    *testing.T
	dir  string
	disk *faultyDisk
	vfs  string
	api  *telegramtest.Server
	llm  *llmtest.Server
	logs *adaptertest.SyncBuffer

	mu       sync.Mutex
	llmFault func(r llmtest.Request) (llmtest.Response, bool) // nil: echo
	llmAt    []llmCall                                        // every LLM request

	app    *app.App
	store  *memory.Store
	cancel context.CancelFunc
	runErr chan error
}

func newStack(t *testing.T) *stack {
	t.Helper()
	s := &stack{t: t, dir: t.TempDir(), disk: newFaultyDisk(), api: telegramtest.NewServer(t), logs: &adaptertest.SyncBuffer{}}
	s.vfs = fmt.Sprintf("faulty-%d", vfsSeq.Add(1))
	vfs.Register(s.vfs, s.disk)
	t.Cleanup(func() { vfs.Unregister(s.vfs) })
	echo := llmtest.Echo("echo: ")
	s.llm = llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		at := time.Now()
		s.mu.Lock()
		f := s.llmFault
		s.mu.Unlock()
		resp, faulty := llmtest.Response{}, false
		if f != nil {
			resp, faulty = f(r)
		}
		s.mu.Lock()
		s.llmAt = append(s.llmAt, llmCall{at: at, fault: faulty})
		s.mu.Unlock()
		if faulty {
			return resp
		}
		return echo(r)
	})
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

// setLLMFault makes the fake OpenAI server answer with f (when it reports
// true) instead of echoing; nil heals it.
func (s *stack) setLLMFault(f func(r llmtest.Request) (llmtest.Response, bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.llmFault = f
}

// start builds the bot through package app on the stack's data dir and
// runs it with the Telegram adapter on the fake Bot API: the messages
// accepted but never answered are resubmitted, the adapter polls.
func (s *stack) start() {
	t := s.t
	t.Helper()
	log := slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	model := llm.New(llm.Options{
		BaseURL: s.llm.URL, Model: "test-model", Timeout: llmTimeout, RequestTimeout: llmTimeout, MaxRetries: llmRetries,
		BaseDelay: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond,
	})
	a, err := app.New(context.Background(), adaptertest.Config(s.dir, []string{"telegram:111", "telegram:222"}), app.Parts{
		Model: model, Logger: log, BotName: telegramtest.BotName, IntakeWait: intakeWait,
		Store: func(o *memory.Options) {
			o.VFS, o.RetryBase, o.RetryMax = s.vfs, 10*time.Millisecond, 100*time.Millisecond
		},
		Chat: func(o *chat.Options) { o.StoreTimeout = storeTimeout },
	})
	if err != nil {
		t.Fatalf("building the bot: %v", err)
	}
	running := make(chan struct{}) // the unanswered messages are resubmitted; the adapter starts
	tg := func(w app.Wiring) (app.Channel, error) {
		var menu []telegram.Command
		for _, c := range w.Commands {
			menu = append(menu, telegram.Command{Name: c.Name, Help: c.Help})
		}
		ad, err := telegram.New(telegram.Options{
			Token: telegramtest.Token, APIURL: s.api.URL, Log: log, Commands: menu, Allowed: w.Allowed,
			PollTimeout: time.Second, HTTPClient: &http.Client{Timeout: botTimeout},
		}, w.Submit, w.Accept)
		if err != nil {
			return app.Channel{}, err
		}
		run := func(ctx context.Context) error {
			close(running)
			return ad.Run(ctx)
		}
		return app.Channel{Name: telegram.Channel, Sender: ad.Sender(), Run: run, Health: ad}, nil
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.app, s.store, s.cancel = a, a.Store, cancel
	s.runErr = make(chan error, 1)
	go func() { s.runErr <- a.Run(runCtx, tg) }()
	select {
	case <-running:
	case err := <-s.runErr:
		s.runErr <- err
		t.Fatalf("the bot stopped while starting: %v", err)
	}
}

// stop stops taking updates, lets the turns finish, stops background work
// and closes the store, flushing the write queue.
func (s *stack) stop() {
	t := s.t
	t.Helper()
	s.cancel()
	s.cancel = nil
	if err := <-s.runErr; err != nil {
		t.Errorf("Run: %v", err)
	}
	if err := s.app.Close(); err != nil {
		t.Errorf("closing the bot: %v", err)
	}
}

// llmCall is one request to the fake OpenAI server.
type llmCall struct {
	at    time.Time
	fault bool // answered with the fault
}

// llmCalls returns every LLM request so far.
func (s *stack) llmCalls() []llmCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llmCall(nil), s.llmAt...)
}

// stored is what the database holds once the bot stopped.
type stored struct {
	users   map[msgRef]bool     // user messages by (chat, platform id)
	replies map[msgRef][]string // assistant texts by the (chat, message id) they answer
	check   string              // PRAGMA integrity_check
}

// msgRef is one Telegram message: chat and message id.
type msgRef struct {
	chat int64
	id   int
}

// readDB opens the stopped bot's database through the operating system
// (not the faulty disk) and reads every message and the integrity check.
func (s *stack) readDB() stored {
	t := s.t
	t.Helper()
	ctx := context.Background()
	db, err := memory.OpenSQLite(ctx, filepath.Join(s.dir, "recall.db"))
	if err != nil {
		t.Fatalf("opening the database after the run: %v", err)
	}
	defer db.Close()
	out := stored{users: map[msgRef]bool{}, replies: map[msgRef][]string{}}
	if err := db.DB().QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&out.check); err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	rows, err := db.DB().QueryContext(ctx, `SELECT c.key, m.role, m.platform_id, m.reply_to, m.text
		FROM messages m JOIN conversations c ON c.id = m.conv ORDER BY m.id`)
	if err != nil {
		t.Fatalf("reading messages: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key, role, pid, replyTo, text string
		if err := rows.Scan(&key, &role, &pid, &replyTo, &text); err != nil {
			t.Fatal(err)
		}
		k, err := pipeline.ParseKey(key)
		if err != nil {
			t.Fatalf("stored key %q: %v", key, err)
		}
		var chatID int64
		fmt.Sscan(k.Chat, &chatID)
		switch memory.Role(role) {
		case memory.RoleUser:
			var id int
			fmt.Sscan(pid, &id)
			out.users[msgRef{chatID, id}] = true
		case memory.RoleAssistant:
			var id int
			fmt.Sscan(replyTo, &id)
			out.replies[msgRef{chatID, id}] = append(out.replies[msgRef{chatID, id}], text)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
