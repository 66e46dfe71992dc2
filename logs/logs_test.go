package logs

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestSecretsNeverLogged(t *testing.T) {
	secrets := []string{"123456:AAHsecretTelegramToken", "sk-live-verysecretkey"}
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		log := New(&buf, "debug", format, secrets)
		log.Info("calling https://api.telegram.org/bot123456:AAHsecretTelegramToken/getUpdates")
		log.Error("llm failed", "err", errors.New("401: key sk-live-verysecretkey rejected"), "url", "x?k=sk-live-verysecretkey")
		log.With("token", secrets[0]).WithGroup("g").Warn("w", "nested", []string{secrets[1]})
		out := buf.String()
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s: secret %q in log:\n%s", format, s, out)
			}
		}
		if !strings.Contains(out, "***") || !strings.Contains(out, "llm failed") {
			t.Errorf("%s: log lost its content:\n%s", format, out)
		}
	}
}

// A secret quoted in a URL is escaped: error pages and library errors quote
// request URLs (the Bot API's hold the token), so the escaped forms are
// secrets too.
func TestEscapedSecretsNeverLogged(t *testing.T) {
	token, key := "123456:AAH/secret+Token", "sk-live key&more"
	var buf bytes.Buffer
	log := New(&buf, "debug", "json", []string{token, key})
	log.Error("send failed", "err", errors.New(`<a href="/retry?u=%2Fbot123456%3AAAH%2Fsecret%2BToken%2FsendMessage">`+
		`/bot123456:AAH%2Fsecret+Token/sendMessage`), "q", "k=sk-live+key%26more", "p", "sk-live%20key&more")
	out := buf.String()
	for _, s := range []string{"123456%3AAAH%2Fsecret%2BToken", "123456:AAH%2Fsecret+Token", "sk-live+key%26more", "sk-live%20key&more", "secret", "sk-live"} {
		if strings.Contains(out, s) {
			t.Errorf("secret form %q in log:\n%s", s, out)
		}
	}
	if !strings.Contains(out, "/sendMessage") {
		t.Errorf("log lost its content:\n%s", out)
	}
}
