package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// The conformance suite: every Backend must pass it unchanged. It checks the
// contract of each method as a user of the bot would notice it.

func cfOpenSQLite(t testing.TB) Backend {
	t.Helper()
	s, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "recall.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func cfOpenJSON(t testing.TB) Backend {
	t.Helper()
	j, err := OpenJSON(filepath.Join(t.TempDir(), "json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func TestConformanceSQLite(t *testing.T) {
	runConformance(t, func(t *testing.T) Backend { return cfOpenSQLite(t) })
}

func TestConformanceJSON(t *testing.T) {
	runConformance(t, func(t *testing.T) Backend { return cfOpenJSON(t) })
}

// TestConformancePostgres needs RECALL_TEST_POSTGRES_URL (see postgres_test.go).
func TestConformancePostgres(t *testing.T) {
	pgTestURL(t) // skips without a server
	runConformance(t, func(t *testing.T) Backend { return cfOpenPostgres(t) })
}

// cfOtherKind opens a fresh backend of the other implementation.
func cfOtherKind(t *testing.T, b Backend) Backend {
	if _, ok := b.(*SQLite); ok {
		return cfOpenJSON(t)
	}
	return cfOpenSQLite(t)
}

var (
	cfCtx = context.Background()
	// cfT0 has nanoseconds and a zone: stores keep milliseconds, in UTC.
	cfT0 = time.Date(2024, 3, 1, 10, 0, 0, 123456789, time.FixedZone("CET", 3600))
)

func cfKey(channel, chat string) pipeline.Key { return pipeline.Key{Channel: channel, Chat: chat} }

func cfUser(k pipeline.Key, pid, text string, at time.Time) Message {
	return Message{Key: k, Role: RoleUser, SenderID: "u", SenderName: "Alice", PlatformID: pid, Text: text, Time: at}
}

func cfBot(k pipeline.Key, replyTo, text string, at time.Time) Message {
	return Message{Key: k, Role: RoleAssistant, ReplyTo: replyTo, Text: text, Time: at}
}

func cfAppend(t testing.TB, b Backend, msgs ...Message) int {
	t.Helper()
	n, err := b.Append(cfCtx, msgs)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return n
}

func cfActive(t *testing.T, b Backend, k pipeline.Key) []Message {
	t.Helper()
	ms, err := b.Active(cfCtx, k)
	if err != nil {
		t.Fatalf("Active: %v", err)
	}
	return ms
}

func cfStatus(t *testing.T, b Backend, k pipeline.Key) Status {
	t.Helper()
	st, err := b.Status(cfCtx, k)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	return st
}

func cfSummaries(t *testing.T, b Backend, k pipeline.Key, activeOnly bool) []Summary {
	t.Helper()
	s, err := b.Summaries(cfCtx, k, activeOnly)
	if err != nil {
		t.Fatalf("Summaries: %v", err)
	}
	return s
}

func cfArchive(t *testing.T, b Backend, k pipeline.Key, cfIDs []int64, text string, created time.Time, turns int) Summary {
	t.Helper()
	s, err := b.Archive(cfCtx, k, cfIDs, Summary{Text: text, Created: created}, turns)
	if err != nil {
		t.Fatalf("Archive: %v", err)
	}
	return s
}

func cfFold(t *testing.T, b Backend, k pipeline.Key, cfIDs []int64, level int, text string, created time.Time) Summary {
	t.Helper()
	s, err := b.Fold(cfCtx, k, cfIDs, Summary{Level: level, Text: text, Created: created})
	if err != nil {
		t.Fatalf("Fold: %v", err)
	}
	return s
}

func cfSearch(t *testing.T, b Backend, k pipeline.Key, q Query) []Hit {
	t.Helper()
	hits, err := b.Search(cfCtx, k, q)
	if err != nil {
		t.Fatalf("Search(%q): %v", q.Text, err)
	}
	return hits
}

func cfIDs(msgs []Message) []int64 {
	var out []int64
	for _, m := range msgs {
		out = append(out, m.ID)
	}
	return out
}

func cfTexts(msgs []Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return out
}

func cfHitTexts(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Message.Text)
	}
	return out
}

func runConformance(t *testing.T, open func(t *testing.T) Backend) {
	t.Run("LongWords", func(t *testing.T) { cfLongWords(t, open) })
	t.Run("HugeMessagesAreCut", func(t *testing.T) { cfHugeMessages(t, open) })
	t.Run("AppendIsIdempotent", func(t *testing.T) {
		b := open(t)
		k := cfKey("telegram", "1")
		reply := cfBot(k, "1", "hi, how can I help?", cfT0.Add(time.Second))
		reply.PlatformID = "b1"
		msgs := []Message{
			cfUser(k, "1", "hello there", cfT0),
			reply,
			{Key: k, Role: RoleSystem, Text: "no platform id", Time: cfT0.Add(2 * time.Second), Tokens: 42},
			{Key: k, Role: RoleSystem, Text: "no platform id", Time: cfT0.Add(2 * time.Second), Tokens: 42},
			cfUser(k, "1", "a redelivery inside the batch", cfT0.Add(3*time.Second)),
		}
		if n := cfAppend(t, b, msgs...); n != 4 {
			t.Fatalf("first append stored %d, want 4", n)
		}
		// Redelivery: platform cfIDs are skipped, messages without one are not.
		if n := cfAppend(t, b, msgs...); n != 2 {
			t.Fatalf("redelivery stored %d, want 2 (only those without a platform id)", n)
		}
		got := cfActive(t, b, k)
		if len(got) != 6 {
			t.Fatalf("%d active messages, want 6", len(got))
		}
		for i, m := range got {
			if m.Key != k {
				t.Errorf("message %d: key %v", i, m.Key)
			}
			if i > 0 && m.ID <= got[i-1].ID {
				t.Errorf("cfIDs not increasing: %v", cfIDs(got))
			}
			if !m.Active || m.ChunkID != 0 {
				t.Errorf("new message %d not active: %+v", i, m)
			}
			if m.Time.Location() != time.UTC || m.Time.Nanosecond()%int(time.Millisecond) != 0 {
				t.Errorf("time %v not truncated to ms UTC", m.Time)
			}
		}
		if want := ms(cfT0); !got[0].Time.Equal(want) || got[0].Time != want {
			t.Errorf("time = %v, want %v", got[0].Time, want)
		}
		if got[0].Tokens != estimateTokens("hello there") || got[2].Tokens != 42 {
			t.Errorf("tokens = %d, %d", got[0].Tokens, got[2].Tokens)
		}
		if got[0].SenderName != "Alice" || got[0].SenderID != "u" || got[1].ReplyTo != "1" || got[1].Role != RoleAssistant {
			t.Errorf("fields lost: %+v %+v", got[0], got[1])
		}
		// A bad message fails the whole call and stores nothing.
		_, err := b.Append(cfCtx, []Message{cfUser(k, "9", "fine", cfT0), {Key: k, Role: "robot", Text: "x", Time: cfT0}})
		if err == nil {
			t.Fatal("append with an invalid role succeeded")
		}
		if _, err := b.Append(cfCtx, []Message{cfUser(pipeline.Key{Channel: "Bad!", Chat: "1"}, "1", "x", cfT0)}); err == nil {
			t.Fatal("append with an invalid key succeeded")
		}
		if st := cfStatus(t, b, k); st.Total != 6 {
			t.Fatalf("total %d after failed appends, want 6", st.Total)
		}
		if n := cfAppend(t, b); n != 0 {
			t.Fatalf("empty append stored %d", n)
		}
	})

	t.Run("AssistantRepliesCountTurns", func(t *testing.T) {
		b := open(t)
		k := cfKey("telegram", "1")
		cfAppend(t, b, cfUser(k, "1", "q1", cfT0), cfBot(k, "1", "a1", cfT0), cfUser(k, "2", "q2", cfT0), cfBot(k, "2", "a2", cfT0))
		if st := cfStatus(t, b, k); st.TurnsSinceSummary != 2 {
			t.Fatalf("turns %d, want 2", st.TurnsSinceSummary)
		}
		// Redelivered replies do not count again.
		a := cfBot(k, "2", "a2", cfT0)
		a.PlatformID = "b2"
		cfAppend(t, b, a)
		cfAppend(t, b, a)
		if st := cfStatus(t, b, k); st.TurnsSinceSummary != 3 {
			t.Fatalf("turns %d, want 3", st.TurnsSinceSummary)
		}
	})

	t.Run("Lookup", func(t *testing.T) {
		b := open(t)
		k, other := cfKey("telegram", "1"), cfKey("telegram", "2")
		cfAppend(t, b, cfUser(k, "u1", "question", cfT0))
		check := func(k pipeline.Key, pid string, wantStored, wantAnswered bool) {
			t.Helper()
			stored, answered, err := b.Lookup(cfCtx, k, pid)
			if err != nil || stored != wantStored || answered != wantAnswered {
				t.Errorf("Lookup(%v, %q) = %v, %v, %v; want %v, %v", k, pid, stored, answered, err, wantStored, wantAnswered)
			}
		}
		check(k, "u1", true, false)
		check(k, "nope", false, false)
		check(k, "", false, false)
		check(other, "u1", false, false)
		cfAppend(t, b, cfBot(k, "u1", "answer", cfT0))
		check(k, "u1", true, true)
		// A user message replying to u1 is not an answer.
		m := cfUser(k, "u2", "follow-up", cfT0)
		m.ReplyTo = "u1"
		cfAppend(t, b, m)
		check(k, "u2", true, false)
	})

	t.Run("Recent", func(t *testing.T) {
		b := open(t)
		k := cfKey("telegram", "1")
		var msgs []Message
		for i := range 5 {
			m := cfUser(k, fmt.Sprint(i), fmt.Sprintf("message %d", i), cfT0.Add(time.Duration(i)*time.Minute))
			m.Tokens = 10
			msgs = append(msgs, m)
		}
		cfAppend(t, b, msgs...)
		recent := func(limit, budget int) []string {
			t.Helper()
			got, err := b.Recent(cfCtx, k, limit, budget)
			if err != nil {
				t.Fatal(err)
			}
			return cfTexts(got)
		}
		if got := recent(2, 0); !slices.Equal(got, []string{"message 3", "message 4"}) {
			t.Errorf("Recent(2, 0) = %q", got)
		}
		if got := recent(0, 25); !slices.Equal(got, []string{"message 3", "message 4"}) {
			t.Errorf("Recent(0, 25) = %q", got)
		}
		if got := recent(3, 15); !slices.Equal(got, []string{"message 4"}) {
			t.Errorf("Recent(3, 15) = %q", got)
		}
		if got := recent(0, 5); got != nil {
			t.Errorf("Recent(0, 5) = %q, want nothing (the newest does not fit)", got)
		}
		if got := recent(0, 0); len(got) != 5 || got[0] != "message 0" {
			t.Errorf("Recent(0, 0) = %q", got)
		}
		act := cfActive(t, b, k)
		cfArchive(t, b, k, cfIDs(act[3:]), "s", cfT0, 0)
		if got := recent(2, 0); !slices.Equal(got, []string{"message 1", "message 2"}) {
			t.Errorf("Recent after archiving the newest = %q", got)
		}
		if got, err := b.Recent(cfCtx, cfKey("telegram", "404"), 0, 0); got != nil || err != nil {
			t.Errorf("Recent of an unknown conversation = %v, %v", got, err)
		}
	})

	t.Run("ArchiveAndSummaries", func(t *testing.T) {
		b := open(t)
		k := cfKey("telegram", "1")
		for i := range 3 {
			at := cfT0.Add(time.Duration(i) * time.Hour)
			cfAppend(t, b, cfUser(k, fmt.Sprint("u", i), fmt.Sprint("question ", i), at), cfBot(k, fmt.Sprint("u", i), fmt.Sprint("answer ", i), at.Add(time.Minute)))
		}
		act := cfActive(t, b, k)
		if st := cfStatus(t, b, k); st.TurnsSinceSummary != 3 || !st.LastSummary.IsZero() {
			t.Fatalf("status before: %+v", st)
		}
		created := cfT0.Add(10 * time.Hour)
		s1 := cfArchive(t, b, k, []int64{act[0].ID, act[1].ID, act[1].ID}, "first exchange", created, 2)
		if s1.ID == 0 || s1.Level != 1 || !slices.Equal(s1.Sources, []int64{1}) || !s1.Active || s1.Key != k {
			t.Fatalf("first summary: %+v", s1)
		}
		if !s1.From.Equal(act[0].Time) || !s1.To.Equal(act[1].Time) || !s1.Created.Equal(ms(created)) || s1.Tokens != estimateTokens("first exchange") {
			t.Fatalf("first summary range/created/tokens: %+v", s1)
		}
		st := cfStatus(t, b, k)
		if st.TurnsSinceSummary != 1 || !st.LastSummary.Equal(ms(created)) {
			t.Fatalf("turns %d, last %v after archiving with 2 seen of 3", st.TurnsSinceSummary, st.LastSummary)
		}
		s2 := cfArchive(t, b, k, []int64{act[2].ID, act[3].ID}, "second exchange", created.Add(time.Hour), 5)
		if !slices.Equal(s2.Sources, []int64{2}) || s2.ID <= s1.ID {
			t.Fatalf("second summary: %+v", s2)
		}
		st = cfStatus(t, b, k)
		want := Status{Total: 6, Active: 2, Archived: 4, ActiveByLevel: map[int]int{1: 2}, HighestLevel: 1, TurnsSinceSummary: 0, LastSummary: ms(created.Add(time.Hour))}
		if fmt.Sprint(st) != fmt.Sprint(want) {
			t.Fatalf("status %+v, want %+v", st, want)
		}
		if got := cfActive(t, b, k); !slices.Equal(cfIDs(got), cfIDs(act[4:])) {
			t.Fatalf("active after archiving: %v", cfIDs(got))
		}
		sums := cfSummaries(t, b, k, false)
		if len(sums) != 2 || sums[0].ID != s1.ID || sums[1].ID != s2.ID || sums[0].Key != k {
			t.Fatalf("summaries: %+v", sums)
		}
		if fmt.Sprint(sums[0]) != fmt.Sprint(s1) {
			t.Fatalf("stored summary %+v, returned %+v", sums[0], s1)
		}
		prov, err := b.Provenance(cfCtx, k, s1.ID)
		if err != nil || !slices.Equal(cfIDs(prov), cfIDs(act[:2])) {
			t.Fatalf("provenance of s1: %v, %v", cfIDs(prov), err)
		}
		for _, m := range prov {
			if m.Active || m.ChunkID != 1 {
				t.Fatalf("archived message: %+v", m)
			}
		}
		// Turns taken after the caller read the counter still count.
		cfAppend(t, b, cfBot(k, "", "late reply", cfT0.Add(5*time.Hour)))
		cfArchive(t, b, k, cfIDs(act[4:]), "third", created.Add(2*time.Hour), 0)
		if st := cfStatus(t, b, k); st.TurnsSinceSummary != 1 || st.Total != 7 || st.ActiveByLevel[1] != 3 {
			t.Fatalf("status after third archive: %+v", st)
		}
		if _, err := b.Archive(cfCtx, cfKey("telegram", "404"), []int64{1}, Summary{Text: "x"}, 0); !errors.Is(err, ErrNotFound) {
			t.Fatalf("archive in an unknown conversation: %v", err)
		}
	})

	t.Run("ArchiveConflictChangesNothing", func(t *testing.T) {
		b := open(t)
		k := cfKey("telegram", "1")
		cfAppend(t, b, cfUser(k, "1", "one", cfT0), cfBot(k, "1", "two", cfT0), cfUser(k, "3", "three", cfT0))
		act := cfActive(t, b, k)
		cfArchive(t, b, k, cfIDs(act[:1]), "s1", cfT0, 0)
		before := cfStatus(t, b, k)
		for _, cfIDs := range [][]int64{{act[0].ID}, {act[0].ID, act[1].ID}, {act[1].ID, 9999}, nil} {
			if _, err := b.Archive(cfCtx, k, cfIDs, Summary{Text: "again"}, 1); !errors.Is(err, ErrConflict) {
				t.Fatalf("Archive(%v): %v, want ErrConflict", cfIDs, err)
			}
		}
		if after := cfStatus(t, b, k); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("status changed by failed archives: %+v → %+v", before, after)
		}
		if got := cfActive(t, b, k); !slices.Equal(cfIDs(got), cfIDs(act[1:])) {
			t.Fatalf("active changed by failed archives: %v", cfIDs(got))
		}
		if n := len(cfSummaries(t, b, k, false)); n != 1 {
			t.Fatalf("%d summaries after failed archives", n)
		}
		// The failed attempts used no chunk number.
		s := cfArchive(t, b, k, cfIDs(act[1:]), "s2", cfT0, 0)
		if !slices.Equal(s.Sources, []int64{2}) {
			t.Fatalf("next chunk %v, want [2]", s.Sources)
		}
	})

	t.Run("FoldAndProvenance", func(t *testing.T) {
		b := open(t)
		k := cfKey("telegram", "1")
		var l1 []Summary
		var chunks [][]int64
		for i := range 3 {
			at := cfT0.Add(time.Duration(i) * 24 * time.Hour)
			cfAppend(t, b, cfUser(k, fmt.Sprint("u", i), fmt.Sprint("q", i), at), cfBot(k, fmt.Sprint("u", i), fmt.Sprint("a", i), at.Add(time.Minute)))
			act := cfActive(t, b, k)
			chunks = append(chunks, cfIDs(act))
			l1 = append(l1, cfArchive(t, b, k, cfIDs(act), fmt.Sprint("summary ", i), at.Add(time.Hour), 0))
		}
		l2 := cfFold(t, b, k, []int64{l1[0].ID, l1[1].ID}, 2, "meta", cfT0.Add(100*time.Hour))
		if l2.Level != 2 || !slices.Equal(l2.Sources, []int64{l1[0].ID, l1[1].ID}) || !l2.Active || l2.Key != k {
			t.Fatalf("level 2: %+v", l2)
		}
		if !l2.From.Equal(l1[0].From) || !l2.To.Equal(l1[1].To) {
			t.Fatalf("level 2 range %v–%v, want %v–%v", l2.From, l2.To, l1[0].From, l1[1].To)
		}
		active := cfSummaries(t, b, k, true)
		if len(active) != 2 || active[0].ID != l1[2].ID || active[1].ID != l2.ID {
			t.Fatalf("active summaries: %+v", active)
		}
		all := cfSummaries(t, b, k, false)
		if len(all) != 4 || all[0].Active || all[1].Active {
			t.Fatalf("all summaries: %+v", all)
		}
		st := cfStatus(t, b, k)
		if st.ActiveByLevel[1] != 1 || st.ActiveByLevel[2] != 1 || st.HighestLevel != 2 || st.ActiveSummaries() != 2 || st.Archived != 6 {
			t.Fatalf("status: %+v", st)
		}
		// Folding the same sources again, or the wrong level, conflicts.
		for _, c := range []struct {
			cfIDs []int64
			level int
		}{{[]int64{l1[0].ID, l1[1].ID}, 2}, {[]int64{l1[2].ID, l1[0].ID}, 2}, {[]int64{l1[2].ID}, 3}, {[]int64{l2.ID}, 2}, {nil, 2}, {[]int64{l1[2].ID}, 1}} {
			if _, err := b.Fold(cfCtx, k, c.cfIDs, Summary{Level: c.level, Text: "x"}); !errors.Is(err, ErrConflict) {
				t.Fatalf("Fold(%v, level %d): %v, want ErrConflict", c.cfIDs, c.level, err)
			}
		}
		if after := cfSummaries(t, b, k, false); fmt.Sprint(after) != fmt.Sprint(all) {
			t.Fatalf("failed folds changed summaries:\n%+v\n%+v", all, after)
		}
		prov, err := b.Provenance(cfCtx, k, l2.ID)
		if err != nil || !slices.Equal(cfIDs(prov), append(slices.Clone(chunks[0]), chunks[1]...)) {
			t.Fatalf("provenance of level 2: %v, %v; want chunks %v", cfIDs(prov), err, chunks[:2])
		}
		l3 := cfFold(t, b, k, []int64{l2.ID}, 3, "top", cfT0.Add(200*time.Hour))
		if prov, _ := b.Provenance(cfCtx, k, l3.ID); len(prov) != 4 {
			t.Fatalf("provenance of level 3: %d messages", len(prov))
		}
		if prov, _ := b.Provenance(cfCtx, k, l1[2].ID); !slices.Equal(cfIDs(prov), chunks[2]) {
			t.Fatalf("provenance of the third level 1: %v", cfIDs(prov))
		}
		if _, err := b.Provenance(cfCtx, k, 99999); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown summary: %v", err)
		}
		if _, err := b.Provenance(cfCtx, cfKey("telegram", "404"), l2.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown conversation: %v", err)
		}
		if _, err := b.Fold(cfCtx, cfKey("telegram", "404"), []int64{1}, Summary{Level: 2}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("fold in an unknown conversation: %v", err)
		}
	})

	t.Run("StatusOfUnknownConversation", func(t *testing.T) {
		b := open(t)
		st := cfStatus(t, b, cfKey("telegram", "404"))
		if st.Total != 0 || st.ActiveByLevel == nil || len(st.ActiveByLevel) != 0 || st.HighestLevel != 0 {
			t.Fatalf("status: %+v", st)
		}
		if s := cfSummaries(t, b, cfKey("telegram", "404"), false); s != nil {
			t.Fatalf("summaries: %+v", s)
		}
		if a := cfActive(t, b, cfKey("telegram", "404")); a != nil {
			t.Fatalf("active: %+v", a)
		}
	})

	t.Run("Search", func(t *testing.T) { cfTestSearch(t, open(t)) })
	t.Run("Around", func(t *testing.T) {
		b := open(t)
		k, other := cfKey("telegram", "-100"), pipeline.Key{Channel: "telegram", Chat: "-100", Thread: "7"}
		// Two conversations of one owner interleaved: neighbours are the
		// conversation's own.
		for i := range 6 {
			cfAppend(t, b, cfUser(k, fmt.Sprint("k", i), fmt.Sprint("k", i), cfT0.Add(time.Duration(i)*time.Minute)),
				cfUser(other, fmt.Sprint("o", i), fmt.Sprint("o", i), cfT0.Add(time.Duration(i)*time.Minute)))
		}
		msgs := cfActive(t, b, k)
		cfArchive(t, b, k, cfIDs(msgs[:4]), "first four", cfT0.Add(time.Hour), 0)
		oth := cfActive(t, b, other)
		around := func(ids ...int64) []string {
			t.Helper()
			got, err := b.Around(cfCtx, k, ids)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range got {
				if m.Key != k {
					t.Errorf("%q has key %v", m.Text, m.Key)
				}
			}
			return cfTexts(got)
		}
		for _, c := range []struct {
			ids  []int64
			want []string
		}{
			{[]int64{msgs[1].ID}, []string{"k0", "k1", "k2"}},
			{[]int64{msgs[0].ID}, []string{"k0", "k1"}},
			{[]int64{msgs[5].ID}, []string{"k4", "k5"}},
			// The last archived one's next is active.
			{[]int64{msgs[3].ID}, []string{"k2", "k3", "k4"}},
			// Overlaps come once, oldest first.
			{[]int64{msgs[4].ID, msgs[2].ID, msgs[3].ID}, []string{"k1", "k2", "k3", "k4", "k5"}},
			{[]int64{oth[2].ID, 999999}, nil},
			{nil, nil},
		} {
			if got := around(c.ids...); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Around(%v) = %q, want %q", c.ids, got, c.want)
			}
		}
		if got, err := b.Around(cfCtx, cfKey("telegram", "-300"), []int64{msgs[1].ID}); err != nil || got != nil {
			t.Errorf("Around in an unknown conversation: %v, %v", got, err)
		}
	})
	t.Run("AroundReach", func(t *testing.T) {
		b := open(t)
		k, other := cfKey("telegram", "-100"), pipeline.Key{Channel: "telegram", Chat: "-100", Thread: "7"}
		for i := range 9 {
			cfAppend(t, b, cfUser(k, fmt.Sprint("k", i), fmt.Sprint("k", i), cfT0.Add(time.Duration(i)*time.Minute)),
				cfUser(other, fmt.Sprint("o", i), fmt.Sprint("o", i), cfT0.Add(time.Duration(i)*time.Minute)))
		}
		msgs := cfActive(t, b, k)
		cfArchive(t, b, k, cfIDs(msgs[:5]), "first five", cfT0.Add(time.Hour), 0)
		for _, c := range []struct {
			ids   []int64
			reach int
			want  []string
		}{
			{[]int64{msgs[4].ID}, 2, []string{"k2", "k3", "k5", "k6"}}, // archived and active neighbours, not k4 itself
			{[]int64{msgs[4].ID}, 1, []string{"k3", "k5"}},
			{[]int64{msgs[1].ID}, 3, []string{"k0", "k2", "k3", "k4"}},
			{[]int64{msgs[8].ID, msgs[1].ID}, 2, []string{"k0", "k2", "k3", "k6", "k7"}},
			{[]int64{msgs[2].ID, msgs[3].ID}, 2, []string{"k0", "k1", "k4", "k5"}}, // overlaps come once
			{nil, 2, nil},
		} {
			got, err := aroundReach(cfCtx, b, k, c.ids, c.reach)
			if err != nil {
				t.Fatal(err)
			}
			if texts := cfTexts(got); !reflect.DeepEqual(texts, c.want) {
				t.Errorf("AroundReach(%v, %d) = %q, want %q", c.ids, c.reach, texts, c.want)
			}
		}
	})

	t.Run("Settings", func(t *testing.T) {
		b := open(t)
		st, ok, err := b.Settings(cfCtx, "telegram:1")
		if err != nil || ok || st.Owner != "telegram:1" {
			t.Fatalf("settings before: %+v %v %v", st, ok, err)
		}
		in := Settings{Owner: "telegram:1", MemoryEnabled: true, Storage: StorageJSON, Threshold: 7, Created: cfT0, Updated: cfT0}
		if err := b.PutSettings(cfCtx, in); err != nil {
			t.Fatal(err)
		}
		got, ok, err := b.Settings(cfCtx, "telegram:1")
		want := in
		want.Created, want.Updated = ms(cfT0), ms(cfT0)
		if err != nil || !ok || got != want {
			t.Fatalf("settings: %+v %v %v, want %+v", got, ok, err, want)
		}
		in2 := Settings{Owner: "telegram:1", MemoryEnabled: false, Storage: StorageSQLite, Threshold: 3, FactsOff: true, Created: cfT0.Add(time.Hour), Updated: cfT0.Add(time.Hour)}
		if err := b.PutSettings(cfCtx, in2); err != nil {
			t.Fatal(err)
		}
		got, _, _ = b.Settings(cfCtx, "telegram:1")
		want = Settings{Owner: "telegram:1", Storage: StorageSQLite, Threshold: 3, FactsOff: true, Created: ms(cfT0), Updated: ms(cfT0.Add(time.Hour))}
		if got != want {
			t.Fatalf("updated settings: %+v, want %+v (created stays)", got, want)
		}
		// Defaults: times are set when missing.
		if err := b.PutSettings(cfCtx, Settings{Owner: "telegram:2", Threshold: 10}); err != nil {
			t.Fatal(err)
		}
		if got, ok, _ := b.Settings(cfCtx, "telegram:2"); !ok || got.Created.IsZero() || got.Updated.IsZero() || got.Threshold != 10 {
			t.Fatalf("defaults: %+v", got)
		}
		if _, ok, _ := b.Settings(cfCtx, "telegram:3"); ok {
			t.Fatal("settings leak between owners")
		}
	})

	t.Run("Memories", func(t *testing.T) {
		b := open(t)
		o1, o2 := "telegram:1", "telegram:2"
		for _, m := range []UserMemory{{Key: "name", Content: "Ann"}, {Key: "city", Content: "Porto", Created: cfT0, Updated: cfT0}} {
			if err := b.Remember(cfCtx, o1, m, 2); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Remember(cfCtx, o1, UserMemory{Key: "pet", Content: "cat"}, 2); !errors.Is(err, ErrMemoryCap) {
			t.Fatalf("third memory with max 2: %v", err)
		}
		if err := b.Remember(cfCtx, o1, UserMemory{Key: "city", Content: "Lisbon", Updated: cfT0.Add(time.Hour)}, 2); err != nil {
			t.Fatalf("upsert at the cap: %v", err)
		}
		got, err := b.Memories(cfCtx, o1)
		if err != nil || len(got) != 2 || got[0].Key != "city" || got[1].Key != "name" {
			t.Fatalf("memories: %+v %v", got, err)
		}
		if got[0].Content != "Lisbon" || !got[0].Created.Equal(ms(cfT0)) || !got[0].Updated.Equal(ms(cfT0.Add(time.Hour))) {
			t.Fatalf("upserted memory: %+v", got[0])
		}
		if err := b.Remember(cfCtx, o1, UserMemory{Key: "pet", Content: "cat"}, 0); err != nil {
			t.Fatalf("max 0 means no cap: %v", err)
		}
		if m, _ := b.Memories(cfCtx, o2); m != nil {
			t.Fatalf("memories leak to another owner: %+v", m)
		}
		if ok, err := b.Forget(cfCtx, o2, "city"); ok || err != nil {
			t.Fatalf("forget in another owner: %v %v", ok, err)
		}
		if ok, err := b.Forget(cfCtx, o1, "city"); !ok || err != nil {
			t.Fatalf("forget: %v %v", ok, err)
		}
		if ok, err := b.Forget(cfCtx, o1, "city"); ok || err != nil {
			t.Fatalf("forget twice: %v %v", ok, err)
		}
		if got, _ := b.Memories(cfCtx, o1); len(got) != 2 || got[0].Key != "name" || got[1].Key != "pet" {
			t.Fatalf("memories after forget: %+v", got)
		}
	})

	// A note records who wrote its current text: kept as written,
	// replaced with the text, "" when unknown.
	t.Run("MemoryAuthor", func(t *testing.T) {
		b := open(t)
		group := "telegram:-100"
		must(t, b.Remember(cfCtx, group, UserMemory{Key: "rule", Content: "no spoilers", Author: "telegram:7"}, 0))
		must(t, b.Remember(cfCtx, group, UserMemory{Key: "old", Content: "from before"}, 0))
		got, err := b.Memories(cfCtx, group)
		if err != nil || len(got) != 2 || got[0].Author != "" || got[1].Author != "telegram:7" {
			t.Fatalf("memories: %+v %v", got, err)
		}
		if !got[1].WrittenBy("telegram:7") || got[1].WrittenBy("telegram:8") || got[0].WrittenBy("") {
			t.Fatalf("WrittenBy: %+v", got)
		}
		must(t, b.Remember(cfCtx, group, UserMemory{Key: "rule", Content: "spoilers after a week", Author: "telegram:8"}, 0))
		got, _ = b.Memories(cfCtx, group)
		if len(got) != 2 || got[1].Content != "spoilers after a week" || got[1].Author != "telegram:8" {
			t.Fatalf("replaced note: %+v", got)
		}
	})

	t.Run("Facts", func(t *testing.T) {
		b := open(t)
		o1, o2 := "telegram:1", "telegram:2"
		k := cfKey("telegram", "1").String()
		f1, merged, err := b.AddFact(cfCtx, o1, Fact{Content: "The user lives in Lisbon", Key: k, Sources: []string{"1"}, Tags: []string{"home"}, Created: cfT0})
		if err != nil || merged || f1.ID == 0 {
			t.Fatalf("first fact: %+v %v %v", f1, merged, err)
		}
		f1b, merged, err := b.AddFact(cfCtx, o1, Fact{Content: "the user lives in Lisbon!", Key: k, Sources: []string{"2", "1"}, Created: cfT0.Add(time.Hour)})
		if err != nil || !merged || f1b.ID != f1.ID || f1b.Content != "the user lives in Lisbon!" {
			t.Fatalf("near-identical fact: %+v %v %v", f1b, merged, err)
		}
		if !slices.Equal(f1b.Sources, []string{"1", "2"}) || !slices.Equal(f1b.Tags, []string{"home"}) || !f1b.Updated.Equal(ms(cfT0.Add(time.Hour))) || !f1b.Created.Equal(ms(cfT0)) {
			t.Fatalf("merged fact: %+v", f1b)
		}
		f2, _, _ := b.AddFact(cfCtx, o1, Fact{Content: "Favourite food is pizza", Created: cfT0.Add(2 * time.Hour)})
		f3, merged, _ := b.AddFact(cfCtx, o1, Fact{Content: "Works as a piano teacher", Created: cfT0.Add(3 * time.Hour)})
		if merged || f3.ID == f2.ID || f2.ID == f1.ID {
			t.Fatalf("distinct facts merged: %+v %+v", f2, f3)
		}
		factContents := func(fs []Fact) []string {
			var out []string
			for _, f := range fs {
				out = append(out, f.Content)
			}
			return out
		}
		got, err := b.Facts(cfCtx, o1, "Where is the user living?", 0)
		if err != nil || len(got) != 1 || got[0].ID != f1.ID {
			t.Fatalf("facts about living: %q %v", factContents(got), err)
		}
		if got, _ := b.Facts(cfCtx, o1, "pizza or piano?", 0); len(got) != 2 {
			t.Fatalf("facts about pizza or piano: %q", factContents(got))
		}
		got, _ = b.Facts(cfCtx, o1, "", 0)
		if !slices.Equal(factContents(got), []string{f3.Content, f2.Content, f1b.Content}) {
			t.Fatalf("newest facts: %q", factContents(got))
		}
		if got, _ := b.Facts(cfCtx, o1, "the and of", 2); len(got) != 2 || got[0].ID != f3.ID {
			t.Fatalf("newest 2 facts: %q", factContents(got))
		}
		if got, _ := b.Facts(cfCtx, o2, "lisbon", 0); got != nil {
			t.Fatalf("facts leak to another owner: %q", factContents(got))
		}
		if got, _ := b.Facts(cfCtx, o1, "nothing matches zyzzyva", 0); got != nil {
			t.Fatalf("unmatched facts: %q", factContents(got))
		}
		for _, q := range cfHostileQueries() {
			if _, err := b.Facts(cfCtx, o1, q, 0); err != nil {
				t.Fatalf("Facts(%.40q): %v", q, err)
			}
		}
		// ForgetFact removes one fact, from listings and search, and only
		// the owner's own.
		if ok, err := b.ForgetFact(cfCtx, o2, f2.ID); err != nil || ok {
			t.Fatalf("another owner forgot a fact: %v %v", ok, err)
		}
		if ok, err := b.ForgetFact(cfCtx, o1, f2.ID); err != nil || !ok {
			t.Fatalf("ForgetFact: %v %v", ok, err)
		}
		if ok, _ := b.ForgetFact(cfCtx, o1, f2.ID); ok {
			t.Fatal("a forgotten fact was forgotten twice")
		}
		if got, _ := b.Facts(cfCtx, o1, "pizza", 0); got != nil {
			t.Fatalf("a forgotten fact is still found: %q", factContents(got))
		}
		if got, _ := b.Facts(cfCtx, o1, "", 0); !slices.Equal(factContents(got), []string{f3.Content, f1b.Content}) {
			t.Fatalf("facts after forgetting one: %q", factContents(got))
		}
	})

	t.Run("PurgeConversation", func(t *testing.T) {
		b := open(t)
		a, c := cfKey("telegram", "1"), pipeline.Key{Channel: "telegram", Chat: "1", Thread: "7"}
		owner := a.Owner()
		cfAppend(t, b, cfUser(a, "1", "secret lisbon plans", cfT0), cfBot(a, "1", "noted", cfT0), cfUser(a, "2", "more", cfT0))
		cfAppend(t, b, cfUser(c, "1", "topic lisbon talk", cfT0))
		cfArchive(t, b, a, cfIDs(cfActive(t, b, a))[:2], "summary with secret", cfT0, 0)
		b.AddFact(cfCtx, owner, Fact{Content: "fact from a", Key: a.String()})
		b.AddFact(cfCtx, owner, Fact{Content: "fact from the topic", Key: c.String()})
		b.Remember(cfCtx, owner, UserMemory{Key: "name", Content: "Ann"}, 0)
		b.PutSettings(cfCtx, Settings{Owner: owner, Threshold: 5})
		rep, err := b.Purge(cfCtx, PurgeScope{Owner: owner, Key: a})
		if err != nil || rep != (PurgeReport{Messages: 3, Summaries: 1, Facts: 1}) {
			t.Fatalf("purge report %+v, %v", rep, err)
		}
		if st := cfStatus(t, b, a); st.Total != 0 || st.ActiveSummaries() != 0 {
			t.Fatalf("status after purge: %+v", st)
		}
		if hits := cfSearch(t, b, a, Query{Text: "secret lisbon"}); hits != nil {
			t.Fatalf("purged text still found: %q", cfHitTexts(hits))
		}
		if hits := cfSearch(t, b, c, Query{Text: "lisbon"}); len(hits) != 1 {
			t.Fatalf("the other conversation lost its messages: %q", cfHitTexts(hits))
		}
		if m, _ := b.Memories(cfCtx, owner); len(m) != 1 {
			t.Fatalf("memories purged with a conversation: %+v", m)
		}
		if _, ok, _ := b.Settings(cfCtx, owner); !ok {
			t.Fatal("settings purged with a conversation")
		}
		if f, _ := b.Facts(cfCtx, owner, "", 0); len(f) != 1 || f[0].Key != c.String() {
			t.Fatalf("facts after purge: %+v", f)
		}
		// The conversation starts over.
		if n := cfAppend(t, b, cfUser(a, "1", "fresh start", cfT0)); n != 1 {
			t.Fatalf("platform id 1 after purge: stored %d", n)
		}
		if rep, err := b.Purge(cfCtx, PurgeScope{}); err == nil {
			t.Fatalf("purge without owner: %+v", rep)
		}
	})

	t.Run("PurgeOwner", func(t *testing.T) {
		b := open(t)
		a, other := cfKey("telegram", "1"), cfKey("telegram", "2")
		cfAppend(t, b, cfUser(a, "1", "mine", cfT0), cfBot(a, "1", "yours", cfT0))
		cfAppend(t, b, cfUser(other, "1", "other owner", cfT0))
		cfArchive(t, b, a, cfIDs(cfActive(t, b, a)), "s", cfT0, 0)
		b.AddFact(cfCtx, a.Owner(), Fact{Content: "f1"})
		b.AddFact(cfCtx, a.Owner(), Fact{Content: "completely different"})
		b.Remember(cfCtx, a.Owner(), UserMemory{Key: "k1", Content: "x"}, 0)
		b.Remember(cfCtx, a.Owner(), UserMemory{Key: "k2", Content: "y"}, 0)
		b.PutSettings(cfCtx, Settings{Owner: a.Owner(), Threshold: 5})
		b.Remember(cfCtx, other.Owner(), UserMemory{Key: "k1", Content: "theirs"}, 0)
		if owners, _ := b.Owners(cfCtx); !slices.Equal(owners, []string{"telegram:1", "telegram:2"}) {
			t.Fatalf("owners before: %q", owners)
		}
		rep, err := b.Purge(cfCtx, PurgeScope{Owner: a.Owner()})
		if err != nil || rep != (PurgeReport{Messages: 2, Summaries: 1, Facts: 2, Memories: 2}) {
			t.Fatalf("report %+v, %v", rep, err)
		}
		if owners, _ := b.Owners(cfCtx); !slices.Equal(owners, []string{"telegram:2"}) {
			t.Fatalf("owners after: %q", owners)
		}
		if _, ok, _ := b.Settings(cfCtx, a.Owner()); ok {
			t.Fatal("settings survived")
		}
		d, err := b.Export(cfCtx, a.Owner(), nil)
		if err != nil || !d.Empty() {
			t.Fatalf("export after purge: %+v %v", d, err)
		}
		if m, _ := b.Memories(cfCtx, other.Owner()); len(m) != 1 {
			t.Fatal("another owner's memories purged")
		}
		if got := cfActive(t, b, other); len(got) != 1 {
			t.Fatal("another owner's messages purged")
		}
		if rep, err := b.Purge(cfCtx, PurgeScope{Owner: a.Owner()}); err != nil || rep != (PurgeReport{}) {
			t.Fatalf("second purge: %+v %v", rep, err)
		}
	})

	t.Run("PurgeOlderThan", func(t *testing.T) { cfTestPurgeOlderThan(t, open(t)) })

	t.Run("ExportImport", func(t *testing.T) { cfTestExportImport(t, open) })

	t.Run("Owners", func(t *testing.T) {
		b := open(t)
		if o, err := b.Owners(cfCtx); o != nil || err != nil {
			t.Fatalf("owners of an empty store: %q %v", o, err)
		}
		b.PutSettings(cfCtx, Settings{Owner: "telegram:4", Threshold: 1})
		b.Remember(cfCtx, "telegram:3", UserMemory{Key: "a", Content: "b"}, 0)
		b.AddFact(cfCtx, "telegram:2", Fact{Content: "c"})
		cfAppend(t, b, cfUser(cfKey("telegram", "1"), "1", "d", cfT0), cfUser(cfKey("whatsapp", "1@s"), "1", "e", cfT0))
		o, err := b.Owners(cfCtx)
		if want := []string{"telegram:1", "telegram:2", "telegram:3", "telegram:4", "whatsapp:1@s"}; err != nil || !slices.Equal(o, want) {
			t.Fatalf("owners %q %v, want %q", o, err, want)
		}
		b.Forget(cfCtx, "telegram:3", "a")
		if o, _ := b.Owners(cfCtx); slices.Contains(o, "telegram:3") {
			t.Fatalf("owner without data listed: %q", o)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		b := open(t)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k := cfKey("telegram", fmt.Sprint(g%2))
				for i := range 5 {
					m := cfUser(k, fmt.Sprint(g, "-", i), fmt.Sprintf("message %d about lisbon from %d", i, g), cfT0)
					if _, err := b.Append(cfCtx, []Message{m}); err != nil {
						errs <- err
						return
					}
					if _, err := b.Search(cfCtx, k, Query{Text: "lisbon"}); err != nil {
						errs <- err
						return
					}
					if _, err := b.Status(cfCtx, k); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, chat := range []string{"0", "1"} {
			if st := cfStatus(t, b, cfKey("telegram", chat)); st.Total != 10 {
				t.Fatalf("chat %s: %d messages, want 10", chat, st.Total)
			}
		}
	})
}

// cfHostileQueries are cfTexts that must never make a search fail.
func cfHostileQueries() []string {
	return []string{`"`, `""`, `NEAR(a b)`, `NEAR(lisbon moving, 2)`, `*`, `lisbon*`, `-x`, `-lisbon`, `a:b`, `text:lisbon`,
		`conv:c1`, `^x`, `^lisbon`, `((`, `))`, `AND OR NOT`, `lisbon AND`, `OR`, `NOT lisbon`, `{text}: x`, `+`, `'`, `\`,
		`🎉🎉`, `lisbon 🎉`, "\x00", "lis\x00bon", "\xff\xfe\xfd", "lisbon\xc3", "\u0301", "c1 c2 c3", "e\u0301te",
		strings.Repeat("lisbon ", 150000), strings.Repeat("x", 1<<20), strings.Repeat("ab ", 1000),
		`SELECT * FROM messages; --`, `%`, `_`, "  ", ""}
}

func cfTestSearch(t *testing.T, b Backend) {
	a, otherConv := cfKey("telegram", "100"), cfKey("telegram", "200")
	otherOwner := cfKey("whatsapp", "300")
	msgs := []Message{
		{Key: a, Role: RoleUser, SenderName: "Alice", PlatformID: "1", Text: "I am moving to Lisbon next month", Time: cfT0, Tokens: 50},
		{Key: a, Role: RoleAssistant, PlatformID: "2", Text: "Lisbon is lovely", Time: cfT0.Add(time.Minute), Tokens: 5},
		{Key: a, Role: RoleUser, SenderName: "Alice", PlatformID: "3", Text: "We moved the piano yesterday", Time: cfT0.Add(2 * time.Minute)},
		{Key: a, Role: RoleUser, SenderName: "Charlie", PlatformID: "4", Text: "pizza tonight", Time: cfT0.Add(3 * time.Minute)},
		{Key: a, Role: RoleUser, SenderName: "Dana", PlatformID: "5", Text: "zebra crossing", Time: cfT0.Add(4 * time.Minute)},
		{Key: a, Role: RoleUser, SenderName: "Zebra", PlatformID: "6", Text: "road crossing", Time: cfT0.Add(5 * time.Minute)},
		{Key: a, Role: RoleUser, SenderName: "Eve", PlatformID: "7", Text: "tie breaker words", Time: cfT0.Add(6 * time.Minute)},
		{Key: a, Role: RoleUser, SenderName: "Eve", PlatformID: "8", Text: "tie breaker words", Time: cfT0.Add(7 * time.Minute)},
		{Key: a, Role: RoleUser, SenderName: "Eve", PlatformID: "9", Text: "Crème brûlée au café, s'il vous plaît", Time: cfT0.Add(8 * time.Minute)},
		{Key: a, Role: RoleUser, SenderName: "Eve", PlatformID: "10", Text: "echo echo echo chamber", Time: cfT0.Add(9 * time.Minute)},
		{Key: a, Role: RoleUser, SenderName: "Eve", PlatformID: "11", Text: "echo chamber music", Time: cfT0.Add(10 * time.Minute)},
		{Key: otherConv, Role: RoleUser, PlatformID: "1", Text: "Lisbon secret of another chat, moving too", Time: cfT0},
		{Key: otherOwner, Role: RoleUser, PlatformID: "1", Text: "Lisbon secret of another owner, moving too", Time: cfT0},
	}
	cfAppend(t, b, msgs...)
	search := func(q Query) []string {
		t.Helper()
		hits := cfSearch(t, b, a, q)
		for i, h := range hits {
			if h.Score <= 0 {
				t.Errorf("%q: score %v, want > 0", q.Text, h.Score)
			}
			if i > 0 && h.Score > hits[i-1].Score {
				t.Errorf("%q: hits not ordered by score: %v", q.Text, hits)
			}
			if h.Message.Key != a {
				t.Errorf("%q: hit from %v", q.Text, h.Message.Key)
			}
		}
		return cfHitTexts(hits)
	}
	sorted := func(s []string) []string { s = slices.Clone(s); sort.Strings(s); return s }

	if got := search(Query{Text: "moving"}); !slices.Equal(sorted(got), []string{"I am moving to Lisbon next month", "We moved the piano yesterday"}) {
		t.Errorf("stemming: moving found %q", got)
	}
	if got := search(Query{Text: "Where is LISBON?"}); !slices.Equal(sorted(got), []string{"I am moving to Lisbon next month", "Lisbon is lovely"}) {
		t.Errorf("scoping: lisbon found %q", got)
	}
	if got := search(Query{Text: "charlie"}); !slices.Equal(got, []string{"pizza tonight"}) {
		t.Errorf("sender name: charlie found %q", got)
	}
	if got := search(Query{Text: "zebra"}); !slices.Equal(got, []string{"zebra crossing", "road crossing"}) {
		t.Errorf("text outweighs sender name: zebra found %q", got)
	}
	if got := search(Query{Text: "echo"}); !slices.Equal(got, []string{"echo echo echo chamber", "echo chamber music"}) {
		t.Errorf("term frequency: echo found %q", got)
	}
	tie := cfSearch(t, b, a, Query{Text: "tie breaker"})
	if len(tie) != 2 || tie[0].Message.PlatformID != "8" || tie[1].Message.PlatformID != "7" || tie[0].Score != tie[1].Score {
		t.Errorf("recency tie-break: %+v", tie)
	}
	if got := search(Query{Text: "creme brulee cafe"}); !slices.Equal(got, []string{"Crème brûlée au café, s'il vous plaît"}) {
		t.Errorf("diacritics: %q", got)
	}
	if got := search(Query{Text: "CAFÉ"}); len(got) != 1 {
		t.Errorf("case and diacritics in the query: %q", got)
	}
	if got := search(Query{Text: "the and of to is"}); got != nil {
		t.Errorf("stopwords only: %q", got)
	}
	if got := search(Query{Text: "c100 c1 c2 c3 conv"}); got != nil {
		t.Errorf("internal conversation tags matched: %q", got)
	}
	if got := search(Query{Text: "lisbon", Limit: 1}); len(got) != 1 {
		t.Errorf("limit 1: %q", got)
	}
	first := cfSearch(t, b, a, Query{Text: "lisbon"})
	if got := search(Query{Text: "lisbon", Exclude: []int64{first[0].Message.ID}}); len(got) != 1 || got[0] != first[1].Message.Text {
		t.Errorf("exclude: %q", got)
	}
	// The 50-token message does not fit a budget of 10; the 5-token one does.
	if got := search(Query{Text: "lisbon", TokenBudget: 10}); !slices.Equal(got, []string{"Lisbon is lovely"}) {
		t.Errorf("token budget: %q", got)
	}
	if got := search(Query{Text: "lisbon", ArchivedOnly: true}); got != nil {
		t.Errorf("archived only, nothing archived: %q", got)
	}
	act := cfActive(t, b, a)
	cfArchive(t, b, a, cfIDs(act[:2]), "moving plans", cfT0, 0)
	if got := search(Query{Text: "lisbon moving", ArchivedOnly: true}); !slices.Equal(sorted(got), []string{"I am moving to Lisbon next month", "Lisbon is lovely"}) {
		t.Errorf("archived only: %q", got)
	}
	if got := search(Query{Text: "lisbon moving"}); len(got) != 3 {
		t.Errorf("archived and active: %q", got)
	}
	for _, q := range cfHostileQueries() {
		if _, err := b.Search(cfCtx, a, Query{Text: q}); err != nil {
			t.Errorf("Search(%.40q): %v", q, err)
		}
	}
	if got := search(Query{Text: "\xff\xfelisbon\x00"}); len(got) != 2 {
		t.Errorf("invalid UTF-8 and NUL around a word: %q", got)
	}
	if got := cfSearch(t, b, otherConv, Query{Text: "lisbon"}); len(got) != 1 || got[0].Message.Key != otherConv {
		t.Errorf("other conversation: %+v", got)
	}
	if got := cfSearch(t, b, otherOwner, Query{Text: "lisbon"}); len(got) != 1 || got[0].Message.Key != otherOwner {
		t.Errorf("other owner: %+v", got)
	}
	if got := cfSearch(t, b, cfKey("telegram", "404"), Query{Text: "lisbon"}); got != nil {
		t.Errorf("unknown conversation: %+v", got)
	}
}

// cfTestPurgeOlderThan: four chunks, old/old, old/new, new/new, new/new;
// level 1 summaries s1–s4, s5 = L2(s1, s2), s6 = L2(s3, s4), s7 = L3(s5, s6).
// Purging what is older than the middle deletes the old messages and every
// summary reaching into the old period (s1, s2, s5, and s7 built on it);
// the surviving message of chunk 2 becomes active again, and s6, clean, is
// active again in place of s7.
func cfTestPurgeOlderThan(t *testing.T, b Backend) {
	k := cfKey("telegram", "1")
	owner := k.Owner()
	old, cut, recent := cfT0, cfT0.Add(10*24*time.Hour), cfT0.Add(20*24*time.Hour)
	chunkTimes := [][2]time.Time{{old, old.Add(time.Hour)}, {old.Add(2 * time.Hour), recent}, {recent.Add(time.Hour), recent.Add(2 * time.Hour)}, {recent.Add(3 * time.Hour), recent.Add(4 * time.Hour)}}
	var l1 []Summary
	for i, ts := range chunkTimes {
		cfAppend(t, b, cfUser(k, fmt.Sprint("u", i), fmt.Sprint("question ", i), ts[0]), cfBot(k, fmt.Sprint("u", i), fmt.Sprint("answer ", i), ts[1]))
		l1 = append(l1, cfArchive(t, b, k, cfIDs(cfActive(t, b, k)), fmt.Sprint("s", i+1), ts[1], 0))
	}
	cfAppend(t, b, cfUser(k, "live", "still active", recent.Add(5*time.Hour)))
	s5 := cfFold(t, b, k, []int64{l1[0].ID, l1[1].ID}, 2, "s5", recent)
	s6 := cfFold(t, b, k, []int64{l1[2].ID, l1[3].ID}, 2, "s6", recent)
	s7 := cfFold(t, b, k, []int64{s5.ID, s6.ID}, 3, "s7", recent)
	b.AddFact(cfCtx, owner, Fact{Content: "an old fact", Key: k.String(), Created: old})
	b.AddFact(cfCtx, owner, Fact{Content: "a new fact about something else", Key: k.String(), Created: recent})
	b.Remember(cfCtx, owner, UserMemory{Key: "name", Content: "Ann", Created: old, Updated: old}, 0)

	rep, err := b.Purge(cfCtx, PurgeScope{Owner: owner, OlderThan: cut})
	if want := (PurgeReport{Messages: 3, Summaries: 4, Facts: 1}); err != nil || rep != want {
		t.Fatalf("report %+v %v, want %+v", rep, err, want)
	}
	sums := cfSummaries(t, b, k, false)
	var got []string
	for _, s := range sums {
		got = append(got, fmt.Sprintf("%s:%v", s.Text, s.Active))
	}
	if want := []string{"s3:false", "s4:false", "s6:true"}; !slices.Equal(got, want) {
		t.Fatalf("summaries after purge %q, want %q", got, want)
	}
	act := cfActive(t, b, k)
	if !slices.Equal(cfTexts(act), []string{"answer 1", "still active"}) || act[0].ChunkID != 0 {
		t.Fatalf("active after purge: %+v", act)
	}
	st := cfStatus(t, b, k)
	if st.Total != 6 || st.Active != 2 || st.Archived != 4 || st.HighestLevel != 2 || fmt.Sprint(st.ActiveByLevel) != "map[2:1]" {
		t.Fatalf("status after purge: %+v", st)
	}
	if prov, err := b.Provenance(cfCtx, k, s6.ID); err != nil || !slices.Equal(cfTexts(prov), []string{"question 2", "answer 2", "question 3", "answer 3"}) {
		t.Fatalf("provenance of s6: %q %v", cfTexts(prov), err)
	}
	if _, err := b.Provenance(cfCtx, k, s7.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("provenance of the purged s7: %v", err)
	}
	if hits := cfSearch(t, b, k, Query{Text: "question 0 answer"}); slices.Contains(cfHitTexts(hits), "question 0") {
		t.Fatalf("purged message still found: %q", cfHitTexts(hits))
	}
	if f, _ := b.Facts(cfCtx, owner, "", 0); len(f) != 1 || f[0].Content != "a new fact about something else" {
		t.Fatalf("facts after purge: %+v", f)
	}
	if m, _ := b.Memories(cfCtx, owner); len(m) != 1 {
		t.Fatal("an age purge removed memories")
	}
	// The surviving message can be archived again.
	cfArchive(t, b, k, cfIDs(act), "again", recent.Add(6*time.Hour), 0)
	// Purging again changes nothing.
	if rep, err := b.Purge(cfCtx, PurgeScope{Owner: owner, OlderThan: cut}); err != nil || rep != (PurgeReport{}) {
		t.Fatalf("second purge: %+v %v", rep, err)
	}
	// A conversation-scoped age purge leaves other conversations alone.
	k2 := cfKey("telegram", "1")
	k2.Thread = "9"
	cfAppend(t, b, cfUser(k2, "1", "old topic message", old))
	if rep, _ := b.Purge(cfCtx, PurgeScope{Owner: owner, Key: k, OlderThan: recent.Add(24 * time.Hour)}); rep.Messages != 6 {
		t.Fatalf("scoped age purge: %+v", rep)
	}
	if st := cfStatus(t, b, k2); st.Total != 1 {
		t.Fatalf("scoped age purge touched another conversation: %+v", st)
	}
}

// cfRichOwner stores an owner with a bit of everything.
func cfRichOwner(t *testing.T, b Backend) (owner string, keys []pipeline.Key) {
	a := cfKey("telegram", "42")
	c := pipeline.Key{Channel: "telegram", Chat: "42", Thread: "5"}
	owner = a.Owner()
	if err := b.PutSettings(cfCtx, Settings{Owner: owner, MemoryEnabled: true, Storage: StorageSQLite, Threshold: 3, Created: cfT0, Updated: cfT0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	b.Remember(cfCtx, owner, UserMemory{Key: "name", Content: "Ann", Created: cfT0, Updated: cfT0}, 0)
	b.Remember(cfCtx, owner, UserMemory{Key: "city", Content: "Lisbon", Created: cfT0, Updated: cfT0, Author: "telegram:42"}, 0)
	b.AddFact(cfCtx, owner, Fact{Content: "Ann moved to Lisbon", Key: a.String(), Sources: []string{"1"}, Tags: []string{"home"}, Created: cfT0})
	b.AddFact(cfCtx, owner, Fact{Content: "Ann plays the piano", Key: c.String(), Created: cfT0.Add(time.Hour)})
	for i := range 6 {
		at := cfT0.Add(time.Duration(i) * time.Hour)
		cfAppend(t, b, cfUser(a, fmt.Sprint(i), fmt.Sprint("question ", i), at), cfBot(a, fmt.Sprint(i), fmt.Sprint("answer ", i), at.Add(time.Minute)),
			// (assistant, not system: a file to import holds no system message)
			Message{Key: a, Role: RoleAssistant, Text: "a note without platform id", Time: at.Add(2 * time.Minute)})
		if i%2 == 1 {
			cfArchive(t, b, a, cfIDs(cfActive(t, b, a)), fmt.Sprint("summary ", i), at.Add(time.Hour), 1)
		}
	}
	l1 := cfSummaries(t, b, a, true)
	cfFold(t, b, a, []int64{l1[0].ID, l1[1].ID}, 2, "meta", cfT0.Add(48*time.Hour))
	cfAppend(t, b, cfUser(a, "late", "still active", cfT0.Add(50*time.Hour)), cfBot(a, "late", "reply", cfT0.Add(50*time.Hour)))
	cfAppend(t, b, cfUser(c, "1", "topic message", cfT0), Message{Key: c, Role: RoleUser, Text: "no id", Time: cfT0})
	return owner, []pipeline.Key{a, c}
}

// cfNormalizeExport renders an export with store-specific cfIDs replaced by
// their order, so exports of different stores compare equal.
func cfNormalizeExport(t *testing.T, d OwnerData) string {
	t.Helper()
	d = cfCloneOwnerData(d)
	var msgIDs, sumIDs []int64
	for _, c := range d.Conversations {
		for _, m := range c.Messages {
			msgIDs = append(msgIDs, m.ID)
		}
		for _, s := range c.Summaries {
			sumIDs = append(sumIDs, s.ID)
		}
	}
	rank := func(all []int64) map[int64]int64 {
		s := slices.Clone(all)
		slices.Sort(s)
		m := map[int64]int64{}
		for i, id := range s {
			m[id] = int64(i + 1)
		}
		return m
	}
	mr, sr := rank(msgIDs), rank(sumIDs)
	for i := range d.Facts {
		d.Facts[i].ID = int64(i + 1)
		if len(d.Facts[i].Sources) == 0 {
			d.Facts[i].Sources = nil
		}
		if len(d.Facts[i].Tags) == 0 {
			d.Facts[i].Tags = nil
		}
	}
	for ci := range d.Conversations {
		c := &d.Conversations[ci]
		if len(c.Messages) == 0 {
			c.Messages = nil
		}
		if len(c.Summaries) == 0 {
			c.Summaries = nil
		}
		for i := range c.Messages {
			c.Messages[i].ID = mr[c.Messages[i].ID]
		}
		for i := range c.Summaries {
			s := &c.Summaries[i]
			s.ID = sr[s.ID]
			if s.Level > 1 {
				s.Sources = slices.Clone(s.Sources)
				for j, src := range s.Sources {
					if n, ok := sr[src]; ok {
						s.Sources[j] = n
					}
				}
			}
			if len(s.Sources) == 0 {
				s.Sources = nil
			}
		}
	}
	b, err := json.MarshalIndent(d, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func cfCloneOwnerData(d OwnerData) OwnerData {
	b, _ := json.Marshal(d)
	var out OwnerData
	_ = json.Unmarshal(b, &out)
	return out
}

func cfExport(t *testing.T, b Backend, owner string, key *pipeline.Key) OwnerData {
	t.Helper()
	d, err := b.Export(cfCtx, owner, key)
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	return d
}

func cfTestExportImport(t *testing.T, open func(t *testing.T) Backend) {
	src := open(t)
	owner, keys := cfRichOwner(t, src)
	exp := cfExport(t, src, owner, nil)
	if exp.Settings == nil || len(exp.Memories) != 2 || len(exp.Facts) != 2 || len(exp.Conversations) != 2 {
		t.Fatalf("export: %+v", exp)
	}
	if n := len(exp.Conversations[0].Summaries); n != 4 {
		t.Fatalf("exported %d summaries, want 4", n)
	}
	// Through the documented file format.
	var buf bytes.Buffer
	if err := WriteExport(&buf, NewExport(exp)); err != nil {
		t.Fatal(err)
	}
	doc, err := ReadExport(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := cfNormalizeExport(t, exp)
	for _, c := range []struct {
		name string
		dst  Backend
	}{{"same kind", open(t)}, {"other kind", cfOtherKind(t, src)}} {
		t.Run(c.name, func(t *testing.T) {
			rep, err := c.dst.Import(cfCtx, doc.Owners[0])
			if want := (ImportReport{Messages: 22, Summaries: 4, Memories: 2, Facts: 2}); err != nil || rep != want {
				t.Fatalf("import report %+v %v, want %+v", rep, err, want)
			}
			if got := cfNormalizeExport(t, cfExport(t, c.dst, owner, nil)); got != want {
				t.Fatalf("export after import differs:\n%s\nwant:\n%s", got, want)
			}
			rep, err = c.dst.Import(cfCtx, doc.Owners[0])
			if err != nil || rep != (ImportReport{}) {
				t.Fatalf("second import: %+v %v", rep, err)
			}
			if got := cfNormalizeExport(t, cfExport(t, c.dst, owner, nil)); got != want {
				t.Fatalf("export after the second import differs:\n%s\nwant:\n%s", got, want)
			}
			// The imported conversation goes on where it left off.
			a := keys[0]
			if st := cfStatus(t, c.dst, a); st.TurnsSinceSummary != cfStatus(t, src, a).TurnsSinceSummary || st.Total != 20 || st.HighestLevel != 2 {
				t.Fatalf("status after import: %+v", st)
			}
			if n := cfAppend(t, c.dst, cfUser(a, "0", "redelivered", cfT0)); n != 0 {
				t.Fatal("an imported platform id was stored again")
			}
			cfAppend(t, c.dst, cfUser(a, "new", "new message", cfT0.Add(100*time.Hour)))
			act := cfActive(t, c.dst, a)
			if act[len(act)-1].ID <= act[0].ID {
				t.Fatalf("new message id not after imported ones: %v", cfIDs(act))
			}
			s := cfArchive(t, c.dst, a, cfIDs(act), "after import", cfT0.Add(101*time.Hour), 0)
			if !slices.Equal(s.Sources, []int64{4}) {
				t.Fatalf("chunk after import %v, want [4]", s.Sources)
			}
			if hits := cfSearch(t, c.dst, a, Query{Text: "question"}); len(hits) != 6 {
				t.Fatalf("imported messages not searchable: %d hits", len(hits))
			}
			if f, _ := c.dst.Facts(cfCtx, owner, "lisbon", 0); len(f) != 1 {
				t.Fatalf("imported facts not searchable: %+v", f)
			}
		})
	}
	t.Run("one conversation", func(t *testing.T) {
		d := cfExport(t, src, owner, &keys[1])
		if d.Settings != nil || d.Memories != nil || len(d.Facts) != 1 || len(d.Conversations) != 1 || d.Conversations[0].Key != keys[1].String() {
			t.Fatalf("export of one conversation: %+v", d)
		}
		dst := cfOtherKind(t, src)
		if rep, err := dst.Import(cfCtx, d); err != nil || rep != (ImportReport{Messages: 2, Facts: 1}) {
			t.Fatalf("import: %+v %v", rep, err)
		}
		if got, want := cfNormalizeExport(t, cfExport(t, dst, owner, nil)), cfNormalizeExport(t, d); got != want {
			t.Fatalf("export after import differs:\n%s\nwant:\n%s", got, want)
		}
	})
	t.Run("merge into existing data", func(t *testing.T) {
		dst := open(t)
		a := keys[0]
		cfAppend(t, dst, cfUser(a, "0", "question 0", cfT0), cfUser(a, "x", "only here", cfT0))
		rep, err := dst.Import(cfCtx, exp)
		if err != nil || rep.Messages != 21 {
			t.Fatalf("import over existing messages: %+v %v", rep, err)
		}
		if st := cfStatus(t, dst, a); st.Total != 21 {
			t.Fatalf("total %d, want 21", st.Total)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		dst := open(t)
		for _, d := range []OwnerData{
			{},
			{Owner: "telegram:1", Conversations: []ConversationData{{Key: "telegram:2:"}}},
			{Owner: "telegram:1", Conversations: []ConversationData{{Key: "nonsense"}}},
			{Owner: "telegram:1", Memories: []UserMemory{{Key: "system_x"}}},
			{Owner: "telegram:1", Conversations: []ConversationData{{Key: "telegram:1:", Messages: []Message{{Role: "robot"}}}}},
			{Owner: "telegram:1", Conversations: []ConversationData{{Key: "telegram:1:", Summaries: []Summary{{Level: 0}}}}},
		} {
			if _, err := dst.Import(cfCtx, d); !errors.Is(err, ErrBadImport) {
				t.Errorf("Import(%+v): %v, want ErrBadImport", d, err)
			}
		}
		if o, _ := dst.Owners(cfCtx); o != nil {
			t.Fatalf("a failed import left owners %q", o)
		}
	})
}

// FuzzImport feeds arbitrary documents to ReadExport and imports whatever
// it accepts into fresh SQLite and JSON stores: an import never panics,
// fails only with ErrBadImport, a second import adds nothing, and both
// stores end up with the same data. Seeds, valid and broken documents, are
// in testdata/fuzz/FuzzImport. Run with -fuzzminimizetime=1s or so: opening
// two stores per input makes the default minimization outlast -fuzztime.
func FuzzImport(f *testing.F) {
	var buf bytes.Buffer
	WriteExport(&buf, NewExport(OwnerData{Owner: "telegram:1", Conversations: []ConversationData{{Key: "telegram:1:",
		Messages:  []Message{{Role: RoleUser, Text: "hi", PlatformID: "1", Time: cfT0}, {Role: RoleAssistant, Text: "hello", Active: false, ChunkID: 1, Time: cfT0}},
		Summaries: []Summary{{ID: 5, Level: 1, Text: "greeting", Sources: []int64{1}}, {ID: 6, Level: 2, Text: "meta", Sources: []int64{5}}}}}}))
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ReadExport(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrBadImport) {
				t.Fatalf("ReadExport: %v is not ErrBadImport", err)
			}
			return
		}
		if len(e.Owners) > 8 {
			return
		}
		s, j := cfOpenSQLite(t), cfOpenJSON(t)
		for _, d := range e.Owners {
			d = cfFixNow(d)
			rs, errS := s.Import(cfCtx, d)
			rj, errJ := j.Import(cfCtx, d)
			for _, err := range []error{errS, errJ} {
				if err != nil && !errors.Is(err, ErrBadImport) {
					t.Fatalf("Import: %v is not ErrBadImport", err)
				}
			}
			if (errS == nil) != (errJ == nil) || rs != rj {
				t.Fatalf("SQLite import %+v %v, JSON import %+v %v", rs, errS, rj, errJ)
			}
		}
		// Importing everything again adds nothing.
		for _, d := range e.Owners {
			d = cfFixNow(d)
			for _, b := range []Backend{s, j} {
				if rep, err := b.Import(cfCtx, d); (err == nil) != (d.Validate() == nil) || rep != (ImportReport{}) {
					t.Fatalf("%T: second import %+v %v", b, rep, err)
				}
			}
		}
		for _, d := range e.Owners {
			es, ej := cfExportFuzz(t, s, d.Owner), cfExportFuzz(t, j, d.Owner)
			if a, b := cfNormalizeExport(t, es), cfNormalizeExport(t, ej); a != b {
				t.Fatalf("exports differ:\nSQLite %s\nJSON %s", a, b)
			}
		}
	})
}

func cfExportFuzz(t *testing.T, b Backend, owner string) OwnerData {
	d, err := b.Export(cfCtx, owner, nil)
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	return d
}

// cfFixNow gives every time a store would default to "now" a fixed value,
// so two stores importing the same document store the same times.
func cfFixNow(d OwnerData) OwnerData {
	d = cfCloneOwnerData(d)
	fix := func(t *time.Time) {
		if t.IsZero() {
			*t = cfT0
		}
	}
	if d.Settings != nil {
		fix(&d.Settings.Created)
		fix(&d.Settings.Updated)
	}
	for i := range d.Memories {
		fix(&d.Memories[i].Created)
		fix(&d.Memories[i].Updated)
	}
	for i := range d.Facts {
		fix(&d.Facts[i].Created)
	}
	for i := range d.Conversations {
		for k := range d.Conversations[i].Summaries {
			fix(&d.Conversations[i].Summaries[k].Created)
		}
	}
	return d
}
