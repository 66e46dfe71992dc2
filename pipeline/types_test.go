package pipeline

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestInboundUserID(t *testing.T) {
	tests := []struct {
		in   Inbound
		want string
	}{
		{Inbound{Key: tgKey, SenderID: "123"}, "telegram:123"},
		{Inbound{Key: grpKey, SenderID: "42", IsGroup: true}, "telegram:42"},
		{Inbound{Key: Key{Channel: "whatsapp", Chat: "4915112345678@s.whatsapp.net"}, SenderID: "4915112345678"}, "whatsapp:4915112345678"},
		{Inbound{Key: Key{Channel: "console", Chat: "local"}, SenderID: "local"}, ConsoleUser},
	}
	for _, tt := range tests {
		if got := tt.in.UserID(); got != tt.want {
			t.Errorf("UserID() = %q, want %q", got, tt.want)
		}
	}
}

func TestInboundIsCommand(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"/help", true},
		{"/summary@RecallBot 10", true},
		{"/", true},
		{"hello /help", false},
		{" /help", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := (Inbound{Text: tt.text}).IsCommand(); got != tt.want {
			t.Errorf("IsCommand(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

func TestInboundAddressed(t *testing.T) {
	tests := []struct {
		name string
		in   Inbound
		want bool
	}{
		{"private", Inbound{Text: "hi"}, true},
		{"group chatter", Inbound{IsGroup: true, Text: "hi"}, false},
		{"group mention", Inbound{IsGroup: true, MentionsBot: true}, true},
		{"group reply to bot", Inbound{IsGroup: true, ReplyToBot: true}, true},
		{"group command", Inbound{IsGroup: true, Text: "/help"}, true},
		{"group button", Inbound{IsGroup: true, Choice: "sqlite"}, true},
	}
	for _, tt := range tests {
		if got := tt.in.Addressed(); got != tt.want {
			t.Errorf("%s: Addressed() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

var storageChoices = []Choice{
	{Label: "SQLite (recommended)", Data: "sqlite"},
	{Label: "JSON file", Data: "json"},
}

func TestWithChoices(t *testing.T) {
	out := Outbound{Key: tgKey, Text: "Where should I keep your memory?", Choices: storageChoices}
	tests := []struct {
		name        string
		sender      Sender
		in          Outbound
		wantText    string
		wantChoices int
	}{
		{"buttons", &buttonSender{}, out, out.Text, 2},
		{"numbered", &recorder{}, out,
			"Where should I keep your memory?\n\n1. SQLite (recommended)\n2. JSON file", 0},
		{"numbered without text", &recorder{}, Outbound{Choices: storageChoices},
			"1. SQLite (recommended)\n2. JSON file", 0},
		{"no choices", &recorder{}, Outbound{Text: "hi"}, "hi", 0},
	}
	for _, tt := range tests {
		got := WithChoices(tt.sender, tt.in)
		if got.Text != tt.wantText || len(got.Choices) != tt.wantChoices {
			t.Errorf("%s: got %q with %d choices, want %q with %d", tt.name, got.Text, len(got.Choices), tt.wantText, tt.wantChoices)
		}
	}
	if len(out.Choices) != 2 || out.Text != "Where should I keep your memory?" {
		t.Errorf("WithChoices modified its argument: %+v", out)
	}
}

func TestPickChoice(t *testing.T) {
	three := append(append([]Choice(nil), storageChoices...), Choice{Label: "JSON lines", Data: "jsonl"})
	tests := []struct {
		reply   string
		choices []Choice
		want    string // Data; "" for no match
	}{
		{"1", storageChoices, "sqlite"},
		{" 2 ", storageChoices, "json"},
		{"2.", storageChoices, "json"},
		{"1)", storageChoices, "sqlite"},
		{"3", storageChoices, ""},
		{"0", storageChoices, ""},
		{"-1", storageChoices, ""},
		{"json", storageChoices, "json"},
		{"JSON", storageChoices, "json"},
		{"json file", storageChoices, "json"},
		{"  Sqlite (Recommended) ", storageChoices, "sqlite"},
		{"SQLite", storageChoices, "sqlite"},
		{"recommended", storageChoices, "sqlite"},
		{"file", storageChoices, "json"},
		{"json", three, "json"},   // data wins over the ambiguous word
		{"lines", three, "jsonl"}, // unique word
		{"JSON", three, "json"},
		{"postgres", storageChoices, ""},
		{"", storageChoices, ""},
		{"1", nil, ""},
	}
	for _, tt := range tests {
		got, ok := PickChoice(tt.reply, tt.choices)
		if ok != (tt.want != "") || got.Data != tt.want {
			t.Errorf("PickChoice(%q) = %+v, %v; want data %q", tt.reply, got, ok, tt.want)
		}
	}
	// A word two labels share, with no exact data match, is ambiguous.
	amb := []Choice{{Label: "Keep all", Data: "a"}, {Label: "Keep none", Data: "b"}}
	if got, ok := PickChoice("keep", amb); ok {
		t.Errorf("PickChoice(keep) = %+v, want no match", got)
	}
}

func TestSendText(t *testing.T) {
	r := &recorder{}
	if err := SendText(context.Background(), r, tgKey, "*hi*"); err != nil {
		t.Fatal(err)
	}
	sent := r.Sent()
	if len(sent) != 1 || sent[0].Key != tgKey || sent[0].Text != "*hi*" || sent[0].Plain {
		t.Errorf("sent %+v", sent)
	}
	boom := errors.New("boom")
	r.setErr(boom)
	if err := SendText(context.Background(), r, tgKey, "x"); !errors.Is(err, boom) {
		t.Errorf("err = %v, want wrapping %v", err, boom)
	}
}

// TestSentAt: a platform's send time is believed from 2000 to a day after
// now; earlier or later (a forged or broken update, a year no store can
// hold) it is left zero, for the store to take the arrival time.
func TestSentAt(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		t    time.Time
		keep bool
	}{
		{now.Add(-time.Minute), true},
		{now.AddDate(-5, 0, 0), true},
		{now.Add(23 * time.Hour), true}, // the platform's clock ahead of ours
		{now.Add(25 * time.Hour), false},
		{time.Unix(17000066666660000, 0).UTC(), false}, // year ~538 million
		{time.Unix(1, 0).UTC(), false},
		{time.Date(1999, 12, 31, 23, 0, 0, 0, time.UTC), false},
	} {
		got := SentAt(c.t, now)
		if c.keep && !got.Equal(c.t) || !c.keep && !got.IsZero() {
			t.Errorf("SentAt(%v) = %v, keep %v", c.t, got, c.keep)
		}
	}
}
