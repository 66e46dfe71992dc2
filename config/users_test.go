package config

import (
	"strings"
	"testing"
)

// Each access entry names a user as its channel writes them: a number on
// Telegram, a phone number (or …@lid) on WhatsApp, local on the console.
func TestAccessUserIDsPerChannel(t *testing.T) {
	for entry, want := range map[string]string{
		"telegram:123456":                       "",
		"telegram:-1001234567890":               "",
		"whatsapp:4915112345678":                "",
		"whatsapp:123456789012345@lid":          "",
		"console:local":                         "",
		"telegram:abc":                          `a Telegram user id is a number`,
		"telegram:99999999999999999999":         `a Telegram user id is a number`,
		"telegram:@someone":                     `a Telegram user id is a number`,
		"whatsapp:+4915112345678":               "a WhatsApp user id is the phone number in international form, digits only",
		"whatsapp:4915112345678@s.whatsapp.net": "a WhatsApp user id",
		"whatsapp:alice":                        "a WhatsApp user id",
		"console:me":                            `the terminal's user is console:local, got "console:me"`,
		"telegarm:1":                            `the channel must be telegram, whatsapp or console, got "telegarm:1"`,
		"123456":                                `must be "channel:id"`,
	} {
		c := Default()
		c.Access.Admins = []string{"telegram:1", entry}
		err := c.Validate()
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", entry, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), "access.admins[1]: "+want)):
			t.Errorf("%s: Validate() = %v, want access.admins[1]: %s…", entry, err, want)
		}
	}
}

// A bad id from the environment is refused at start, naming the key and
// the variable.
func TestLoadRefusesABadUserID(t *testing.T) {
	isolateEnv(t)
	t.Setenv("RECALL_ACCESS_ALLOWED_USERS", "telegram:42,telegram:abc")
	_, err := Load("")
	if want := `access.allowed_users[1]: a Telegram user id is a number`; err == nil || !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), "; set by RECALL_ACCESS_ALLOWED_USERS") {
		t.Fatalf("Load = %v, want an error with %q set by RECALL_ACCESS_ALLOWED_USERS", err, want)
	}
}
