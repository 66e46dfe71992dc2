package chatexport

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// whatsappLine matches the first line of a message in both styles:
//
//	Android: 31/12/2023, 21:41 - Anna: text     12/31/23, 9:41 PM - Anna: text
//	iOS:     [31/12/2023, 21:41:05] Anna: text  [12/31/23, 9:41:05 PM] Anna: text
//
// with the date separated by /, . or - (German "31.12.23"), an optional
// comma, a 12- or 24-hour time with optional seconds, and AM/PM (any case,
// dotted, after a space, a no-break or a narrow no-break space).
var whatsappLine = regexp.MustCompile(`^\[?(\d{1,4})[./-](\d{1,2})[./-](\d{1,4}),? (\d{1,2})[:.](\d{2})(?:[:.](\d{2}))?(?:[ \x{00a0}\x{202f}]?([AaPp])\.?[Mm]\.?)?(?:\] | - )(.*)$`)

// marks are the invisible direction marks WhatsApp sprinkles in exports.
var marks = strings.NewReplacer("\u200e", "", "\u200f", "", "\u202a", "", "\u202b", "", "\u202c", "", "\u202d", "", "\u202e", "", "\ufeff", "")

type waLine struct {
	a, b, c       int // the date's three numbers as written
	hour, minute  int
	second        int
	pm, twelve    bool
	sender, text  string
	lineNo        int
	system        bool
	continuations []string
}

// ParseWhatsApp reads WhatsApp's "Export chat" text. Local times are read
// in loc (time.Local when nil). The date order (day/month or month/day) is
// found from the whole file: a number above 12 settles it; a 12-hour clock
// with no such number means month/day (the US style).
func ParseWhatsApp(text string, loc *time.Location) (Chat, error) {
	return ParseWhatsAppReader(context.Background(), strings.NewReader(text), loc)
}

// maxLine caps one line of a WhatsApp export (a message's line, or one of
// its continuation lines).
const maxLine = 1 << 20

// ParseWhatsAppReader is ParseWhatsApp reading r line by line: more than
// MaxMessages messages, or a line over 1 MiB, stop it; memory holds the
// messages, not the file. It stops with ctx's error when ctx ends.
func ParseWhatsAppReader(ctx context.Context, r io.Reader, loc *time.Location) (Chat, error) {
	if loc == nil {
		loc = time.Local
	}
	var lines []*waLine
	var last *waLine
	dayFirst, monthFirst, yearFirst, twelve := false, false, false, false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for i := 0; sc.Scan(); i++ {
		if i%65536 == 65535 {
			if err := ctx.Err(); err != nil {
				return Chat{}, err
			}
		}
		line := strings.TrimRight(marks.Replace(sc.Text()), "\r")
		m := whatsappLine.FindStringSubmatch(line)
		if m == nil {
			if last != nil {
				last.continuations = append(last.continuations, line)
			}
			continue
		}
		l := &waLine{lineNo: i + 1}
		l.a, _ = strconv.Atoi(m[1])
		l.b, _ = strconv.Atoi(m[2])
		l.c, _ = strconv.Atoi(m[3])
		l.hour, _ = strconv.Atoi(m[4])
		l.minute, _ = strconv.Atoi(m[5])
		l.second, _ = strconv.Atoi(m[6])
		if m[7] != "" {
			l.twelve, l.pm = true, m[7] == "p" || m[7] == "P"
			twelve = true
		}
		rest := m[8]
		if name, msg, ok := strings.Cut(rest, ": "); ok && name != "" && len(name) <= 100 && !strings.Contains(name, "\n") {
			l.sender, l.text = strings.TrimSpace(name), msg
		} else {
			l.system = true
		}
		switch {
		case len(m[1]) == 4:
			yearFirst = true
		case l.a > 12:
			dayFirst = true
		case l.b > 12:
			monthFirst = true
		}
		if len(lines) >= MaxMessages {
			return Chat{}, fmt.Errorf("the export holds more than %d messages; at most %d are imported at once", MaxMessages, MaxMessages)
		}
		lines = append(lines, l)
		last = l
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return Chat{}, fmt.Errorf("%w: a line is over %d KiB", ErrNotExport, maxLine>>10)
	} else if err != nil {
		return Chat{}, fmt.Errorf("reading the chat text: %w", err)
	}
	if len(lines) == 0 {
		return Chat{}, fmt.Errorf("%w: no line looks like a WhatsApp message (\"31/12/2023, 21:41 - Name: text\")", ErrNotExport)
	}
	if dayFirst && monthFirst {
		return Chat{}, fmt.Errorf("%w: the dates mix day/month and month/day orders", ErrNotExport)
	}
	usMonthFirst := monthFirst || (!dayFirst && twelve)
	out := Chat{Source: "whatsapp"}
	for _, l := range lines {
		if l.system {
			out.Skipped++
			continue
		}
		t, ok := l.time(yearFirst, usMonthFirst, loc)
		text := strings.TrimSpace(strings.Join(append([]string{l.text}, l.continuations...), "\n"))
		text = mediaNote(text)
		if !ok || text == "" {
			out.Skipped++
			continue
		}
		out.Messages = append(out.Messages, Message{ID: "wa" + strconv.Itoa(l.lineNo), Sender: l.sender, Text: text, Time: t})
	}
	return out, nil
}

func (l *waLine) time(yearFirst, monthFirst bool, loc *time.Location) (time.Time, bool) {
	var y, mo, d int
	switch {
	case yearFirst:
		y, mo, d = l.a, l.b, l.c
	case monthFirst:
		mo, d, y = l.a, l.b, l.c
	default:
		d, mo, y = l.a, l.b, l.c
	}
	if y < 100 {
		y += 2000
	}
	h := l.hour
	if l.twelve {
		if h < 1 || h > 12 {
			return time.Time{}, false
		}
		h %= 12
		if l.pm {
			h += 12
		}
	}
	if mo < 1 || mo > 12 || d < 1 || d > 31 || y < 2009 || y > 2200 || h > 23 || l.minute > 59 || l.second > 59 {
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(mo), d, h, l.minute, l.second, 0, loc)
	if t.Day() != d {
		return time.Time{}, false // 31 February
	}
	return t.UTC(), true
}

// mediaNote turns WhatsApp's media placeholders into short notes and drops
// deleted messages.
func mediaNote(text string) string {
	low := strings.ToLower(text)
	switch {
	case low == "<media omitted>" || low == "<médias omis>" || low == "<medien ausgeschlossen>":
		return "[media]"
	case strings.HasSuffix(low, " omitted") && len(strings.Fields(low)) <= 3:
		return "[" + strings.TrimSuffix(low, " omitted") + "]"
	case strings.HasPrefix(low, "<attached: "):
		return "[attachment]"
	case low == "this message was deleted" || low == "you deleted this message" || low == "null":
		return ""
	}
	return text
}

// Bounds of the chat text read from a zip: its size, and how many times
// its compressed size it may be (chat text compresses about 5–15 times; a
// decompression bomb, hundreds of times).
const (
	maxZipText  = 256 << 20
	maxZipRatio = 100
)

// ParseWhatsAppZip reads the chat text inside WhatsApp's export zip
// ("_chat.txt" on iPhone, "WhatsApp Chat with ….txt" on Android); media
// files in it are ignored.
func ParseWhatsAppZip(data []byte, loc *time.Location) (Chat, error) {
	return ReadWhatsAppZip(context.Background(), bytes.NewReader(data), int64(len(data)), loc)
}

// ReadWhatsAppZip is ParseWhatsAppZip reading the size bytes of r. The
// chat text's declared size and compression ratio are checked before it
// is inflated, and the bytes inflated as they come (maxZipText,
// maxZipRatio); it is parsed as a stream.
func ReadWhatsAppZip(ctx context.Context, r io.ReaderAt, size int64, loc *time.Location) (Chat, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return Chat{}, fmt.Errorf("%w: the zip does not open (%v)", ErrNotExport, err)
	}
	var best *zip.File
	for _, f := range zr.File {
		name := strings.ToLower(f.Name[strings.LastIndexByte(f.Name, '/')+1:])
		if !strings.HasSuffix(name, ".txt") {
			continue
		}
		if name == "_chat.txt" || strings.HasPrefix(name, "whatsapp") || best == nil {
			best = f
		}
	}
	if best == nil {
		return Chat{}, fmt.Errorf("%w: the zip holds no chat text (.txt)", ErrNotExport)
	}
	if best.UncompressedSize64 > 1<<20 && best.UncompressedSize64 > maxZipRatio*best.CompressedSize64 {
		return Chat{}, fmt.Errorf("the chat text in the zip inflates %d times (%d KiB to %d MiB): it is not an export",
			best.UncompressedSize64/max(best.CompressedSize64, 1), best.CompressedSize64>>10, best.UncompressedSize64>>20)
	}
	if best.UncompressedSize64 > maxZipText {
		return Chat{}, fmt.Errorf("the chat text in the zip is over %d MiB (%d MiB)", maxZipText>>20, best.UncompressedSize64>>20)
	}
	rc, err := best.Open() // archive/zip fails a read past the declared size
	if err != nil {
		return Chat{}, fmt.Errorf("reading %s in the zip: %w", best.Name, err)
	}
	defer rc.Close()
	c, err := ParseWhatsAppReader(ctx, io.LimitReader(rc, int64(best.UncompressedSize64)), loc)
	if err != nil {
		return Chat{}, err
	}
	c.Name = strings.TrimSuffix(strings.TrimPrefix(best.Name, "WhatsApp Chat with "), ".txt")
	if c.Name == "_chat" {
		c.Name = ""
	}
	return c, nil
}
