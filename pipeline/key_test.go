package pipeline

import (
	"errors"
	"log/slog"
	"testing"
)

func TestParseKey(t *testing.T) {
	tests := []struct {
		in      string
		want    Key
		wantErr bool
	}{
		{"telegram:123:7", Key{"telegram", "123", "7"}, false},
		{"telegram:123:", Key{"telegram", "123", ""}, false},
		{"telegram:123", Key{"telegram", "123", ""}, false},
		{"whatsapp:4915112345678@s.whatsapp.net:", Key{"whatsapp", "4915112345678@s.whatsapp.net", ""}, false},
		{"console:local:", Key{"console", "local", ""}, false},
		{"x:a:b:c", Key{"x", "a:b", "c"}, false},
		{"telegram", Key{}, true},
		{"Telegram:1:", Key{}, true},
		{":1:", Key{}, true},
		{"telegram::", Key{}, true},
		{"telegram:a\nb:", Key{}, true},
	}
	for _, tt := range tests {
		got, err := ParseKey(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseKey(%q) = %+v, %v; want %+v, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !errors.Is(err, ErrBadKey) {
			t.Errorf("ParseKey(%q) error %v is not ErrBadKey", tt.in, err)
		}
		if err == nil {
			if back, err := ParseKey(got.String()); err != nil || back != got {
				t.Errorf("round trip of %q: %+v, %v", tt.in, back, err)
			}
		}
	}
}

func TestKeyHelpers(t *testing.T) {
	k := Key{Channel: "telegram", Chat: "-100200", Thread: "5"}
	tests := []struct{ got, want string }{
		{k.String(), "telegram:-100200:5"},
		{k.Owner(), "telegram:-100200"},
		{k.LogValue().String(), "telegram:-100200:5"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if k.LogValue().Kind() != slog.KindString {
		t.Error("LogValue is not a string")
	}
	if !(Key{}).IsZero() || k.IsZero() {
		t.Error("IsZero wrong")
	}
	if err := (Key{Channel: "telegram", Chat: "1", Thread: "a:b"}).Validate(); !errors.Is(err, ErrBadKey) {
		t.Errorf("thread with ':' validated: %v", err)
	}
}
