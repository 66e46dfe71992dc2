package figures

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/recallbot/recall/procmem"
)

// BuildBot builds cmd/bot into dir as the Dockerfile does (static, no cgo,
// stripped: CGO_ENABLED=0 go build -trimpath -ldflags "-s -w"), so the
// figures are those of the binary that ships, and returns its path. It runs
// the go command, so the program must run inside the module. Build tags
// (e.g. "pprof": the bot then serves net/http/pprof on $PPROF_LISTEN) go to
// go build.
func BuildBot(ctx context.Context, dir string, tags ...string) (string, error) {
	bin := filepath.Join(dir, "bot")
	args := []string{"build", "-trimpath", "-ldflags", "-s -w", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	c := exec.CommandContext(ctx, "go", append(args, "github.com/recallbot/recall/cmd/bot")...)
	c.Env = append(os.Environ(), "CGO_ENABLED=0")
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/bot: %w: %s", err, strings.TrimSpace(out.String()))
	}
	return bin, nil
}

// BotEnv is how the bot runs: in Telegram mode against Telegram and an
// OpenAI-compatible server at LLM, its data in Data, open to anyone.
type BotEnv struct {
	Data        string
	Telegram    *FakeTelegram
	LLM         string // base URL, ending in /v1
	Concurrency int    // llm.concurrency; 0: the default
	Extra       []string
	// Pprof, when set, is the address a binary built with the pprof tag
	// serves net/http/pprof on (Bot.Profile).
	Pprof string
}

// Bot is a running bot process.
type Bot struct {
	cmd     *exec.Cmd
	Started time.Time // just before exec
	health  string    // the /healthz URL
	pprof   string    // the /debug/pprof/ URL, or ""

	mu     sync.Mutex
	stderr bytes.Buffer // the last lines of the log
	exited chan struct{}
	err    error
}

// freeAddr returns a 127.0.0.1 address no one listens on (now).
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// StartBot starts bin with env; Stop ends it.
func StartBot(bin string, env BotEnv) (*Bot, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "recall-bot-home-")
	if err != nil {
		return nil, err
	}
	vars := []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"TMPDIR=" + os.TempDir(),
		"RECALL_DATA_DIR=" + env.Data,
		"RECALL_LOG_LEVEL=warn",
		"RECALL_HTTP_LISTEN=" + addr,
		"RECALL_TELEGRAM_TOKEN=" + env.Telegram.Token,
		"RECALL_TELEGRAM_API_URL=" + env.Telegram.URL,
		"RECALL_ACCESS_OPEN=true",
		"RECALL_LLM_BASE_URL=" + env.LLM,
		"RECALL_LLM_API_KEY=bench-key",
		"RECALL_LLM_MODEL=gpt-4o-mini",
		"RECALL_LLM_MAX_RETRIES=0",
	}
	if env.Concurrency > 0 {
		vars = append(vars, "RECALL_LLM_CONCURRENCY="+strconv.Itoa(env.Concurrency))
	}
	if env.Pprof != "" {
		vars = append(vars, "PPROF_LISTEN="+env.Pprof)
	}
	c := exec.Command(bin)
	c.Env = append(vars, env.Extra...)
	c.Dir = home
	stderr, err := c.StderrPipe()
	if err != nil {
		return nil, err
	}
	b := &Bot{cmd: c, health: "http://" + addr + "/healthz", exited: make(chan struct{})}
	if env.Pprof != "" {
		b.pprof = "http://" + env.Pprof + "/debug/pprof/"
	}
	b.Started = time.Now()
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("starting the bot: %w", err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			b.mu.Lock()
			if b.stderr.Len() > 16<<10 {
				b.stderr.Reset()
			}
			b.stderr.WriteString(sc.Text() + "\n")
			b.mu.Unlock()
		}
		err := c.Wait()
		b.mu.Lock()
		b.err = err
		b.mu.Unlock()
		os.RemoveAll(home)
		close(b.exited)
	}()
	return b, nil
}

// Log is the end of the bot's stderr.
func (b *Bot) Log() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stderr.String()
}

// WaitReady polls /healthz every millisecond until it answers 200 with
// status ok and the telegram part ok, and returns when that answer came.
func (b *Bot) WaitReady(ctx context.Context, timeout time.Duration) (time.Time, error) {
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}, Timeout: 5 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-b.exited:
			return time.Time{}, fmt.Errorf("the bot exited before it was ready: %v\n%s", b.err, b.Log())
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		default:
		}
		if resp, err := client.Get(b.health); err == nil {
			var rep struct {
				Status string            `json:"status"`
				Parts  map[string]string `json:"parts"`
			}
			err := json.NewDecoder(resp.Body).Decode(&rep)
			resp.Body.Close()
			if err == nil && resp.StatusCode == 200 && rep.Status == "ok" && rep.Parts["telegram"] == "ok" {
				return time.Now(), nil
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("the bot was not ready within %s:\n%s", timeout, b.Log())
		}
		time.Sleep(time.Millisecond)
	}
}

// ProcMemory is a process's resident memory, from /proc/<pid>/status and
// /proc/<pid>/smaps_rollup.
type ProcMemory struct {
	RSS  int64 // VmRSS, bytes: resident now
	Peak int64 // VmHWM, bytes: the peak resident size
	Anon int64 // RssAnon, bytes: of RSS, anonymous memory (Go heap and stacks, SQLite's memories): what the host pays for this process alone
	File int64 // RssFile, bytes: of RSS, mapped files (the binary's pages, the kernel's to share and reclaim)
	Pss  int64 // Pss, bytes: anonymous memory plus each mapped page divided by the processes that map it
}

// Pid is the bot's process id.
func (b *Bot) Pid() int { return b.cmd.Process.Pid }

// Memory reads the bot's resident memory (Linux only).
func (b *Bot) Memory() (ProcMemory, error) {
	return procMemory(b.cmd.Process.Pid)
}

func procMemory(pid int) (ProcMemory, error) {
	r, err := procmem.ReadPID(pid)
	return ProcMemory{RSS: r.Total, Peak: r.Peak, Anon: r.Anon, File: r.File, Pss: r.Pss}, err
}

// Profile fetches the pprof profile name (heap after a GC, goroutine, …)
// from a bot started with BotEnv.Pprof and writes it to path.
func (b *Bot) Profile(name, path string) error {
	if b.pprof == "" {
		return errors.New("the bot serves no profiles (BotEnv.Pprof, a binary built with the pprof tag)")
	}
	url := b.pprof + name
	if name == "heap" {
		url += "?gc=1"
	}
	resp, err := http.Get(url)
	if err != nil {
		return fmt.Errorf("fetching the %s profile: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching the %s profile: %s", name, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("writing the %s profile: %w", name, err)
	}
	return f.Close()
}

// Stop sends SIGTERM and waits for the exit (killing the bot after a
// minute).
func (b *Bot) Stop() error {
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(time.Minute):
		_ = b.cmd.Process.Kill()
		<-b.exited
		return errors.New("the bot did not stop within a minute of SIGTERM")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
