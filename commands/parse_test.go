package commands_test

import (
	"strings"
	"testing"

	"github.com/recallbot/recall/commands"
)

func TestParse(t *testing.T) {
	long32 := strings.Repeat("a", 32)
	long33 := strings.Repeat("a", 33)
	tests := []struct {
		name string
		text string
		ok   bool
		want commands.Parsed
	}{
		{"plain", "/help", true, commands.Parsed{Name: "help"}},
		{"upper case", "/HELP", true, commands.Parsed{Name: "help"}},
		{"mixed case", "/Summary_Status", true, commands.Parsed{Name: "summary_status"}},
		{"bot and args", "/summary@RecallBot 15", true, commands.Parsed{Name: "summary", Bot: "RecallBot", Args: "15"}},
		{"other bot", "/summary@OtherBot", true, commands.Parsed{Name: "summary", Bot: "OtherBot"}},
		{"underscore and lower bot", "/summary_now@recallbot", true, commands.Parsed{Name: "summary_now", Bot: "recallbot"}},
		{"leading spaces", "  /start", true, commands.Parsed{Name: "start"}},
		{"leading newline and tab", "\n\t/start", true, commands.Parsed{Name: "start"}},
		{"trailing spaces", "/help   ", true, commands.Parsed{Name: "help"}},
		{"digits after first letter", "/a1_2", true, commands.Parsed{Name: "a1_2"}},
		{"newline after name", "/summary\nsqlite 15", true, commands.Parsed{Name: "summary", Args: "sqlite 15"}},
		{"newline after bot", "/summary@RecallBot\nsqlite 15", true, commands.Parsed{Name: "summary", Bot: "RecallBot", Args: "sqlite 15"}},
		{"tab after name", "/search\tlisbon", true, commands.Parsed{Name: "search", Args: "lisbon"}},
		{"no-break space after name", "/search\u00a0lisbon", true, commands.Parsed{Name: "search", Args: "lisbon"}},
		{"many spaces kept inside args", "/cmd with   many   spaces", true, commands.Parsed{Name: "cmd", Args: "with   many   spaces"}},
		{"multi-line args", "/remember note line one\nline two", true, commands.Parsed{Name: "remember", Args: "note line one\nline two"}},
		{"32 characters", "/" + long32, true, commands.Parsed{Name: long32}},
		{"unicode args", "/search café Lisboa", true, commands.Parsed{Name: "search", Args: "café Lisboa"}},

		{"empty", "", false, commands.Parsed{}},
		{"only slash", "/", false, commands.Parsed{}},
		{"slash and space", "/ help", false, commands.Parsed{}},
		{"double slash", "//x", false, commands.Parsed{}},
		{"starts with digit", "/1abc", false, commands.Parsed{}},
		{"starts with underscore", "/_x", false, commands.Parsed{}},
		{"dash", "/a-b", false, commands.Parsed{}},
		{"path", "/usr/bin/env", false, commands.Parsed{}},
		{"only bot", "/@RecallBot", false, commands.Parsed{}},
		{"no slash", "help", false, commands.Parsed{}},
		{"slash in middle", "see /help", false, commands.Parsed{}},
		{"unicode name", "/помощь", false, commands.Parsed{}},
		{"accented name", "/café", false, commands.Parsed{}},
		{"emoji name", "/🚀", false, commands.Parsed{}},
		{"33 characters", "/" + long33, false, commands.Parsed{}},
		{"very long name", "/" + strings.Repeat("x", 10000), false, commands.Parsed{}},
		{"invalid UTF-8 in name", "/he\xffp", false, commands.Parsed{}},
		{"invalid UTF-8 in args", "/search \xff\xfe", false, commands.Parsed{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := commands.Parse(tt.text)
			if ok != tt.ok || got != tt.want {
				t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", tt.text, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParsedForBot(t *testing.T) {
	tests := []struct {
		text    string
		botName string
		want    bool
	}{
		{"/help", "RecallBot", true},
		{"/help", "", true},
		{"/help@RecallBot", "RecallBot", true},
		{"/help@recallbot", "RecallBot", true},
		{"/help@RECALLBOT", "recallbot", true},
		{"/help@RecallBot", "@RecallBot", true},
		{"/help@RecallBot", "@recallbot", true},
		{"/help@OtherBot", "RecallBot", false},
		{"/help@OtherBot", "@RecallBot", false},
		{"/help@RecallBot2", "RecallBot", false},
		{"/help@Recall", "RecallBot", false},
		{"/help@OtherBot", "", true}, // the bot's name is unknown: every command is ours
	}
	for _, tt := range tests {
		t.Run(tt.text+"/"+tt.botName, func(t *testing.T) {
			p, ok := commands.Parse(tt.text)
			if !ok {
				t.Fatalf("Parse(%q) failed", tt.text)
			}
			if got := p.ForBot(tt.botName); got != tt.want {
				t.Errorf("Parse(%q).ForBot(%q) = %v, want %v", tt.text, tt.botName, got, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"/help", "/summary@RecallBot 15", "/summary\nsqlite 15", "//x", "/\xff", " /a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := commands.Parse(s)
		if !ok {
			if p != (commands.Parsed{}) {
				t.Fatalf("Parse(%q) = %+v with ok false", s, p)
			}
			return
		}
		if p.Name == "" || len(p.Name) > 32 || p.Name != strings.ToLower(p.Name) {
			t.Fatalf("Parse(%q): bad name %q", s, p.Name)
		}
		if p.Args != strings.TrimSpace(p.Args) {
			t.Fatalf("Parse(%q): args %q not trimmed", s, p.Args)
		}
	})
}
