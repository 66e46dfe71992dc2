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
