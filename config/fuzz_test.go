package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A secret written one level too high is not echoed by the error that
// rejects it (the message goes to the terminal and to logs).
func TestSectionAsScalarDoesNotEchoTheValue(t *testing.T) {
	isolateEnv(t)
	const secret = "123456:AAHsecretTokenValue"
	for _, doc := range []string{"telegram: " + secret + "\n", "llm: " + secret + "\n", "telegram:\n  webhook: " + secret + "\n"} {
		_, err := Load(writeFile(t, doc))
		if err == nil {
			t.Fatalf("%q loaded", doc)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "AAHsecret") {
			t.Errorf("the error quotes the value: %v", err)
		}
		if !strings.Contains(err.Error(), "must be a mapping") {
			t.Errorf("the error does not say what is wrong: %v", err)
		}
	}
}

// FuzzLoad reads any configuration file: Load never panics; what it
// accepts is valid and its secrets are redacted by Redacted; what it
// rejects is rejected with an error that quotes none of the secret values
// the file sets (llm.api_key, telegram.token, telegram.webhook.secret).
// Seeds: testdata/fuzz/FuzzLoad and the example config.yaml.
func FuzzLoad(f *testing.F) {
	if example, err := os.ReadFile(exampleFile); err == nil {
		f.Add(string(example))
	}
	f.Add("llm:\n  api_key: sk-abcdef\n  timeout: 10\n")
	f.Add("telegram:\n  token: \"1:A\"\n  webhook: {url: 'http://x', secret: 'a b'}\n")
	dir := f.TempDir()
	for _, l := range leaves() {
		if _, ok := os.LookupEnv(envName(l.key)); ok {
			f.Skipf("%s is set: the fuzz target reads files only", envName(l.key))
		}
	}
	f.Fuzz(func(t *testing.T, doc string) {
		p := filepath.Join(dir, "recall.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(p)
		if err != nil {
			msg := err.Error()
			for _, s := range secretValues(doc) {
				if strings.Contains(msg, s) {
					t.Fatalf("the error quotes the secret %q: %v", s, err)
				}
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Load accepted an invalid config: %v", err)
		}
		r := c.Redacted()
		for _, s := range c.Secrets() {
			if len(s) >= 4 && (r.LLM.APIKey == s || r.Telegram.Token == s || r.Telegram.Webhook.Secret == s) {
				t.Fatalf("Redacted kept the secret %q", s)
			}
		}
	})
}

// secretValues returns the values written for the secret keys in doc, as
// far as a line-by-line look finds them ("api_key: X", "token: X",
// "secret: X"), 8 characters or longer: shorter ones may be in a message
// for other reasons.
func secretValues(doc string) []string {
	var out []string
	for _, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		for _, k := range []string{"api_key:", "token:", "secret:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				v = strings.Trim(strings.TrimSpace(v), `"'`)
				if len(v) >= 8 {
					out = append(out, v)
				}
			}
		}
	}
	return out
}
