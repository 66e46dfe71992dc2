package assemble_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

var group = pipeline.Key{Channel: "telegram", Chat: "-1001"}

// line is one archived group message: who, when, what.
type line struct {
	who  string
	at   time.Time
	text string
}

// archivedGroup opens a store (each backend) holding lines as the archived
// messages of a group conversation, imported as `bot import` does.
func archivedGroup(t *testing.T, storage memory.Storage, lines []line) *memory.Store {
	t.Helper()
	ctx := context.Background()
	st, err := memory.Open(ctx, memory.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	set := memory.Settings{Owner: group.Owner(), MemoryEnabled: true, Storage: storage, Threshold: 10}
	conv := memory.ConversationData{Key: group.String()}
	for i, l := range lines {
		conv.Messages = append(conv.Messages, memory.Message{Role: memory.RoleUser, SenderID: strings.ToLower(l.who), SenderName: l.who,
			PlatformID: fmt.Sprint(i + 1), Text: l.text, Time: l.at, Tokens: words{}.Count(l.text)})
	}
	if _, err := st.Import(ctx, memory.NewExport(memory.OwnerData{Owner: group.Owner(), Settings: &set, Conversations: []memory.ConversationData{conv}})); err != nil {
		t.Fatal(err)
	}
	return st
}

func at(day, hour, min int) time.Time { return time.Date(2026, 3, day, hour, min, 0, 0, time.UTC) }

// texts is every snippet's messages as "Sender: text".
func texts(snips []assemble.Snippet) [][]string {
	var out [][]string
	for _, s := range snips {
		var b []string
		for _, m := range s.Messages {
			b = append(b, m.Sender+": "+m.Text)
		}
		out = append(out, b)
	}
	return out
}

func eachBackend(t *testing.T, fn func(t *testing.T, storage memory.Storage)) {
	for _, s := range []memory.Storage{memory.StorageSQLite, memory.StorageJSON} {
		t.Run(string(s), func(t *testing.T) { fn(t, s) })
	}
}

// TestSnippetsAreExchanges: a question finds the message that matches it
// and brings the reply that answers it (which shares no word with the
// question), in one block with the date and both speakers' names; a message
// of the next day is not part of that exchange.
func TestSnippetsAreExchanges(t *testing.T) {
	eachBackend(t, func(t *testing.T, storage memory.Storage) {
		st := archivedGroup(t, storage, []line{
			{"Anna", at(2, 9, 0), "good morning all"},
			{"Anna", at(3, 18, 0), "Ben, what are you bringing to the housewarming on Saturday?"},
			{"Ben", at(3, 18, 4), "Lasagna, from my grandmother's recipe"},
			{"Anna", at(3, 18, 5), "perfect, see you at the housewarming"},
			{"Ben", at(3, 18, 30), "good night"},
			{"Anna", at(4, 10, 0), "anyone seen my umbrella"},
		})
		p, err := assemble.New(st, words{}, assemble.DefaultBudget).Build(context.Background(),
			assemble.Request{Key: group, Text: "what is Ben bringing to the housewarming?", Memory: true, Now: at(20, 12, 0)})
		if err != nil {
			t.Fatal(err)
		}
		// The two hits' windows overlap: one block, from the message
		// before the first hit to the one after the second, within the
		// evening (not the morning of the day before, nor the next day).
		got := texts(p.Breakdown.Snippets)
		want := []string{"Anna: Ben, what are you bringing to the housewarming on Saturday?", "Ben: Lasagna, from my grandmother's recipe",
			"Anna: perfect, see you at the housewarming", "Ben: good night"}
		if len(got) != 1 || strings.Join(got[0], "|") != strings.Join(want, "|") {
			t.Fatalf("snippets %q, want one block: %q", got, want)
		}
		block := p.Messages[0].Content
		if !strings.Contains(block, "[Tue 2026-03-03] Anna: Ben, what are you bringing to the housewarming on Saturday?\nBen: Lasagna, from my grandmother's recipe\nAnna: perfect") {
			t.Errorf("the prompt does not show the exchange as one block with its date and names:\n%s", block)
		}
	})
}

// TestSnippetsReplyTwoMessagesOn: the answer to a question often comes a
// message later than the reply right after it ("hold on, let me look");
// the snippet reaches it, though it shares no word with the question.
func TestSnippetsReplyTwoMessagesOn(t *testing.T) {
	eachBackend(t, func(t *testing.T, storage memory.Storage) {
		st := archivedGroup(t, storage, []line{
			{"Anna", at(2, 9, 0), "good morning all"},
			{"Anna", at(3, 18, 0), "Ben, what did the vet say about Rex's leg?"},
			{"Ben", at(3, 18, 2), "hold on, finding the note"},
			{"Ben", at(3, 18, 6), "a sprain: two weeks of rest, no long walks"},
			{"Anna", at(3, 18, 7), "poor thing"},
			{"Anna", at(5, 10, 0), "anyone seen my umbrella"},
		})
		p, err := assemble.New(st, words{}, assemble.DefaultBudget).Build(context.Background(),
			assemble.Request{Key: group, Text: "what did the vet say about Rex's leg?", Memory: true, Now: at(20, 12, 0)})
		if err != nil {
			t.Fatal(err)
		}
		if block := p.Messages[0].Content; !strings.Contains(block, "Rex's leg?\nBen: hold on, finding the note\na sprain: two weeks of rest") {
			t.Errorf("the prompt does not carry the vet's answer after the question:\n%s", block)
		}
	})
}

// TestSnippetsFillTheBudget: with many matching exchanges the snippets
// fill their budget (no cap of 20 hits): every matching message first, then
// the messages around them, newest first, while they fit.
func TestSnippetsFillTheBudget(t *testing.T) {
	eachBackend(t, func(t *testing.T, storage memory.Storage) {
		var lines []line
		for d := range 28 {
			lines = append(lines,
				line{"Anna", at(1, 0, 0).AddDate(0, 0, d).Add(9 * time.Hour), "anything new?"},
				line{"Ben", at(1, 0, 0).AddDate(0, 0, d).Add(9*time.Hour + time.Minute), fmt.Sprintf("garden day %d: planted tomatoes", d)},
				line{"Anna", at(1, 0, 0).AddDate(0, 0, d).Add(9*time.Hour + 2*time.Minute), "nice"},
			)
		}
		st := archivedGroup(t, storage, lines)
		b := assemble.DefaultBudget
		b.Snippets = 300 // 28 garden messages with their dates, and some context
		p, err := assemble.New(st, words{}, b).Build(context.Background(), assemble.Request{Key: group, Text: "garden", Memory: true, Now: at(30, 0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		bd := p.Breakdown
		hits, used := 0, 0
		for _, s := range bd.Snippets {
			used += s.Tokens
			for _, m := range s.Messages {
				if m.Hit {
					hits++
				}
			}
		}
		if hits != 28 || used > b.Snippets || used < b.Snippets-14 {
			t.Errorf("%d hits in %d blocks, %d of %d tokens: want all 28 garden messages filling the budget", hits, len(bd.Snippets), used, b.Snippets)
		}
		if s := bd.Snippets[0]; len(s.Messages) != 3 || s.Messages[0].Hit || !s.Messages[1].Hit || s.Messages[2].Hit {
			t.Errorf("newest block %q: want the garden message with the question before and the answer after", texts([]assemble.Snippet{s}))
		}
	})
}

// TestSnippetsSkipRecentTurns: a hit's neighbour that is already a recent
// turn of the prompt is not repeated in the snippet.
func TestSnippetsSkipRecentTurns(t *testing.T) {
	ctx := context.Background()
	st := archivedGroup(t, memory.StorageSQLite, []line{
		{"Anna", at(3, 18, 0), "the housewarming is on Saturday"},
	})
	recent := memory.Message{Key: group, Role: memory.RoleUser, SenderID: "ben", SenderName: "Ben", PlatformID: "r1", Text: "I will bring lasagna", Time: at(3, 18, 1), Tokens: 4}
	if err := st.Append(ctx, recent); err != nil {
		t.Fatal(err)
	}
	p, err := assemble.New(st, words{}, assemble.DefaultBudget).Build(ctx, assemble.Request{Key: group, Text: "housewarming", Memory: true, Now: at(3, 18, 2)})
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(p.Breakdown.Snippets); len(got) != 1 || len(got[0]) != 1 || got[0][0] != "Anna: the housewarming is on Saturday" {
		t.Errorf("snippets %q: want Anna's message alone (Ben's reply is a recent turn)", got)
	}
}

// TestSnippetsNamesAndTime: "what did Anna say about …" ranks Anna's
// message above Ben's on the same words, and a question naming a month
// ranks that month's exchange first.
func TestSnippetsNamesAndTime(t *testing.T) {
	eachBackend(t, func(t *testing.T, storage memory.Storage) {
		lines := []line{
			{"Anna", time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC), "the dentist said my tooth is fine and I should floss more often"},
			{"Ben", time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC), "the dentist said my tooth was bad"},
		}
		for d := range 20 { // other days: unrelated talk, both speaking as often
			lines = append(lines, line{[]string{"Anna", "Ben"}[d%2], time.Date(2026, 2, 1+d, 9, 0, 0, 0, time.UTC), fmt.Sprintf("weather report %d", d)})
		}
		st := archivedGroup(t, storage, lines)
		asm := assemble.New(st, words{}, assemble.DefaultBudget, assemble.InLocation(time.UTC))
		first := func(q string) string {
			t.Helper()
			p, err := asm.Build(context.Background(), assemble.Request{Key: group, Text: q, Memory: true, Now: time.Date(2026, 5, 20, 12, 0, 0, 0, time.UTC)})
			if err != nil {
				t.Fatal(err)
			}
			got := texts(p.Breakdown.Snippets)
			if len(got) == 0 {
				t.Fatalf("%q: no snippets", q)
			}
			return got[0][0]
		}
		// Without names or time the shorter message ranks first.
		if got := first("what did the dentist say"); got != "Ben: the dentist said my tooth was bad" {
			t.Errorf("plain question: first %q", got)
		}
		if got := first("what did Anna say about the dentist"); got != "Anna: the dentist said my tooth is fine and I should floss more often" {
			t.Errorf("naming Anna: first %q", got)
		}
		if got := first("what did the dentist say in January"); got != "Anna: the dentist said my tooth is fine and I should floss more often" {
			t.Errorf("naming January: first %q", got)
		}
		if got := first("what did the dentist say in March"); got != "Ben: the dentist said my tooth was bad" {
			t.Errorf("naming March: first %q", got)
		}
	})
}

// TestSnippetsTopicalDayFirst: of messages that match a question equally,
// one from the day the conversation was about it (its words come up again
// that day) ranks above one from a day where they come up once; the most
// recent would otherwise win the tie.
func TestSnippetsTopicalDayFirst(t *testing.T) {
	eachBackend(t, func(t *testing.T, storage memory.Storage) {
		lines := []line{
			{"Ben", at(5, 9, 0), "the garden fence is painted"},
			{"Anna", at(5, 13, 0), "the garden gate is painted"},
			{"Ben", at(8, 9, 0), "the garden shed is painted"},
		}
		for d := range 10 { // other days: unrelated talk
			lines = append(lines, line{[]string{"Anna", "Ben"}[d%2], at(10+d, 9, 0), fmt.Sprintf("weather report %d", d)})
		}
		st := archivedGroup(t, storage, lines)
		asm := assemble.New(st, words{}, assemble.DefaultBudget, assemble.InLocation(time.UTC))
		snips, err := asm.Search(context.Background(), group, "what about the garden?", 1000)
		if err != nil {
			t.Fatal(err)
		}
		got := texts(snips)
		// The 5th's two exchanges are one block (one day).
		if len(got) != 2 || len(got[0]) != 2 || got[1][0] != "Ben: the garden shed is painted" {
			t.Errorf("snippets %q: want the two of the 5th (the garden day) before the shed of the 8th", got)
		}
	})
}

// TestSnippetsDayAfterADate: a question naming a date finds what was told
// about it the day after ("yesterday…") before an equal match of another
// day.
func TestSnippetsDayAfterADate(t *testing.T) {
	eachBackend(t, func(t *testing.T, storage memory.Storage) {
		lines := []line{
			{"Anna", at(3, 9, 0), "the concert was loud"},
			{"Ben", at(6, 10, 0), "yesterday the concert was amazing"},
			{"Anna", at(12, 9, 0), "the concert sold out"},
		}
		st := archivedGroup(t, storage, lines)
		asm := assemble.New(st, words{}, assemble.DefaultBudget, assemble.InLocation(time.UTC))
		for _, q := range []string{"how was the concert on 5 March 2026?", "how was the concert on 05.03.2026?"} {
			snips, err := asm.Search(context.Background(), group, q, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if got := texts(snips); len(got) == 0 || got[0][0] != "Ben: yesterday the concert was amazing" {
				t.Errorf("%q: snippets %q, want Ben's message of the 6th first", q, got)
			}
		}
	})
}

// TestSnippetsLongDocument: a long document in the archive is found by a
// question about one of its parts, and the snippet carries that part
// within the budget (whole, the document would not fit and be dropped).
func TestSnippetsLongDocument(t *testing.T) {
	eachBackend(t, func(t *testing.T, storage memory.Storage) {
		var doc strings.Builder
		doc.WriteString("📄 lease.pdf (12 pages):\n")
		for i := range 120 {
			if i == 77 {
				doc.WriteString("Termination: either party may end this lease with ninety days of written notice.\n\n")
				continue
			}
			fmt.Fprintf(&doc, "Clause %d. The tenant keeps the premises clean and tidy, and the landlord repairs wear item %d within a month.\n\n", i, i)
		}
		st := archivedGroup(t, storage, []line{
			{"Anna", at(3, 10, 0), doc.String()},
			{"Ben", at(3, 10, 5), "thanks, I will read it tonight"},
			{"Anna", at(4, 9, 0), "the heating works again"},
		})
		b := assemble.DefaultBudget
		b.Snippets = 600
		p, err := assemble.New(st, words{}, b).Build(context.Background(), assemble.Request{Key: group, Text: "what does the lease say about termination notice?", Memory: true, Now: at(30, 0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		used, found := 0, false
		for _, s := range p.Breakdown.Snippets {
			used += s.Tokens
			for _, m := range s.Messages {
				found = found || strings.Contains(m.Text, "ninety days of written notice")
			}
		}
		if !found || used > b.Snippets {
			t.Errorf("snippets %q (%d of %d tokens): want the termination clause within the budget", texts(p.Breakdown.Snippets), used, b.Snippets)
		}
	})
}

// searchCounter is the store as an assembler's Source, counting searches;
// it hides the store's SearchWithin (a source that can only search).
type searchCounter struct {
	assemble.Source
	searches int
}

func (c *searchCounter) Search(ctx context.Context, key pipeline.Key, q memory.Query) ([]memory.Hit, error) {
	c.searches++
	return c.Source.Search(ctx, key, q)
}

// withinCounter is a searchCounter offering the store's SearchWithin.
type withinCounter struct {
	*searchCounter
	st     *memory.Store
	within int
}

func (c *withinCounter) SearchWithin(ctx context.Context, key pipeline.Key, q memory.Query) ([]memory.Hit, []memory.Hit, error) {
	c.within++
	return c.st.SearchWithin(ctx, key, q)
}

// TestTimedQuestionSearchesOnce: a question naming a time ("in January")
// costs the turn one search of the archive, not two (its time, then the
// whole archive), and the snippets are those of the two searches.
func TestTimedQuestionSearchesOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, storage memory.Storage) {
		lines := []line{
			{"Anna", time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC), "the dentist said my tooth is fine and I should floss more often"},
			{"Ben", time.Date(2026, 1, 10, 9, 5, 0, 0, time.UTC), "good, mine said the same"},
			{"Ben", time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC), "the dentist said my tooth was bad"},
		}
		for d := range 20 {
			lines = append(lines, line{[]string{"Anna", "Ben"}[d%2], time.Date(2026, 2, 1+d, 9, 0, 0, 0, time.UTC), fmt.Sprintf("dentist weather report %d", d)})
		}
		st := archivedGroup(t, storage, lines)
		req := assemble.Request{Key: group, Text: "what did the dentist say in January", Memory: true, Now: time.Date(2026, 5, 20, 12, 0, 0, 0, time.UTC)}
		build := func(src assemble.Source) assemble.Prompt {
			t.Helper()
			p, err := assemble.New(src, words{}, assemble.DefaultBudget, assemble.InLocation(time.UTC)).Build(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		twice := &searchCounter{Source: st}
		want := build(twice)
		if twice.searches != 2 {
			t.Fatalf("a source without SearchWithin searched %d times; want 2 (the time, then everything)", twice.searches)
		}
		once := &withinCounter{searchCounter: &searchCounter{Source: st}, st: st}
		got := build(once)
		if once.within != 1 || once.searches != 0 {
			t.Errorf("the store was searched %d times and SearchWithin called %d times; want one SearchWithin", once.searches, once.within)
		}
		if g, w := fmt.Sprint(got.Breakdown.Snippets), fmt.Sprint(want.Breakdown.Snippets); g != w {
			t.Errorf("snippets from one search:\n%s\nfrom two:\n%s", g, w)
		}
		if len(got.Breakdown.Snippets) < 2 || !strings.HasPrefix(texts(got.Breakdown.Snippets)[0][0], "Anna: the dentist said my tooth is fine") {
			t.Errorf("snippets %q; want January's exchange first, then the rest of the archive", texts(got.Breakdown.Snippets))
		}
	})
}

// TestSnippetsOneBlockADay: two exchanges of one day that a question finds
// are shown as one block under one date header, a "…" line between them,
// and a run of messages by one speaker shows the name once: so a budget
// too small for the two exchanges with a header each holds both.
func TestSnippetsOneBlockADay(t *testing.T) {
	eachBackend(t, func(t *testing.T, storage memory.Storage) {
		st := archivedGroup(t, storage, []line{
			{"Anna", at(3, 9, 0), "the garden fence is painted"},
			{"Anna", at(3, 9, 1), "blue, like the sky"},
			{"Ben", at(3, 18, 0), "the garden gate is painted too"},
			{"Anna", at(3, 18, 5), "great"},
			{"Ben", at(9, 10, 0), "weather report"},
		})
		b := assemble.DefaultBudget
		b.Snippets = 22 // words: 12 and 11 with a header each, 22 under one
		p, err := assemble.New(st, words{}, b).Build(context.Background(), assemble.Request{Key: group, Text: "garden", Memory: true, Now: at(10, 0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		snips := p.Breakdown.Snippets
		want := "[Tue 2026-03-03] Anna: the garden fence is painted\nblue, like the sky\n…\nBen: the garden gate is painted too\nAnna: great"
		if len(snips) != 1 || assemble.FormatSnippet(snips[0], 0) != want {
			t.Fatalf("snippets %q, want one block:\n%s", texts(snips), want)
		}
		if snips[0].Tokens != 22 {
			t.Errorf("the block counts %d tokens, want 22", snips[0].Tokens)
		}
		var prompt strings.Builder
		for _, m := range p.Messages {
			prompt.WriteString(m.Content + "\n")
		}
		if !strings.Contains(prompt.String(), want) {
			t.Errorf("the prompt does not show the block:\n%s", prompt.String())
		}
	})
}

// holidayLines are a holiday's talk, and days later the answer to "what
// went missing on the Portugal holiday?" in other words.
func holidayLines() []line {
	return []line{
		{"Anna", at(2, 18, 0), "we are back from the holiday in Portugal"},
		{"Ben", at(2, 18, 2), "welcome back! how was Lisbon?"},
		{"Ben", at(5, 20, 0), "the holiday photos from Portugal are online"},
		{"Anna", at(5, 20, 3), "the ones from Lisbon are my favourite"},
		{"Anna", at(9, 12, 0), "my sunglasses stayed on the tram in Lisbon, gone forever"},
	}
}

// TestSnippetsFeedback: a question whose answer shares no word with it
// ("what went missing on the Portugal holiday?" — "my sunglasses stayed on
// the tram in Lisbon") finds it through the talk its words came up in: the
// exchanges about the holiday keep naming Lisbon, so Lisbon is searched too
// (pseudo-relevance feedback). The answer was written days later, next to
// no message that matches.
func TestSnippetsFeedback(t *testing.T) {
	lines := holidayLines()
	topics := []string{"the printer jammed again", "football practice moved to Thursday", "the cat knocked over a plant",
		"new bakery opened on the corner", "my phone battery died", "the concert tickets sold out", "rain all week",
		"the neighbours painted their fence", "dinner was pasta", "the train was late"}
	for d := range 40 {
		lines = append(lines, line{[]string{"Anna", "Ben"}[d%2], at(1, 0, 0).AddDate(0, 0, 10+d/2).Add(time.Duration(8+5*(d%2)) * time.Hour),
			fmt.Sprintf("%s (%d)", topics[d%len(topics)], d)})
	}
	st := archivedGroup(t, memory.StorageSQLite, lines)
	found := func(opts ...assemble.Option) bool {
		t.Helper()
		p, err := assemble.New(st, words{}, assemble.DefaultBudget, opts...).Build(context.Background(),
			assemble.Request{Key: group, Text: "what went missing on the Portugal holiday?", Memory: true, Now: at(30, 12, 0)})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Breakdown.Snippets {
			for _, m := range s.Messages {
				if strings.Contains(m.Text, "sunglasses") {
					return true
				}
			}
		}
		t.Logf("snippets %q", texts(p.Breakdown.Snippets))
		return false
	}
	if !found(assemble.WithFeedback()) {
		t.Errorf("with feedback: want the message about the sunglasses lost in Lisbon")
	}
	if found() {
		t.Errorf("without feedback the answer was found: the test shows nothing")
	}
}

// readCounter is a Source that counts the searches and every hit whose
// neighbours are read (Around, AroundReach).
type readCounter struct {
	*memory.Store
	searches int
	asked    map[int64]int
}

func (c *readCounter) Search(ctx context.Context, key pipeline.Key, q memory.Query) ([]memory.Hit, error) {
	c.searches++
	return c.Store.Search(ctx, key, q)
}

func (c *readCounter) Around(ctx context.Context, key pipeline.Key, ids []int64) ([]memory.Message, error) {
	for _, id := range ids {
		c.asked[id]++
	}
	return c.Store.Around(ctx, key, ids)
}

func (c *readCounter) AroundReach(ctx context.Context, key pipeline.Key, ids []int64, reach int) ([]memory.Message, error) {
	for _, id := range ids {
		c.asked[id]++
	}
	return c.Store.AroundReach(ctx, key, ids, reach)
}

// TestFeedbackReadsOnce: with feedback a turn reads the messages around
// each hit once (feedback's best hits' exchanges are the snippets' own
// read), and searches twice; a long message (more words than feedback
// adds) is searched once, as it is: it says enough on its own.
func TestFeedbackReadsOnce(t *testing.T) {
	lines := holidayLines()
	for d := range 20 { // fewer than a search asks for: one pass
		lines = append(lines, line{[]string{"Anna", "Ben"}[d%2], at(12, 8, d), fmt.Sprintf("holiday plans for the garden, printer, bakery and concert, round %d", d)})
	}
	st := archivedGroup(t, memory.StorageSQLite, lines)
	for _, c := range []struct {
		question string
		searches int
	}{
		{"what went missing on the Portugal holiday?", 2},
		{"what went missing on the Portugal holiday with the garden printer bakery concert tickets tram ride photos online?", 1},
	} {
		rc := &readCounter{Store: st, asked: map[int64]int{}}
		p, err := assemble.New(rc, words{}, assemble.DefaultBudget, assemble.WithFeedback()).Build(context.Background(),
			assemble.Request{Key: group, Text: c.question, Memory: true, Now: at(30, 12, 0)})
		if err != nil {
			t.Fatal(err)
		}
		if rc.searches != c.searches {
			t.Errorf("%q: %d searches, want %d", c.question, rc.searches, c.searches)
		}
		if len(rc.asked) == 0 || len(p.Breakdown.Snippets) == 0 {
			t.Fatalf("%q: no neighbours read, snippets %q", c.question, texts(p.Breakdown.Snippets))
		}
		for id, n := range rc.asked {
			if n > 1 {
				t.Errorf("%q: the neighbours of message %d read %d times", c.question, id, n)
			}
		}
	}
}
