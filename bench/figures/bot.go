package figures

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
)

// BuildBot builds cmd/bot into dir and returns the binary's path. It runs
// the go command, so the program must run inside the module.
func BuildBot(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "bot")
	c := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/recallbot/recall/cmd/bot")
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
}

// Bot is a running bot process.
type Bot struct {
	cmd     *exec.Cmd
	Started time.Time // just before exec
	health  string    // the /healthz URL

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
	c := exec.Command(bin)
	c.Env = append(vars, env.Extra...)
	c.Dir = home
	stderr, err := c.StderrPipe()
	if err != nil {
		return nil, err
	}
	b := &Bot{cmd: c, health: "http://" + addr + "/healthz", exited: make(chan struct{})}
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

// ProcMemory is a process's resident memory, from /proc/<pid>/status.
type ProcMemory struct {
	RSS  int64 // VmRSS, bytes: resident now
	Peak int64 // VmHWM, bytes: the peak resident size
}

// Memory reads the bot's resident memory (Linux only).
func (b *Bot) Memory() (ProcMemory, error) {
	return procMemory(b.cmd.Process.Pid)
}

func procMemory(pid int) (ProcMemory, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return ProcMemory{}, fmt.Errorf("resident memory is read from /proc (Linux): %w", err)
	}
	var m ProcMemory
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmRSS":
			m.RSS = n << 10
		case "VmHWM":
			m.Peak = n << 10
		}
	}
	if m.RSS == 0 {
		return m, errors.New("no VmRSS in /proc/" + strconv.Itoa(pid) + "/status")
	}
	return m, nil
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
