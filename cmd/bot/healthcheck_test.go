package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestHealthURL(t *testing.T) {
	tests := []struct {
		listen, want, wantErr string
	}{
		{"127.0.0.1:9090", "http://127.0.0.1:9090/healthz", ""},
		{"0.0.0.0:9090", "http://127.0.0.1:9090/healthz", ""},
		{":9090", "http://127.0.0.1:9090/healthz", ""},
		{"[::]:9090", "http://127.0.0.1:9090/healthz", ""},
		{"localhost:8080", "http://localhost:8080/healthz", ""},
		{"[::1]:9090", "http://[::1]:9090/healthz", ""},
		{"10.1.2.3:9090", "http://10.1.2.3:9090/healthz", ""},
		{"", "", "http.listen is empty"},
		{"127.0.0.1:0", "", "port 0"},
		{"nonsense", "", "http.listen"},
	}
	for _, tt := range tests {
		got, err := healthURL(tt.listen)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("healthURL(%q) = %q, %v; want an error containing %q", tt.listen, got, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("healthURL(%q) = %q, %v; want %q", tt.listen, got, err, tt.want)
		}
	}
}

// `bot healthcheck` against a running bot (exit 0), a stopped one (exit 1),
// an unhealthy answer (exit 1) and with http.listen empty (exit 1); plus
// /metrics of the running bot.
func TestHealthcheckExitCodes(t *testing.T) {
	tg := newFakeTelegram(t)
	env := telegramEnv(t, tg, "")
	bot := env.startDaemon(t)
	addr := bot.httpAddr()
	bot.waitLog("running", 30*time.Second) // /healthz answers before the Telegram channel has started
	_, port, _ := net.SplitHostPort(addr)
	check := func(listen string) result {
		t.Helper()
		e := env
		e.Extra = append(append([]string(nil), env.Extra...), "RECALL_HTTP_LISTEN="+listen)
		return e.run(t, "", "healthcheck")
	}

	r := check(addr)
	// No model is configured: the bot runs (exit 0) but the report is
	// degraded and says so.
	if r.Code != 0 || !strings.Contains(r.Stdout, `"status":"degraded"`) || !strings.Contains(r.Stdout, `"telegram":"ok"`) ||
		!strings.Contains(r.Stdout, `"llm":"not configured`) {
		t.Fatalf("healthcheck of a running bot with no model:\n%s", r)
	}
	// An empty host is reached on 127.0.0.1.
	if r := check(":" + port); r.Code != 0 {
		t.Errorf("healthcheck with http.listen :%s:\n%s", port, r)
	}

	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`recall_channel_reconnects_total{channel="telegram"} 0`,
		`recall_turns_total{channel="telegram",outcome="ok"} 0`,
		`recall_write_queue_depth 0`,
		`recall_write_failures_total 0`,
		`recall_build_info{version="dev"} 1`,
		`go_goroutines `,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics of the running bot lacks %q", want)
		}
	}

	bot.signal(syscall.SIGTERM)
	if code := bot.wait(30 * time.Second); code != 0 {
		t.Fatalf("the bot exited %d after SIGTERM:\n%s", code, bot.output())
	}
	r = check(addr)
	if r.Code != 1 || !strings.Contains(r.Stderr, "unhealthy") || !strings.Contains(r.Stderr, "connection refused") {
		t.Errorf("healthcheck of a stopped bot:\n%s", r)
	}

	sick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"status":"unavailable","parts":{"database":"ok","telegram":"disconnected"}}`)
	}))
	defer sick.Close()
	r = check(strings.TrimPrefix(sick.URL, "http://"))
	if r.Code != 1 || !strings.Contains(r.Stderr, "503") || !strings.Contains(r.Stderr, `"telegram":"disconnected"`) {
		t.Errorf("healthcheck of an unhealthy bot:\n%s", r)
	}

	off := newEnv(t, "")
	off.Extra = []string{"RECALL_HTTP_LISTEN="} // set but empty: the server is off
	r = off.run(t, "", "healthcheck")
	if r.Code != 1 || !strings.Contains(r.Stderr, "http.listen is empty") {
		t.Errorf("healthcheck with http.listen empty:\n%s", r)
	}
}

// A bot for a chat platform does not start when http.listen is taken; the
// terminal chat runs without the server.
func TestHTTPListenBusy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := "RECALL_HTTP_LISTEN=" + ln.Addr().String()

	tg := newFakeTelegram(t)
	r := telegramEnv(t, tg, "", busy).run(t, "")
	if r.Code != 1 || !strings.Contains(r.Stderr, "http.listen "+ln.Addr().String()) || !strings.Contains(r.Stderr, "address already in use") {
		t.Errorf("telegram bot with http.listen taken:\n%s", r)
	}

	srv := newFakeLLM(t)
	env := newEnv(t, srv.URL, busy)
	r = env.mustRun(t, lines("still here"))
	if !strings.Contains(r.Stdout, "echo: still here") {
		t.Errorf("terminal chat with http.listen taken:\n%s", r)
	}
	log, _ := os.ReadFile(filepath.Join(env.Data, "recall.log"))
	if !strings.Contains(string(log), "the health and metrics server is off") {
		t.Errorf("recall.log does not say the server is off:\n%s", log)
	}
}
