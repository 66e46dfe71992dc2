package chatexport

import (
	"archive/zip"
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestWhatsAppStyles(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	cases := []struct {
		name, text string
		want       []Message
		skipped    int
	}{
		{"android 24h day first", "31/12/2023, 21:41 - Messages and calls are end-to-end encrypted. No one outside of this chat can read them.\n" +
			"31/12/2023, 21:41 - Anna: Happy new year!\n01/01/2024, 09:05 - Ben: Thanks\nsee you\n\ntomorrow\n",
			[]Message{{"wa2", "Anna", "Happy new year!", time.Date(2023, 12, 31, 20, 41, 0, 0, time.UTC)},
				{"wa3", "Ben", "Thanks\nsee you\n\ntomorrow", time.Date(2024, 1, 1, 8, 5, 0, 0, time.UTC)}}, 1},
		{"android US 12h", "12/31/23, 9:41 PM - Anna: late\n1/2/24, 12:05 AM - Ben: midnight\n",
			[]Message{{"wa1", "Anna", "late", time.Date(2023, 12, 31, 20, 41, 0, 0, time.UTC)},
				{"wa2", "Ben", "midnight", time.Date(2024, 1, 1, 23, 5, 0, 0, time.UTC)}}, 0},
		{"iOS with seconds and narrow no-break space", "\u200e[31.12.23, 9:41:05\u202fPM] Anna: hi\n[31.12.23, 21:42:00] Ben: \u200eimage omitted\n",
			[]Message{{"wa1", "Anna", "hi", time.Date(2023, 12, 31, 20, 41, 5, 0, time.UTC)},
				{"wa2", "Ben", "[image]", time.Date(2023, 12, 31, 20, 42, 0, 0, time.UTC)}}, 0},
		{"deleted and media", "2024-03-05, 10:00 - Anna: <Media omitted>\n2024-03-05, 10:01 - Ben: This message was deleted\n2024-03-05, 10:02 - +49 151 2345678: who: me?\n",
			[]Message{{"wa1", "Anna", "[media]", time.Date(2024, 3, 5, 9, 0, 0, 0, time.UTC)},
				{"wa3", "+49 151 2345678", "who: me?", time.Date(2024, 3, 5, 9, 2, 0, 0, time.UTC)}}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseWhatsApp(tc.text, berlin)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Messages) != len(tc.want) || c.Skipped != tc.skipped {
				t.Fatalf("got %d messages, %d skipped: %+v", len(c.Messages), c.Skipped, c.Messages)
			}
			for i, w := range tc.want {
				if g := c.Messages[i]; g.ID != w.ID || g.Sender != w.Sender || g.Text != w.Text || !g.Time.Equal(w.Time) {
					t.Errorf("message %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestWhatsAppZip(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("IMG-0001.jpg")
	w.Write([]byte{0xff, 0xd8})
	w, _ = zw.Create("WhatsApp Chat with Anna.txt")
	w.Write([]byte("05/03/2024, 10:00 - Anna: from the zip\n"))
	zw.Close()
	c, err := Parse(buf.Bytes(), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "Anna" || len(c.Messages) != 1 || c.Messages[0].Text != "from the zip" || c.Source != "whatsapp" {
		t.Fatalf("zip: %+v", c)
	}
}

func TestTelegramExport(t *testing.T) {
	data := `{"name":"Anna","type":"personal_chat","id":42,"messages":[
	 {"id":1,"type":"service","date":"2023-03-01T10:00:00","date_unixtime":"1677664800","actor":"Anna","action":"phone_call"},
	 {"id":2,"type":"message","date":"2023-03-01T10:01:00","date_unixtime":"1677664860","from":"Anna","from_id":"user1","text":"Moving to Porto in May"},
	 {"id":3,"type":"message","date":"2023-03-01T10:02:00","date_unixtime":"1677664920","from":"Ben","from_id":"user2","text":["See ",{"type":"link","text":"https://example.com"}," ok?"]},
	 {"id":4,"type":"message","date_unixtime":"1677664980","from":"Ben","text":"","photo":"photos/1.jpg"},
	 {"id":5,"type":"message","date_unixtime":"1677665040","from":null,"text":"deleted account"}
	]}`
	c, err := Parse([]byte(data), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "Anna" || c.Source != "telegram" || len(c.Messages) != 3 || c.Skipped != 2 {
		t.Fatalf("%+v", c)
	}
	if m := c.Messages[1]; m.ID != "tg3" || m.Text != "See https://example.com ok?" || m.Sender != "Ben" || !m.Time.Equal(time.Unix(1677664920, 0)) {
		t.Fatalf("entities: %+v", m)
	}
	if c.Messages[2].Text != "[photo]" {
		t.Fatalf("photo without caption: %+v", c.Messages[2])
	}
	if d := c.Describe(); d != "3 messages between Ben and Anna, Mar 2023 – Mar 2023" {
		t.Fatalf("Describe = %q", d)
	}
}

func TestNotAnExport(t *testing.T) {
	for _, in := range []string{"", "hello there\nhow are you", `{"a":1}`, `{"chats":{"list":[{"name":"a","messages":[]},{"name":"b","messages":[]}]}}`, "PK\x03\x04garbage"} {
		if _, err := Parse([]byte(in), time.UTC); err == nil {
			t.Errorf("Parse(%q) gave no error", in)
		} else if in == "" && !errors.Is(err, ErrNotExport) {
			t.Errorf("empty: %v", err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("31/12/2023, 21:41 - Anna: Happy new year!\ncontinued\n"))
	f.Add([]byte("[12/31/23, 9:41:05 PM] Anna: hi\n"))
	f.Add([]byte(`{"name":"x","messages":[{"id":1,"type":"message","date_unixtime":"1677664860","from":"A","text":["a",{"type":"bold","text":"b"}]}]}`))
	f.Add([]byte(strings.Repeat("1/1/24, 1:00 - A: "+strings.Repeat("x", 100)+"\n", 50)))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, time.UTC)
		if err != nil {
			return
		}
		for _, m := range c.Messages {
			if m.Text == "" || m.Time.IsZero() || m.ID == "" {
				t.Fatalf("message without text, time or id: %+v", m)
			}
		}
		_ = c.Describe()
	})
}
