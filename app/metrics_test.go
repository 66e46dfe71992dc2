package app

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/metrics"
	"github.com/recallbot/recall/pipeline"
)

// Summaries written through the summarizer's store are counted by level.
func TestSummaryCounter(t *testing.T) {
	ctx := t.Context()
	s, err := memory.Open(ctx, memory.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	m := metrics.New(metrics.Options{})
	sc := summaryCounter{s, m}
	key := pipeline.Key{Channel: "telegram", Chat: "42"}
	var level1 []int64
	for i := range 2 {
		if err := s.Append(ctx, exchange(key, i)...); err != nil {
			t.Fatal(err)
		}
		active, err := s.Active(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := sc.Archive(ctx, key, []int64{active[0].ID, active[1].ID}, memory.Summary{Text: "summary"}, 1)
		if err != nil {
			t.Fatal(err)
		}
		level1 = append(level1, sum.ID)
	}
	if _, err := sc.Fold(ctx, key, level1, memory.Summary{Level: 2, Text: "folded"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Fold(ctx, key, level1, memory.Summary{Level: 2, Text: "again"}); err == nil {
		t.Fatal("folding inactive summaries succeeded")
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`recall_summaries_created_total{level="1"} 2` + "\n",
		`recall_summaries_created_total{level="2"} 1` + "\n",
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func exchange(key pipeline.Key, i int) []memory.Message {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
	id := fmt.Sprint(i)
	return []memory.Message{
		{Key: key, Role: memory.RoleUser, SenderID: key.Chat, PlatformID: id, Text: "message " + id, Time: at},
		{Key: key, Role: memory.RoleAssistant, ReplyTo: id, Text: "reply " + id, Time: at.Add(time.Millisecond)},
	}
}
