package main

// End-to-end tests: TestMain builds the real binary once, and the tests run it
// as a user would, with a clean environment, RECALL_* variables, an empty
// working directory (so no config.yaml is picked up) and, where an LLM is
// needed, an llmtest fake server.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
)

// botBin is the binary built by TestMain.
var botBin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "recall-bot-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating a temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	botBin = filepath.Join(dir, "bot")
	build := exec.Command("go", "build", "-o", botBin, "github.com/recallbot/recall/cmd/bot")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the bot:", err)
		return 1
	}
	return m.Run()
}

// runTimeout bounds every run of the binary, so a hang fails instead of
// stalling the suite.
const runTimeout = 60 * time.Second

// consoleKey is the terminal conversation; consoleOwner its owner.
const (
	consoleKey   = "console:local:"
	consoleOwner = "console:local"
)

// botEnv is the environment one bot runs in.
type botEnv struct {
	Data  string   // RECALL_DATA_DIR
	Home  string   // HOME (empty dir)
	Dir   string   // working directory (empty dir: no config.yaml)
	LLM   string   // RECALL_LLM_BASE_URL; "" leaves the LLM unconfigured
	Extra []string // more KEY=VALUE
	Umask string   // when set, the bot runs under this umask (e.g. "000")
}

// argv is the program and arguments that run the bot with args in e.
func (e botEnv) argv(args []string) (string, []string) {
	if e.Umask == "" {
		return botBin, args
	}
	return "/bin/sh", append([]string{"-c", `umask ` + e.Umask + ` && exec "$0" "$@"`, botBin}, args...)
}

// newEnv returns an environment with fresh data, home and working dirs.
func newEnv(t *testing.T, llmURL string, extra ...string) botEnv {
	t.Helper()
	return botEnv{Data: filepath.Join(t.TempDir(), "data"), Home: t.TempDir(), Dir: t.TempDir(), LLM: llmURL, Extra: extra}
}

func (e botEnv) environ() []string {
	env := []string{
		"HOME=" + e.Home,
		"PATH=" + os.Getenv("PATH"),
		"TMPDIR=" + os.TempDir(),
		"RECALL_DATA_DIR=" + e.Data,
		"RECALL_LOG_LEVEL=debug",
		// A random port: tests never take 9090 (or each other's port).
		"RECALL_HTTP_LISTEN=127.0.0.1:0",
	}
	if e.LLM != "" {
		env = append(env,
			"RECALL_LLM_BASE_URL="+e.LLM,
			"RECALL_LLM_API_KEY=test-key",
			"RECALL_LLM_MODEL=test-model",
			"RECALL_LLM_MAX_RETRIES=0",
			"RECALL_LLM_TIMEOUT=20s",
		)
	}
	return append(env, e.Extra...)
}

// command returns the bot with args in e (not started).
func (e botEnv) command(ctx context.Context, args ...string) *exec.Cmd {
	prog, argv := e.argv(args)
	c := exec.CommandContext(ctx, prog, argv...)
	c.Env = e.environ()
	c.Dir = e.Dir
	c.WaitDelay = 5 * time.Second
	return c
}

// result is one finished run.
type result struct {
	Stdout, Stderr string
	Code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout ---\n%s\n--- stderr ---\n%s", r.Code, r.Stdout, r.Stderr)
}

// run runs the bot to completion with stdin.
func (e botEnv) run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	c := e.command(ctx, args...)
	c.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	r := result{Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		r.Code = ee.ExitCode()
	default:
		t.Fatalf("running bot %v: %v\n%s", args, err, r)
	}
	if ctx.Err() != nil {
		t.Fatalf("bot %v did not finish within %s\n%s", args, runTimeout, r)
	}
	return r
}

// mustRun runs the bot and fails the test unless it exits 0.
func (e botEnv) mustRun(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := e.run(t, stdin, args...)
	if r.Code != 0 {
		t.Fatalf("bot %v failed:\n%s", args, r)
	}
	return r
}

// export runs `bot export args…` and parses the document.
func (e botEnv) export(t *testing.T, args ...string) memory.Export {
	t.Helper()
	r := e.mustRun(t, "", append([]string{"export"}, args...)...)
	doc, err := memory.ReadExport(strings.NewReader(r.Stdout))
	if err != nil {
		t.Fatalf("bot export %v is not a valid export: %v\n%s", args, err, r)
	}
	return doc
}

// messagesOf returns the messages of conversation key in doc.
func messagesOf(doc memory.Export, key string) []memory.Message {
	var out []memory.Message
	for _, o := range doc.Owners {
		for _, c := range o.Conversations {
			if c.Key == key {
				out = append(out, c.Messages...)
			}
		}
	}
	return out
}

// isSummaryRequest tells a summarization request from a chat request by the
// summarizer's system prompts (level 1 and folds).
func isSummaryRequest(r llmtest.Request) bool {
	for _, m := range r.Messages {
		if m.Role == llm.RoleSystem && (strings.Contains(m.Content, "condense") || strings.Contains(m.Content, "merge several consecutive summaries")) {
			return true
		}
	}
	return false
}

// summaryText is what the fake LLM returns for every summary.
const summaryText = "SUMMARY-MARKER: the user lives in Lisbon and counted sheep."

// fakeLLM is an llmtest server that echoes chat requests ("echo: <last user
// message>") and answers summarization requests with summaryText.
type fakeLLM struct {
	*llmtest.Server
	mu    sync.Mutex
	delay func() time.Duration // optional per chat request
	tag   func() string        // optional suffix per chat reply
}

func newFakeLLM(t *testing.T) *fakeLLM {
	f := &fakeLLM{}
	echo := llmtest.Echo("echo: ")
	f.Server = llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		if isSummaryRequest(r) {
			return llmtest.Response{Text: summaryText}
		}
		resp := echo(r)
		f.mu.Lock()
		if f.delay != nil {
			resp.Delay = f.delay()
		}
		if f.tag != nil {
			resp.Text += f.tag()
		}
		f.mu.Unlock()
		return resp
	})
	return f
}

// chatRequests returns the chat (not summary) requests received so far.
func (f *fakeLLM) chatRequests() []llmtest.Request {
	var out []llmtest.Request
	for _, r := range f.Requests() {
		if !isSummaryRequest(r) {
			out = append(out, r)
		}
	}
	return out
}

// summaryRequests counts the summarization requests received so far.
func (f *fakeLLM) summaryRequests() int {
	n := 0
	for _, r := range f.Requests() {
		if isSummaryRequest(r) {
			n++
		}
	}
	return n
}

// promptText flattens a request's messages ("role: content" per message).
func promptText(r llmtest.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Content)
	}
	return b.String()
}

// openDB opens the data dir's SQLite database directly (only reads are run
// on it) and closes it at the end of the test.
func openDB(t *testing.T, dataDir string) *memory.SQLite {
	t.Helper()
	db, err := memory.OpenSQLite(t.Context(), filepath.Join(dataDir, "recall.db"))
	if err != nil {
		t.Fatalf("opening the database: %v", err)
	}
	return db
}

// integrityCheck runs PRAGMA integrity_check and returns its answer.
func integrityCheck(t *testing.T, db *memory.SQLite) string {
	t.Helper()
	rows, err := db.DB().QueryContext(t.Context(), `PRAGMA integrity_check`)
	if err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatalf("integrity_check: %v", err)
		}
		lines = append(lines, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	return strings.Join(lines, "\n")
}
