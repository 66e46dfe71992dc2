package main

// Replicas as real processes: three bot binaries on one PostgreSQL
// database behind a load balancer, one of them SIGKILLed mid-run.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	"github.com/jackc/pgx/v5"

	"github.com/recallbot/recall/adapters/telegram/telegramtest"
	chatpkg "github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory/pgtest"
)

// The run of TestReplicaProcessesOneKilledMidRun.
const (
	killUsers     = 200 // simulated users, each in a private chat
	killPerUser   = 4   // messages per user, each sent once the previous is answered
	killReplicas  = 3   // bot processes
	killChatDelay = 20 * time.Millisecond
	// A summary takes longer than the user's next turn: without the
	// summary lock the replica that runs that turn would start a second
	// summary of the same messages.
	killSummaryDelay = 250 * time.Millisecond
	// How long a user waits for an answer before sending the next message
	// anyway (an answer may be cut by the kill; a taken-over turn is
	// answered after the 2-s lease expires).
	killPatience = 30 * time.Second
)

// spanToken is how a user message of the run reads ("u3001 m2"), quoted
// by its echo and by every summary that covers it.
var spanToken = regexp.MustCompile(`u\d+ m\d+`)

// summaryLevel matches the level the fake model writes at the head of a
// summary ("L1 summary of …").
var summaryLevel = regexp.MustCompile(`L(\d+) summary of`)

// summarySpan reads a summarization request: the level of the summary
// it asks for (1 for messages, one above its sources' for a fold; 0 when
// r is not a summarization request) and the user messages it covers.
func summarySpan(r llmtest.Request) (level int, span []string) {
	if !isSummaryRequest(r) {
		return 0, nil
	}
	var text strings.Builder
	fold := false
	for _, m := range r.Messages {
		if m.Role == llm.RoleSystem {
			fold = fold || strings.Contains(m.Content, "merge several consecutive summaries")
			continue
		}
		text.WriteString(m.Content + "\n")
	}
	level = 1
	if fold {
		for _, l := range summaryLevel.FindAllStringSubmatch(text.String(), -1) {
			n, _ := strconv.Atoi(l[1])
			level = max(level, n+1)
		}
	}
	return level, uniqueTokens(text.String())
}

// uniqueTokens returns the user messages quoted in s, sorted, each once.
func uniqueTokens(s string) []string {
	toks := spanToken.FindAllString(s, -1)
	slices.Sort(toks)
	return slices.Compact(toks)
}

// TestReplicaProcessesOneKilledMidRun: three real bot processes on one
// database behind a "load balancer": 200 users, each sending its next
// message once the last is answered, each update posted to a random
// process and to another when that one does not answer 200 (as Telegram
// retries). Summaries are due after every exchange (one exchange kept
// verbatim, two summaries a level before they fold). Halfway through, one
// process is SIGKILLed and started again. In the end every message is answered
// exactly once, in order within its chat; every exchange is stored, in
// order; and no summary was built twice: no two summaries of a level in
// the database cover the same message, and the model was never asked
// twice for a summary of the same message — but by the killed process,
// whose request died with it.
//
// The fake Bot API has no webhook client (its setWebhook only records the
// URL): the test posts the updates to the processes' webhooks itself.
func TestReplicaProcessesOneKilledMidRun(t *testing.T) {
	db := pgtest.URL(t)
	// Every user's deliveries as they happen (the fake's OnSend): the
	// message each one replies to.
	var delivered atomic.Int64
	got := make(map[int64]chan int, killUsers)
	for u := range killUsers {
		got[int64(3000+u)] = make(chan int, 4*killPerUser)
	}
	srv := telegramtest.Start(telegramtest.Options{OnSend: func(s telegramtest.Sent) {
		delivered.Add(1)
		select {
		case got[s.Chat] <- s.ReplyTo:
		default:
		}
	}})
	t.Cleanup(srv.Close)
	tg := fakeTelegram{srv}
	echo := llmtest.Echo("echo: ")
	model := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if level, span := summarySpan(r); level > 0 {
			// The summary names what it covers, so folds and the
			// database say it too.
			return llmtest.Response{Text: fmt.Sprintf("L%d summary of %s.", level, strings.Join(span, ", ")), Delay: killSummaryDelay}
		}
		resp := echo(r)
		resp.Delay = killChatDelay
		return resp
	})

	// Each process (each start of one) calls the model with a key of its
	// own, so the model's requests say who sent them.
	var envs []botEnv
	var hooks []string
	for i := range killReplicas {
		port := freePort(t)
		envs = append(envs, telegramEnv(t, tg, model.URL, "RECALL_DATABASE_URL="+db, "RECALL_DATABASE_TURN_LEASE=2s",
			"RECALL_ACCESS_OPEN=true", "RECALL_LOG_LEVEL=info",
			"RECALL_MEMORY_THRESHOLD=1", "RECALL_MEMORY_KEEP_RECENT_TURNS=1", "RECALL_MEMORY_MAX_ACTIVE_PER_LEVEL=2",
			"RECALL_TELEGRAM_WEBHOOK_URL=https://bot.example.com/hook",
			"RECALL_TELEGRAM_WEBHOOK_LISTEN=127.0.0.1:"+port, "RECALL_TELEGRAM_WEBHOOK_SECRET="+hookSecret,
			fmt.Sprintf("RECALL_LLM_API_KEY=r%d.1", i)))
		hooks = append(hooks, "http://127.0.0.1:"+port+"/hook")
	}
	bots := make([]*daemon, killReplicas)
	for i, env := range envs {
		bots[i] = env.startDaemon(t)
	}
	for _, b := range bots {
		b.waitLog("webhook server listening", 60*time.Second)
	}

	start := time.Now()
	var (
		wg     sync.WaitGroup
		nextID atomic.Int64
		idsMu  sync.Mutex
		ids    = map[int64][]int{} // user → the ids of their messages, in order
	)
	for u := range killUsers {
		user := int64(3000 + u)
		wg.Go(func() {
			for m := range killPerUser {
				upd := models.Update{ID: nextID.Add(1), Message: tg.TextMessage(telegramtest.PrivateChat(user), user, fmt.Sprintf("u%d m%d", user, m))}
				idsMu.Lock()
				ids[user] = append(ids[user], upd.Message.ID)
				idsMu.Unlock()
				first := rand.IntN(killReplicas)
				deadline := time.Now().Add(60 * time.Second)
				for try := 0; ; try++ {
					code, _ := postURL(hooks[(first+try)%killReplicas], upd)
					if code == http.StatusOK {
						break
					}
					if time.Now().After(deadline) {
						t.Errorf("update %d was never taken", upd.ID)
						return
					}
					time.Sleep(20 * time.Millisecond) // Telegram's retry pause
				}
				// The user waits for the answer to this message (or the
				// note that it may be lost), not for any message: a
				// note about the previous one may come first.
				patience := time.After(killPatience)
			wait:
				for {
					select {
					case to := <-got[user]:
						if to == upd.Message.ID {
							break wait
						}
					case <-patience:
						break wait
					}
				}
			}
		})
	}
	// Halfway: one process is killed in the middle of its turns and
	// summaries, and started again (a key of its own: its model requests
	// are the restarted process's).
	const victim = 1
	if _, ok := tg.UntilWithin(5*time.Minute, func([]telegramtest.Call) bool {
		return delivered.Load() >= killUsers*killPerUser/2
	}); !ok {
		t.Fatalf("half the messages were not answered within 5 minutes (%d answers)", delivered.Load())
	}
	killed := fmt.Sprintf("r%d.1", victim)
	killedBot := bots[victim]
	killedBot.kill()
	killedAt := time.Since(start)
	restarted := envs[victim]
	restarted.Extra = append(slices.Clone(restarted.Extra), fmt.Sprintf("RECALL_LLM_API_KEY=r%d.2", victim))
	bots[victim] = restarted.startDaemon(t)
	bots[victim].waitLog("webhook server listening", 60*time.Second)
	wg.Wait()

	// Every chat gets its answers (or, for an answer the killed process
	// was handing to Telegram, the note that it may be lost).
	if _, ok := tg.UntilWithin(90*time.Second, func(calls []telegramtest.Call) bool {
		n := map[int64]int{}
		for _, c := range telegramtest.FilterCalls(calls, "sendMessage") {
			if c.Err == nil {
				n[c.ChatID()]++
			}
		}
		for u := range killUsers {
			if n[int64(3000+u)] < killPerUser {
				return false
			}
		}
		return true
	}); !ok {
		for u := range killUsers {
			if r := replies(tg, int64(3000+u)); len(r) < killPerUser {
				t.Errorf("user %d got %q", 3000+u, r)
			}
		}
		t.Fatalf("not every message was answered\n--- the killed process:\n%s\n--- restarted:\n%s", tail(killedBot.output(), 40), tail(bots[victim].output(), 40))
	}
	answeredIn := time.Since(start)
	for _, b := range bots {
		b.signal(syscall.SIGTERM)
		if code := b.wait(60 * time.Second); code != 0 {
			t.Errorf("exit code %d", code)
		}
	}
	// What the processes warned of (the killed one's died with it): a
	// trace of trouble when the run fails.
	takenOver := 0
	warnings, example := map[string]int{}, map[string]any{}
	for _, b := range bots {
		for _, rec := range b.records() {
			if rec["msg"] == "taking over a turn another replica left unfinished" {
				takenOver++
			}
			if rec["level"] == "WARN" || rec["level"] == "ERROR" {
				w := fmt.Sprint(rec["level"], " ", rec["msg"])
				warnings[w]++
				if _, ok := example[w]; !ok {
					example[w] = rec["err"]
				}
			}
		}
	}
	for w, n := range warnings {
		t.Logf("logged %d times: %s (err: %v)", n, w, example[w])
	}
	if takenOver == 0 {
		t.Errorf("no turn was taken over from the killed process: it was killed with none in flight, and the run shows nothing of a kill mid-turn")
	}

	// Exactly once, in order, each answer in reply to its message. A reply
	// the killed process was handing to Telegram may or may not have
	// arrived: the replica that took the turn over says so (MaybeLostReply,
	// in reply to the message) instead of sending it a second time.
	cut := 0
	for u := range killUsers {
		user := int64(3000 + u)
		want := make([]string, killPerUser)
		for m := range killPerUser {
			want[m] = fmt.Sprintf("echo: u%d m%d", user, m)
		}
		sent := tg.Sent(user)
		var texts []string
		answers, notes := map[int]int{}, map[int]int{} // message index → count
		next := 0
		for _, c := range sent {
			g := c.Fields["text"]
			texts = append(texts, g)
			to := slices.Index(ids[user], c.ReplyTo())
			if g == chatpkg.MaybeLostReply {
				if to < 0 {
					t.Errorf("user %d got the note that a reply may be lost in reply to no message of theirs (%d)", user, c.ReplyTo())
				}
				notes[to]++
				continue
			}
			i := slices.Index(want, g)
			switch {
			case i < 0:
				t.Errorf("user %d got %q: %q is no answer of theirs", user, texts, g)
			case i < next:
				t.Errorf("user %d got %q twice or out of order", user, g)
			case i != to:
				t.Errorf("user %d got %q in reply to their message %d", user, g, to)
			}
			answers[i]++
			next = i + 1
		}
		for m := range killPerUser {
			if answers[m] > 1 || notes[m] > 1 || answers[m]+notes[m] == 0 {
				t.Errorf("user %d got %q: message %d answered %d times, with %d notes (want once, or a note)", user, texts, m, answers[m], notes[m])
			}
		}
		cut += len(notes)
	}

	// Every exchange stored once, in order; summaries built once.
	c, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	checkStoredExchanges(t, c)
	sums, summarized := checkSummariesOnce(t, c)
	requests := checkSummaryRequestsOnce(t, model.Requests(), killed)
	t.Logf("%d users × %d messages on %d processes: killed at %s, all answered at %s; %d turns taken over from the killed process, %d replies cut (MaybeLostReply); %d summaries stored in %d conversations (%d model requests for summaries)",
		killUsers, killPerUser, killReplicas, killedAt.Round(time.Millisecond), answeredIn.Round(time.Millisecond), takenOver, cut, sums, summarized, requests)
}

// checkStoredExchanges: each user's conversation holds its messages and
// their answers, each once, in order.
func checkStoredExchanges(t *testing.T, c *pgx.Conn) {
	t.Helper()
	rows, err := c.Query(context.Background(), `SELECT conv, role, text FROM messages ORDER BY conv, id`)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[int64][]string{}
	for rows.Next() {
		var conv int64
		var role, text string
		if err := rows.Scan(&conv, &role, &text); err != nil {
			t.Fatal(err)
		}
		stored[conv] = append(stored[conv], role+": "+text)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(stored) != killUsers {
		t.Errorf("%d conversations stored, want %d", len(stored), killUsers)
	}
	for _, msgs := range stored {
		user, _, _ := strings.Cut(strings.TrimPrefix(msgs[0], "user: u"), " ")
		var want []string
		for m := range killPerUser {
			want = append(want, fmt.Sprintf("user: u%s m%d", user, m), fmt.Sprintf("assistant: echo: u%s m%d", user, m))
		}
		if !slices.Equal(msgs, want) {
			t.Errorf("stored %q, want %q", msgs, want)
		}
	}
}

// checkSummariesOnce: in each conversation no message is covered by two
// summaries of one level, a level-1 summary covers exactly the messages
// of its chunk, and no summary was folded into two. It returns how many
// summaries are stored, and in how many conversations.
func checkSummariesOnce(t *testing.T, c *pgx.Conn) (summaries, conversations int) {
	t.Helper()
	ctx := context.Background()
	chunks := map[[2]int64][]string{} // (conv, chunk) → its messages' tokens
	rows, err := c.Query(ctx, `SELECT conv, chunk_id, text FROM messages WHERE chunk_id <> 0`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var conv, chunk int64
		var text string
		if err := rows.Scan(&conv, &chunk, &text); err != nil {
			t.Fatal(err)
		}
		chunks[[2]int64{conv, chunk}] = append(chunks[[2]int64{conv, chunk}], text)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows, err = c.Query(ctx, `SELECT conv, id, level, text, sources FROM summaries ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		conv  int64
		level int
		token string
	}
	covered := map[key]int64{}        // → the summary covering it
	folded := map[[2]int64]int64{}    // (conv, source summary) → the fold
	usedChunk := map[[2]int64]int64{} // (conv, chunk) → its level-1 summary
	convs, n := map[int64]bool{}, 0
	for rows.Next() {
		var conv, id int64
		var level int
		var text, sources string
		if err := rows.Scan(&conv, &id, &level, &text, &sources); err != nil {
			t.Fatal(err)
		}
		n++
		convs[conv] = true
		var src []int64
		if err := json.Unmarshal([]byte(sources), &src); err != nil {
			t.Fatalf("summary %d: sources %q: %v", id, sources, err)
		}
		toks := uniqueTokens(text)
		for _, tok := range toks {
			if other, ok := covered[key{conv, level, tok}]; ok {
				t.Errorf("%q is covered by two level-%d summaries (%d and %d): a summary was built twice", tok, level, other, id)
			}
			covered[key{conv, level, tok}] = id
		}
		if level == 1 {
			if len(src) != 1 {
				t.Errorf("level-1 summary %d: sources %v, want its chunk", id, src)
				continue
			}
			ch := [2]int64{conv, src[0]}
			if other, ok := usedChunk[ch]; ok {
				t.Errorf("chunk %d is summarized by %d and %d", src[0], other, id)
			}
			usedChunk[ch] = id
			if want := uniqueTokens(strings.Join(chunks[ch], "\n")); !slices.Equal(toks, want) {
				t.Errorf("level-1 summary %d covers %q, its chunk holds %q", id, toks, want)
			}
			continue
		}
		for _, s := range src {
			if other, ok := folded[[2]int64{conv, s}]; ok {
				t.Errorf("summary %d is folded into %d and %d", s, other, id)
			}
			folded[[2]int64{conv, s}] = id
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Not every conversation needs one: a trigger that finds the lock
	// taken does nothing, and the killed process's run died with it (the
	// next trigger catches up; here there may be none).
	if len(convs) < killUsers/2 || len(folded) == 0 {
		t.Errorf("%d conversations have summaries, %d summaries were folded: want most conversations summarized, and folds", len(convs), len(folded))
	}
	return n, len(convs)
}

// checkSummaryRequestsOnce: the model was not asked twice for a summary
// of one level covering the same message, but where one of the two asks
// came from the killed process (key killed), whose run died with it. It
// returns how many summarization requests the model saw.
func checkSummaryRequestsOnce(t *testing.T, reqs []llmtest.Request, killed string) int {
	t.Helper()
	type key struct {
		level int
		token string
	}
	asked := map[key]llmtest.Request{}
	n := 0
	for _, r := range reqs {
		level, span := summarySpan(r)
		if level == 0 {
			continue
		}
		n++
		if r.APIKey == killed {
			continue
		}
		for _, tok := range span {
			if first, ok := asked[key{level, tok}]; ok {
				t.Errorf("a level-%d summary of %q was asked for twice: by %s (request %d) and %s (request %d)", level, tok, first.APIKey, first.N, r.APIKey, r.N)
				break
			}
		}
		for _, tok := range span {
			asked[key{level, tok}] = r
		}
	}
	return n
}
