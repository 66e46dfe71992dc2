package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

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
		if err := s.Append(ctx, backupExchange(key, i)...); err != nil {
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
