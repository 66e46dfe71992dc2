package main

// Replicas on one PostgreSQL database, in one test process: each replica
// is the bot as runBot builds it (app.New + app.Run with the Telegram
// channel of channels.go) with a data directory of its own.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/adapters/adaptertest"
	"github.com/recallbot/recall/adapters/telegram/telegramtest"
	"github.com/recallbot/recall/app"
	chatpkg "github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/lease"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory/pgtest"
	"github.com/recallbot/recall/turnqueue"
)

const hookSecret = "hook-secret"

// replicaOptions tune one replica.
type replicaOptions struct {
	name    string
	db      string // database.url
	llm     string
	webhook bool   // webhook mode on a port of its own, else long polling
	apiURL  string // the Bot API it calls; "" is the fake's own URL
	workers int    // pipeline.max_concurrent; 0 keeps the default
	quiet   bool   // log warnings only (benchmarks)
}

// replica is one running bot.
type replica struct {
	name   string
	app    *app.App
	hook   string // the webhook's URL on 127.0.0.1 (webhook mode)
	logs   *adaptertest.SyncBuffer
	cancel context.CancelFunc
	done   chan error
}

func startReplica(t testing.TB, tg fakeTelegram, o replicaOptions) *replica {
	t.Helper()
	cfg := config.Default()
	cfg.Data.Dir = t.TempDir()
	cfg.Database.URL = o.db
	cfg.HTTP.Listen = ""
	cfg.Telegram.Token, cfg.Telegram.APIURL = fakeTGToken, tg.URL
	if o.apiURL != "" {
		cfg.Telegram.APIURL = o.apiURL
	}
	cfg.Access.AllowedUsers = nil
	cfg.Access.Open = true
	cfg.LLM.BaseURL, cfg.LLM.APIKey, cfg.LLM.Model, cfg.LLM.MaxRetries = o.llm, "test-key", "test-model", 0
	cfg.Shutdown.Timeout = 3 * time.Second
	if o.workers > 0 {
		cfg.Pipeline.MaxConcurrent = o.workers
	}
	r := &replica{name: o.name, logs: &adaptertest.SyncBuffer{}, done: make(chan error, 1)}
	if o.webhook {
		port := freePort(t)
		cfg.Telegram.Webhook = config.TelegramWebhook{URL: "https://bot.example.com/hook", Listen: "127.0.0.1:" + port, Secret: hookSecret}
		r.hook = "http://127.0.0.1:" + port + "/hook"
	}
	level := slog.LevelDebug
	if o.quiet {
		level = slog.LevelWarn
	}
	log := slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: level})).With("replica", o.name)
	a, err := app.New(t.Context(), cfg, app.Parts{Logger: log, Journal: true, Replica: o.name,
		// Leases of seconds, so a dead replica's turn is taken over
		// within the test's patience.
		Queue: func(q *turnqueue.Options) {
			q.Lease, q.Renew, q.Rescan = 2*time.Second, 100*time.Millisecond, 50*time.Millisecond
		},
		Lease: func(l *lease.Options) { l.TTL, l.Every = 2*time.Second, 100*time.Millisecond },
	})
	if err != nil {
		t.Fatalf("%s: %v", o.name, err)
	}
	r.app = a
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- a.Run(ctx, telegramChannel(cfg)) }()
	t.Cleanup(func() {
		r.stop()
		if t.Failed() {
			t.Logf("%s logs:\n%s", o.name, r.logs.String())
		}
	})
	if o.webhook {
		waitListening(t, r)
	}
	return r
}

// stop stops the replica as SIGTERM does; again is a no-op.
func (r *replica) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	_ = r.app.Close()
	r.cancel = nil
}

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// waitListening waits until the replica's webhook server answers.
func waitListening(t testing.TB, r *replica) {
	t.Helper()
	u, _ := url.Parse(r.hook)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", u.Host)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the webhook server does not listen: %v\n%s", r.name, err, r.logs.String())
		}
		time.Sleep(10 * time.Millisecond) // polling a port, not synchronising goroutines
	}
}

// post delivers an update to a replica's webhook as Telegram does, and
// returns the HTTP status.
func post(t testing.TB, r *replica, u models.Update) int {
	t.Helper()
	code, err := postURL(r.hook, u)
	if err != nil {
		t.Errorf("posting to %s: %v", r.name, err)
	}
	return code
}

// postURL delivers an update to the webhook at hook.
func postURL(hook string, u models.Update) (int, error) {
	body, err := json.Marshal(u)
	if err != nil {
		return 0, err
	}
	req, _ := http.NewRequest(http.MethodPost, hook, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", hookSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// replies returns the texts of the replies delivered to chat, in order.
func replies(tg fakeTelegram, chat int64) []string {
	var out []string
	for _, c := range tg.Sent(chat) {
		out = append(out, c.Fields["text"])
	}
	return out
}

// TestReplicasWebhookAnyReplica: three replicas behind a load balancer
// (updates posted to random replicas, each update posted again to another
// replica as Telegram does when an answer is late). Every message is
// answered exactly once, in order within its chat.
func TestReplicasWebhookAnyReplica(t *testing.T) {
	db := pgtest.URL(t)
	tg := newFakeTelegram(t)
	model := newFakeLLM(t)
	var reps []*replica
	for i := range 3 {
		reps = append(reps, startReplica(t, tg, replicaOptions{name: "r" + strconv.Itoa(i), db: db, llm: model.URL, webhook: true}))
	}
	const users, perUser = 12, 4
	var (
		wg     sync.WaitGroup
		nextID sync.Mutex
		id     int64
	)
	for u := range users {
		user := int64(1000 + u)
		wg.Go(func() {
			for m := range perUser {
				nextID.Lock()
				id++
				upd := models.Update{ID: id, Message: tg.TextMessage(telegramtest.PrivateChat(user), user, fmt.Sprintf("u%d m%d", user, m))}
				nextID.Unlock()
				first := rand.IntN(len(reps))
				if code := post(t, reps[first], upd); code != http.StatusOK {
					t.Errorf("update %d: status %d", upd.ID, code)
				}
				if code := post(t, reps[(first+1)%len(reps)], upd); code != http.StatusOK { // redelivered
					t.Errorf("update %d again: status %d", upd.ID, code)
				}
			}
		})
	}
	wg.Wait()
	for u := range users {
		user := int64(1000 + u)
		var want []string
		for m := range perUser {
			want = append(want, fmt.Sprintf("echo: u%d m%d", user, m))
		}
		_, ok := tg.UntilWithin(60*time.Second, func([]telegramtest.Call) bool { return len(replies(tg, user)) >= perUser })
		if !ok {
			t.Fatalf("user %d got %q, want %q", user, replies(tg, user), want)
		}
		if r := replies(tg, user); strings.Join(r, "|") != strings.Join(want, "|") {
			t.Errorf("user %d got %q, want %q (each once, in order)", user, r, want)
		}
	}
	// Nothing more comes: every turn is finished in the shared queue.
	for _, r := range reps {
		r.stop()
	}
	for u := range users {
		if r := replies(tg, int64(1000+u)); len(r) != perUser {
			t.Errorf("user %d got %d replies, want %d", 1000+u, len(r), perUser)
		}
	}
	if n := len(model.chatRequests()); n != users*perUser {
		t.Errorf("%d model calls, want %d (one per message)", n, users*perUser)
	}
}

// dbProxy forwards TCP connections to the database until it is cut: then
// every connection through it drops and no new one gets through — the
// database's view of a replica that was killed.
type dbProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	cut    bool
}

// startProxy returns dbURL with its host replaced by a proxy's.
func startProxy(t *testing.T, dbURL string) (string, *dbProxy) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dbProxy{ln: ln, target: u.Host}
	go p.serve()
	t.Cleanup(p.kill)
	u.Host = ln.Addr().String()
	return u.String(), p
}

func (p *dbProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		d, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			d.Close()
			return
		}
		p.conns = append(p.conns, c, d)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(d, c); d.Close() }()
		go func() { _, _ = io.Copy(c, d); c.Close() }()
	}
}

// kill cuts every connection through the proxy and refuses new ones.
func (p *dbProxy) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestReplicasTurnOfAKilledReplica: a replica is killed in the middle of a
// turn (its model call hangs, then it loses the database). The next
// message of the chat reaches another replica: it waits for the killed
// replica's lease to expire, then answers the first message and the second,
// in order, each once.
func TestReplicasTurnOfAKilledReplica(t *testing.T) {
	db := pgtest.URL(t)
	tg := newFakeTelegram(t)
	asked := make(chan struct{}, 1)
	hang := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		select {
		case asked <- struct{}{}:
		default:
		}
		return llmtest.Response{Text: "never", Delay: time.Hour} // ends when the client goes
	})
	viaProxy, proxy := startProxy(t, db)
	a := startReplica(t, tg, replicaOptions{name: "doomed", db: viaProxy, llm: hang.URL, webhook: true})
	chat := telegramtest.PrivateChat(42)
	first := models.Update{ID: 1, Message: tg.TextMessage(chat, 42, "first")}
	if code := post(t, a, first); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	<-asked
	proxy.kill() // killed mid-turn, holding the turn's lease

	model := newFakeLLM(t)
	b := startReplica(t, tg, replicaOptions{name: "survivor", db: db, llm: model.URL, webhook: true})
	second := models.Update{ID: 2, Message: tg.TextMessage(chat, 42, "second")}
	if code := post(t, b, second); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	want := []string{"echo: first", "echo: second"}
	if _, ok := tg.UntilWithin(60*time.Second, func([]telegramtest.Call) bool { return len(replies(tg, 42)) >= 2 }); !ok {
		t.Fatalf("replies %q, want %q", replies(tg, 42), want)
	}
	b.stop()
	a.stop()
	if got := replies(tg, 42); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("replies %q, want %q (in order, each once)", got, want)
	}
	if !strings.Contains(b.logs.String(), "taking over a turn another replica left unfinished") {
		t.Errorf("the survivor did not say it took the turn over:\n%s", b.logs.String())
	}
}

// pollConflict is what a replica logs when Telegram terminated its
// getUpdates because another one was running (409): two replicas polling.
const pollConflict = "another instance is polling with this token"

// TestReplicasOnePolls: with long polling, of two replicas exactly one
// polls (two would terminate each other's getUpdates with 409), and both
// answer from the shared queue; when the polling replica dies, the other
// takes the polling over within seconds and the chat goes on.
func TestReplicasOnePolls(t *testing.T) {
	db := pgtest.URL(t)
	tg := newFakeTelegram(t)
	model := newFakeLLM(t)
	viaProxy, proxy := startProxy(t, db)
	a := startReplica(t, tg, replicaOptions{name: "leader", db: viaProxy, llm: model.URL})
	if _, ok := tg.UntilWithin(30*time.Second, func(calls []telegramtest.Call) bool {
		return len(telegramtest.FilterCalls(calls, "getUpdates")) > 0
	}); !ok {
		t.Fatalf("nobody polls:\n%s", a.logs.String())
	}
	b := startReplica(t, tg, replicaOptions{name: "standby", db: db, llm: model.URL})
	const users = 6
	for round := range 3 {
		for u := range users {
			tg.sendText(int64(2000+u), fmt.Sprintf("u%d r%d", u, round))
		}
	}
	for u := range users {
		user := int64(2000 + u)
		if _, ok := tg.UntilWithin(60*time.Second, func([]telegramtest.Call) bool { return len(replies(tg, user)) >= 3 }); !ok {
			t.Fatalf("user %d got %q", user, replies(tg, user))
		}
		want := fmt.Sprintf("echo: u%d r0|echo: u%d r1|echo: u%d r2", u, u, u)
		if got := strings.Join(replies(tg, user), "|"); got != want {
			t.Errorf("user %d got %q, want %q", user, got, want)
		}
	}
	for _, r := range []*replica{a, b} {
		if strings.Contains(r.logs.String(), pollConflict) {
			t.Fatalf("%s: getUpdates was terminated by another replica's:\n%s", r.name, r.logs.String())
		}
	}
	// /healthz names the replica and who holds the polling lease.
	for _, r := range []*replica{a, b} {
		rep := r.app.Health.Report(t.Context())
		if rep.Notes["replica"] != r.name || !strings.HasPrefix(rep.Notes["lease channel:telegram"], "held by ") {
			t.Errorf("%s: /healthz notes %v, want its name and the lease's holder", r.name, rep.Notes)
		}
	}
	if got := a.app.Health.Report(t.Context()).Notes["lease channel:telegram"]; !strings.HasPrefix(got, "held by this replica") {
		t.Errorf("the leader's /healthz says the lease is %q", got)
	}
	if got := b.app.Health.Report(t.Context()).Notes["lease channel:telegram"]; !strings.HasPrefix(got, "held by leader until") {
		t.Errorf("the standby's /healthz says the lease is %q", got)
	}

	proxy.kill() // the polling replica dies
	tg.sendText(2000, "after the leader died")
	if _, ok := tg.waitSent("echo: after the leader died", 60*time.Second); !ok {
		t.Fatalf("no answer once the polling replica died:\n%s", b.logs.String())
	}
	if !strings.Contains(b.logs.String(), "took the lease") {
		t.Errorf("the standby never took the polling lease:\n%s", b.logs.String())
	}
	b.stop()
	a.stop()
	if got := replies(tg, 2000); len(got) != 4 {
		t.Errorf("user 2000 got %q, want 4 replies", got)
	}
}

// TestReplicasReplyCutMidSend: a replica stored its reply and was handing
// it to Telegram when it was killed. The replica that takes the turn over
// finds that in the shared delivery journal: it does not send the reply a
// second time (it may have arrived) but tells the user it may be lost, and
// then answers the chat's next message.
func TestReplicasReplyCutMidSend(t *testing.T) {
	db := pgtest.URL(t)
	tg := newFakeTelegram(t)
	model := newFakeLLM(t)
	// The doomed replica's Bot API: sendMessage never answers.
	sending, release := make(chan struct{}, 1), make(chan struct{})
	target, _ := url.Parse(tg.URL)
	forward := httputil.NewSingleHostReverseProxy(target)
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/sendMessage") {
			select {
			case sending <- struct{}{}:
			default:
			}
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		forward.ServeHTTP(w, r)
	}))
	defer hanging.Close()
	defer close(release)
	viaProxy, proxy := startProxy(t, db)
	a := startReplica(t, tg, replicaOptions{name: "doomed", db: viaProxy, llm: model.URL, webhook: true, apiURL: hanging.URL})
	chat := telegramtest.PrivateChat(42)
	first := models.Update{ID: 1, Message: tg.TextMessage(chat, 42, "first")}
	if code := post(t, a, first); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	<-sending
	proxy.kill() // killed while handing the stored reply over

	b := startReplica(t, tg, replicaOptions{name: "survivor", db: db, llm: model.URL, webhook: true})
	second := models.Update{ID: 2, Message: tg.TextMessage(chat, 42, "second")}
	if code := post(t, b, second); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	want := []string{chatpkg.MaybeLostReply, "echo: second"}
	if _, ok := tg.UntilWithin(60*time.Second, func([]telegramtest.Call) bool { return len(replies(tg, 42)) >= 2 }); !ok {
		t.Fatalf("replies %q, want %q", replies(tg, 42), want)
	}
	b.stop()
	a.stop()
	if got := replies(tg, 42); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("replies %q, want %q", got, want)
	}
	if n := len(model.chatRequests()); n != 2 {
		t.Errorf("%d model calls, want 2 (the first message is not answered again)", n)
	}
}

// TestReplicasQuestionAnsweredOnAnotherReplica: /purge asks a question;
// the answer reaches another replica behind the load balancer. It is
// understood as the answer (the conversation waits for the replica that
// asked), not sent to the model — every time.
func TestReplicasQuestionAnsweredOnAnotherReplica(t *testing.T) {
	db := pgtest.URL(t)
	tg := newFakeTelegram(t)
	model := newFakeLLM(t)
	reps := []*replica{
		startReplica(t, tg, replicaOptions{name: "r0", db: db, llm: model.URL, webhook: true}),
		startReplica(t, tg, replicaOptions{name: "r1", db: db, llm: model.URL, webhook: true}),
	}
	chat := telegramtest.PrivateChat(42)
	id := int64(0)
	for round := range 6 {
		for i, text := range []string{"/purge chat", "no"} {
			id++
			if code := post(t, reps[(round+i)%2], models.Update{ID: id, Message: tg.TextMessage(chat, 42, text)}); code != http.StatusOK {
				t.Fatalf("status %d", code)
			}
			n := 2*round + i + 1
			if _, ok := tg.UntilWithin(30*time.Second, func([]telegramtest.Call) bool { return len(replies(tg, 42)) >= n }); !ok {
				t.Fatalf("round %d: replies %q", round, replies(tg, 42))
			}
		}
		got := replies(tg, 42)
		if last := got[len(got)-1]; last != "Cancelled; nothing was deleted." {
			t.Fatalf("round %d: the answer \"no\" got %q (replies %q)", round, last, got)
		}
	}
	if n := len(model.chatRequests()); n != 0 {
		t.Errorf("%d model calls, want none", n)
	}
}

// TestReplicasWebhookWhileDatabaseDown: a replica that cannot write the
// shared queue answers the webhook with an error, so Telegram keeps the
// update and delivers it again (to this replica or another), instead of a
// 200 for an update nobody will answer.
func TestReplicasWebhookWhileDatabaseDown(t *testing.T) {
	db := pgtest.URL(t)
	tg := newFakeTelegram(t)
	model := newFakeLLM(t)
	viaProxy, proxy := startProxy(t, db)
	a := startReplica(t, tg, replicaOptions{name: "cut", db: viaProxy, llm: model.URL, webhook: true})
	proxy.kill()
	help := models.Update{ID: 1, Message: tg.TextMessage(telegramtest.PrivateChat(42), 42, "/help")}
	if code := post(t, a, help); code < 500 {
		t.Fatalf("status %d, want a 5xx so that Telegram delivers the update again", code)
	}
	b := startReplica(t, tg, replicaOptions{name: "up", db: db, llm: model.URL, webhook: true})
	if code := post(t, b, help); code != http.StatusOK { // Telegram's next attempt
		t.Fatalf("status %d", code)
	}
	if _, ok := tg.UntilWithin(30*time.Second, func([]telegramtest.Call) bool { return len(replies(tg, 42)) >= 1 }); !ok {
		t.Fatal("the redelivered /help was not answered")
	}
}

// BenchmarkReplicasThroughput: messages answered per second by 1 and by 3
// webhook replicas on one database, each running 8 turns at a time, with a
// model that takes 200 ms per answer; 120 users, updates posted to the
// replicas in turn. The ideal is 40 msg/s per replica (8 / 0.2 s); the
// ratio to it says how much of the added capacity this machine delivers
// (all replicas and PostgreSQL share its 2 cores).
//
//	RECALL_TEST_POSTGRES_URL=$(.ci/postgres $$) go test -run '^$' -bench ReplicasThroughput -benchtime 400x ./cmd/bot/
func BenchmarkReplicasThroughput(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			db := pgtest.URL(b)
			tg := fakeTelegram{telegramtest.NewServer(b)}
			model := llmtest.NewServer(b, func(r llmtest.Request) llmtest.Response {
				return llmtest.Response{Text: "ok", Delay: 200 * time.Millisecond}
			})
			var reps []*replica
			for i := range n {
				reps = append(reps, startReplica(b, tg, replicaOptions{name: fmt.Sprintf("r%d", i), db: db, llm: model.URL, webhook: true, workers: 8, quiet: true}))
			}
			const users = 120
			updates := make(chan models.Update, b.N)
			for i := range b.N {
				user := int64(5000 + i%users)
				updates <- models.Update{ID: int64(i + 1), Message: tg.TextMessage(telegramtest.PrivateChat(user), user, fmt.Sprintf("message %d", i))}
			}
			close(updates)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range 16 {
				wg.Go(func() {
					i := w
					for u := range updates {
						post(b, reps[i%len(reps)], u)
						i++
					}
				})
			}
			wg.Wait()
			if _, ok := tg.UntilWithin(5*time.Minute, func(calls []telegramtest.Call) bool {
				return len(telegramtest.FilterCalls(calls, "sendMessage")) >= b.N
			}); !ok {
				b.Fatal("not every message was answered")
			}
			elapsed := time.Since(start)
			b.StopTimer()
			rate := float64(b.N) / elapsed.Seconds()
			b.ReportMetric(rate, "msg/s")
			b.ReportMetric(rate/(40*float64(n)), "of_ideal")
			b.ReportMetric(0, "ns/op")
			for _, r := range reps {
				r.stop()
			}
		})
	}
}
