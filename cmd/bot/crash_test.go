package main

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/memory"
)

// liveBot is a running terminal chat driven line by line.
type liveBot struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string   // stdout, line by line; closed at EOF
	done  chan struct{} // closed when stdout reached EOF
	seen  []string      // every stdout line read
}

func (e botEnv) start(t *testing.T) *liveBot {
	t.Helper()
	prog, argv := e.argv(nil)
	c := exec.Command(prog, argv...)
	c.Env = e.environ()
	c.Dir = e.Dir
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatalf("starting the bot: %v", err)
	}
	b := &liveBot{t: t, cmd: c, stdin: stdin, lines: make(chan string, 1024), done: make(chan struct{})}
	t.Cleanup(func() { _ = c.Process.Kill() }) // no-op once it has been waited for
	go func() {
		defer close(b.done)
		defer close(b.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 4<<20)
		for sc.Scan() {
			b.lines <- sc.Text()
		}
	}()
	return b
}

// send writes one line to the bot.
func (b *liveBot) send(line string) {
	b.t.Helper()
	if _, err := io.WriteString(b.stdin, line+"\n"); err != nil {
		b.t.Fatalf("writing %q to the bot: %v", line, err)
	}
}

// next returns the next stdout line, or false at EOF or after timeout.
func (b *liveBot) next(timeout time.Duration) (string, bool) {
	select {
	case l, ok := <-b.lines:
		if ok {
			b.seen = append(b.seen, l)
		}
		return l, ok
	case <-time.After(timeout):
		return "", false
	}
}

// kill SIGKILLs the bot and returns the stdout lines it printed that were
// not read yet.
func (b *liveBot) kill() []string {
	b.t.Helper()
	if err := b.cmd.Process.Kill(); err != nil {
		b.t.Fatalf("killing the bot: %v", err)
	}
	var rest []string
	for l := range b.lines {
		b.seen = append(b.seen, l)
		rest = append(rest, l)
	}
	<-b.done
	_ = b.stdin.Close()
	err := b.cmd.Wait()
	if err == nil || !strings.Contains(err.Error(), "killed") {
		b.t.Fatalf("the bot was not killed: %v\n%s", err, b.cmd.Stderr)
	}
	return rest
}

// checkStore opens the (dead) bot's database directly, checks its integrity
// and returns the terminal conversation's messages.
func checkStore(t *testing.T, dataDir string) []memory.Message {
	t.Helper()
	db := openDB(t, dataDir)
	defer db.Close()
	if got := integrityCheck(t, db); got != "ok" {
		t.Fatalf("PRAGMA integrity_check after SIGKILL: %s", got)
	}
	d, err := db.Export(t.Context(), consoleOwner, nil)
	if err != nil {
		t.Fatalf("reading the store: %v", err)
	}
	var msgs []memory.Message
	for _, c := range d.Conversations {
		if c.Key == consoleKey {
			msgs = append(msgs, c.Messages...)
		}
	}
	return msgs
}

// checkMessages verifies that every reply seen on stdout is stored exactly
// once, with its user line; that no user line is stored twice; and that no
// user line got two stored replies.
func checkMessages(t *testing.T, where string, msgs []memory.Message, sent map[string]bool, seenReplies map[string]string) {
	t.Helper()
	users, replies := map[string]int{}, map[string]int{}
	answeredIDs := map[string]int{}
	for _, m := range msgs {
		switch m.Role {
		case memory.RoleUser:
			users[m.Text]++
			if !sent[m.Text] {
				t.Errorf("%s: stored user line %q was never sent", where, m.Text)
			}
		case memory.RoleAssistant:
			replies[m.Text]++
			answeredIDs[m.ReplyTo]++
		}
	}
	for text, n := range users {
		if n > 1 {
			t.Errorf("%s: user line %q stored %d times", where, text, n)
		}
	}
	for id, n := range answeredIDs {
		if n > 1 {
			t.Errorf("%s: message %q has %d stored replies", where, id, n)
		}
	}
	for reply, line := range seenReplies {
		if replies[reply] != 1 {
			t.Errorf("%s: reply %q was shown but is stored %d times", where, reply, replies[reply])
		}
		if users[line] != 1 {
			t.Errorf("%s: line %q was answered but is stored %d times", where, line, users[line])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

func TestKillNineKeepsEverySeenReply(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kills and restarts the bot binary (5 s on a busy 2-core machine); go test without -short runs it")
	}
	const rounds = 8
	rng := rand.New(rand.NewPCG(2024, 1109)) // the schedule
	srv := newFakeLLM(t)
	delays := rand.New(rand.NewPCG(7, 7)) // the fake LLM's latency, under srv.mu
	serial := 0
	srv.mu.Lock()
	srv.delay = func() time.Duration { return time.Duration(delays.IntN(51)) * time.Millisecond }
	srv.tag = func() string { serial++; return fmt.Sprintf(" [reply-%d]", serial) }
	srv.mu.Unlock()
	// Summaries run (and get killed) too: every 4 turns, 2 kept active.
	env := newEnv(t, srv.URL, "RECALL_MEMORY_THRESHOLD=4", "RECALL_MEMORY_KEEP_RECENT_TURNS=2")

	sent := map[string]bool{}          // every user line written
	seenReplies := map[string]string{} // reply text → its user line
	exchanges, inFlightKills, inFlightSeen, inFlightStored := 0, 0, 0, 0
	for round := range rounds {
		b := env.start(t)
		n := 1 + rng.IntN(7)
		for i := range n {
			line := fmt.Sprintf("round %d line %d token%d", round, i, rng.IntN(1000))
			sent[line] = true
			b.send(line)
			for {
				l, ok := b.next(20 * time.Second)
				if !ok {
					t.Fatalf("round %d: no reply to %q; stdout so far:\n%s", round, line, strings.Join(b.seen, "\n"))
				}
				if strings.HasPrefix(l, "echo: "+line+" [reply-") {
					seenReplies[l] = line
					break
				}
				t.Logf("round %d: unexpected output %q", round, l)
			}
			exchanges++
		}
		var rest []string
		inFlight := ""
		if rng.IntN(3) != 0 {
			// Kill with a message in flight, at a random moment.
			line := fmt.Sprintf("round %d in flight token%d", round, rng.IntN(1000))
			sent[line] = true
			inFlight = line
			b.send(line)
			time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
			rest = b.kill()
			inFlightKills++
			for _, l := range rest {
				if strings.HasPrefix(l, "echo: "+line+" [reply-") {
					seenReplies[l] = line
					inFlightSeen++
				}
			}
		} else {
			b.kill()
		}
		msgs := checkStore(t, env.Data)
		checkMessages(t, fmt.Sprintf("after the kill of round %d", round), msgs, sent, seenReplies)
		for _, m := range msgs {
			if inFlight != "" && m.Role == memory.RoleAssistant && strings.HasPrefix(m.Text, "echo: "+inFlight+" [reply-") {
				inFlightStored++
			}
		}
	}

	// A last, clean run: the bot starts on the crashed data, answers, and
	// `bot export` agrees.
	r := env.mustRun(t, lines("after all the crashes"))
	last := strings.TrimSpace(r.Stdout)
	if !strings.HasPrefix(last, "echo: after all the crashes [reply-") {
		t.Fatalf("the final run answered %q", r.Stdout)
	}
	sent["after all the crashes"] = true
	seenReplies[last] = "after all the crashes"
	doc := env.export(t)
	msgs := messagesOf(doc, consoleKey)
	checkMessages(t, "bot export at the end", msgs, sent, seenReplies)
	db := openDB(t, env.Data)
	if got := integrityCheck(t, db); got != "ok" {
		t.Fatalf("PRAGMA integrity_check at the end: %s", got)
	}
	db.Close()
	archived, users, replies := 0, 0, 0
	for _, m := range msgs {
		if !m.Active {
			archived++
		}
		if m.Role == memory.RoleUser {
			users++
		} else {
			replies++
		}
	}
	t.Logf("%d rounds killed with SIGKILL, %d exchanges answered before a kill, %d kills with a message in flight (%d of those replies seen, %d stored); "+
		"%d lines sent, %d replies seen; stored: %d user lines, %d replies (%d messages archived); %d summarization requests",
		rounds, exchanges, inFlightKills, inFlightSeen, inFlightStored, len(sent), len(seenReplies), users, replies, archived, srv.summaryRequests())
}
