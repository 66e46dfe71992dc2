package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/recallbot/recall/llm/llmtest"
)

// Secrets of the secrets test: the Telegram token is fakeTGToken (the fake
// Bot API checks it).
const (
	secretAPIKey  = "sk-live-SECRET-api-key-7f3a9c"
	secretWebhook = "webhook_SECRET_4b1d8e"
)

// secretForms are the ways a secret shows up in text: as is, and escaped
// for a URL path or query (error pages and library errors quote URLs).
func secretForms(secrets ...string) []string {
	var out []string
	for _, s := range secrets {
		out = append(out, s, url.PathEscape(s), url.QueryEscape(s))
	}
	return out
}

// leakyTelegram is the fake Bot API behind a front that misbehaves like a
// broken proxy for chosen texts: sendMessage of a text holding "proxy-502"
// gets an HTML 502 page that quotes the request path (with the token, as
// is and escaped); one getUpdates in three before the first message gets
// the same.
func leakyTelegram(t *testing.T, tg fakeTelegram) string {
	t.Helper()
	inner, err := url.Parse(tg.URL)
	if err != nil {
		t.Fatal(err)
	}
	page := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, "<html><body>502 Bad Gateway: POST %s (%s) via %s, <a href=\"/retry?u=%s\">retry</a></body></html>", r.URL.Path, url.PathEscape(r.URL.Path), r.URL.EscapedPath(), url.QueryEscape(r.URL.Path))
	}
	polls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
			_ = r.ParseMultipartForm(1 << 20)
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/sendMessage") && strings.Contains(r.FormValue("text"), "proxy-502"):
			page(w, r)
			return
		case strings.HasSuffix(r.URL.Path, "/getUpdates"):
			polls++
			if polls%3 == 1 && polls < 5 {
				page(w, r)
				return
			}
		}
		r.URL.Scheme, r.URL.Host = inner.Scheme, inner.Host
		tg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestSecretsNeverLogged runs the bot at debug level with a Telegram token,
// an LLM API key and a webhook secret set, through a full turn and the
// error paths that quote them — the LLM refusing the key and echoing it,
// the Bot API (behind a broken proxy) answering with pages that quote the
// URL with the token — and checks that no form of any secret is in
// anything the bot wrote.
func TestSecretsNeverLogged(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the bot binary through every subcommand (9 s on a busy 2-core machine); go test without -short runs it")
	}
	llmSrv := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		last := r.Messages[len(r.Messages)-1].Content
		if strings.Contains(last, "llm-401") {
			// Some OpenAI-compatible servers quote the key they refused.
			return llmtest.Response{Status: http.StatusUnauthorized, Text: "Incorrect API key provided: " + r.APIKey + " (" + url.QueryEscape(r.APIKey) + ")"}
		}
		return llmtest.Response{Text: "echo: " + last}
	})
	tg := newFakeTelegram(t)
	front := leakyTelegram(t, tg)
	env := telegramEnv(t, tg, llmSrv.URL,
		"RECALL_TELEGRAM_API_URL="+front,
		"RECALL_LLM_API_KEY="+secretAPIKey,
		"RECALL_TELEGRAM_WEBHOOK_SECRET="+secretWebhook,
		"RECALL_LOG_LEVEL=debug",
	)
	d := env.startDaemon(t)
	d.waitLog("connected to Telegram", 30*time.Second)

	tg.sendText(42, "hello there")
	if _, ok := tg.waitSent("echo: hello there", 30*time.Second); !ok {
		t.Fatalf("no answer to a normal turn:\n%s", d.output())
	}
	tg.sendText(42, "please llm-401")
	if _, ok := tg.waitSent("refused the bot's API key", 30*time.Second); !ok {
		t.Fatalf("the user was not told the key was rejected:\n%s", d.output())
	}
	tg.sendText(42, "proxy-502 now")
	d.waitLog("turn failed", 30*time.Second)
	tg.sendText(7, "an unknown user") // refused: logged with their id
	if _, ok := tg.waitSent("telegram:7", 30*time.Second); !ok {
		t.Fatalf("the unknown user was not answered:\n%s", d.output())
	}
	tg.sendText(42, "/stats")
	tg.sendText(42, "bye")
	if _, ok := tg.waitSent("echo: bye", 30*time.Second); !ok {
		t.Fatalf("no answer after the errors:\n%s", d.output())
	}
	d.signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}

	out := d.output()
	if !strings.Contains(out, "502") && !strings.Contains(out, "Bad Gateway") {
		t.Errorf("the Bot API errors were not logged, so the test checked nothing:\n%s", out)
	}
	if !strings.Contains(out, "Incorrect API key provided") {
		t.Errorf("the LLM's refusal was not logged, so the test checked nothing:\n%s", out)
	}
	for _, s := range secretForms(fakeTGToken, secretAPIKey, secretWebhook) {
		if i := strings.Index(out, s); i >= 0 {
			t.Errorf("the log holds a secret (%q):\n%s", s, excerpt(out, s))
		}
	}
	// The token's secret half alone (after "id:") is a secret too.
	if _, half, _ := strings.Cut(fakeTGToken, ":"); strings.Contains(out, half) {
		t.Errorf("the log holds the token's secret part:\n%s", excerpt(out, half))
	}
}
