package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/bench/figures"
	"github.com/recallbot/recall/memory/pgtest"
)

// tinyScale runs the in-process figures in a second or two: the program's
// path end to end, at sizes that say nothing about speed.
var tinyScale = scale{
	name:        "tiny",
	ingestConvs: 5, ingestMsgs: 200, ingestRounds: 1,
	archive: figures.Archive100k, queries: 20, searchRounds: 1, // not run here: the fixture takes half a minute
	turnArchived: 200, turns: 4, warmup: 1,
	concConvs: 10, concTurns: 3, concC: []int{5}, delay: 20 * time.Millisecond,
	tokenTurns: []int{10, 12},
}

// TestTinyRun measures ingest, turn overhead (not with -short: it builds a
// turn fixture; on PostgreSQL too when RECALL_TEST_POSTGRES_URL is set),
// concurrency and prompt tokens at tiny sizes and checks the table has
// every row with its numbers.
func TestTinyRun(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // the turn fixture is built and cached here
	names := []string{"ingest", "turn", "concurrency", "tokens"}
	want := []string{
		"writer ingest vs raw INSERT, 1,000-row transactions",
		"writer ingest vs raw INSERT … SELECT json_each, 1,000 rows",
		"turn overhead p50 (chain without LLM) vs fresh conversation",
		"turn overhead p99 (chain without LLM) vs fresh conversation",
		"the big conversation's search index in memory, built in the background from open (turns meanwhile read FTS5)",
		"turn overhead p50 with embeddings (0-ms fake endpoint) vs full text only",
		"turn overhead p99 with embeddings (0-ms fake endpoint) vs full text only",
		"turn overhead p50 with feedback (memory.feedback) vs without",
		"turn overhead p99 with feedback (memory.feedback) vs without",
		"first turn with embeddings (its index loads; the turn waits ≤ 300 ms for it) vs a later p50",
		"database bytes per embedded message (256 dims) vs the message itself",
		"throughput, C=5 LLM calls in flight, vs ideal C/20ms",
		"prompt tokens at turn 10 vs full history",
		"prompt tokens at turn 12 vs full history",
	}
	env := runEnv{}
	if testing.Short() {
		names = slices.DeleteFunc(names, func(n string) bool { return n == "turn" })
		want = slices.Delete(want, 2, 11)
	} else if u := os.Getenv(pgtest.EnvURL); u != "" {
		// With a PostgreSQL server: the turn figure's rows on it too.
		env.postgres = u
		t.Cleanup(func() {
			if err := figures.DropPostgresTurnFixture(context.Background(), u, tinyScale.turnArchived); err != nil {
				t.Error(err)
			}
		})
		want = slices.Insert(want, 11,
			"turn overhead p50 (chain without LLM) on PostgreSQL vs SQLite",
			"turn overhead p99 (chain without LLM) on PostgreSQL vs SQLite")
	}
	rep, err := measure(context.Background(), tinyScale, names, env, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rep.Rows), len(want), rep.Rows)
	}
	for i, r := range rep.Rows {
		if r.Figure != want[i] {
			t.Errorf("row %d is %q, want %q", i, r.Figure, want[i])
		}
		if r.Ours == "" || r.Baseline == "" || r.Ratio == "" || r.Scale == "" || strings.Contains(r.Ours+r.Baseline, "NaN") {
			t.Errorf("row %q has an empty or NaN cell: %+v", r.Figure, r)
		}
	}
	n := len(want)
	v := rep.Rows[n-3].Values // concurrency: 30 turns at 20 ms, 5 in flight: ideal 250/s
	if v["ideal"] != 250 || v["throughput"] <= 0 || v["throughput"] > v["ideal"]*1.01 || v["llm_calls"] != 30 {
		t.Errorf("concurrency values %v: want ideal 250, 0 < throughput ≤ ideal, 30 LLM calls", v)
	}
	if p := rep.Rows[n-2].Values; p["prompt"] <= 0 || p["prompt"] > p["full"] {
		t.Errorf("prompt tokens at turn 10: %v, want 0 < prompt ≤ full", p)
	}
	var out bytes.Buffer
	rep.write(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.Contains(lines[0], "tiny scale") || !strings.Contains(lines[1], "cores") {
		t.Errorf("header:\n%s\n%s", lines[0], lines[1])
	}
	if n := len(lines); n != 3+2+len(want) { // header, blank, column names, rule, rows
		t.Fatalf("%d lines, want %d:\n%s", n, 3+2+len(want), out.String())
	}
}

// TestTableAligned: every row's separators stand in the same columns, and
// JSON carries the same rows.
func TestTableAligned(t *testing.T) {
	rep := report{Machine: machine{CPU: "Test CPU", Cores: 2, OS: "linux/amd64", Go: "go1.26", Date: "2026-01-01 00:00 UTC"},
		Scale: "quick", Took: "1s", Rows: []row{
			{Figure: "archive search p50 vs seed 002 LIKE-and-count", Ours: fmtMS(1.234), Baseline: fmtMS(406.6), Ratio: fmtRatio(406.6, 1.234) + " faster", Scale: "10k archived in 100k msgs"},
			{Figure: "prompt tokens at turn 1,000 vs full history", Ours: thousands(5413), Baseline: thousands(171007), Ratio: fmtRatio(5413, 171007), Scale: "1 conv"},
			{Figure: "start-up", Ours: fmtMS(4008.4), Baseline: fmtMS(0), Ratio: fmtRatio(4008.4, 0), Scale: "résumé ünïcode"},
		}}
	var out bytes.Buffer
	rep.write(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")[3:]
	bars := func(s string) []int {
		var at []int
		for i, r := range []rune(s) {
			if r == '|' {
				at = append(at, i)
			}
		}
		return at
	}
	want := bars(lines[0])
	if len(want) != 4 {
		t.Fatalf("column names %q: want 4 separators", lines[0])
	}
	for _, l := range lines[2:] {
		if got := bars(l); len(got) != 4 || got[0] != want[0] || got[3] != want[3] {
			t.Errorf("row %q: separators at %v, want %v", l, got, want)
		}
	}
	for _, s := range []string{"1.23 ms", "407 ms", "329× faster", "5,413", "171,007", "0.032×", "4,008 ms", "| —"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, out.String())
		}
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back report
	if err := json.Unmarshal(raw, &back); err != nil || len(back.Rows) != 3 || back.Machine.CPU != "Test CPU" {
		t.Errorf("JSON round trip: %v, %+v", err, back)
	}
}

func TestSelectFigures(t *testing.T) {
	all, err := selectFigures("")
	if err != nil || len(all) != len(figureList) {
		t.Errorf(`selectFigures("") = %v, %v; want every figure`, all, err)
	}
	got, err := selectFigures(" search, startup ,")
	if err != nil || strings.Join(got, ",") != "search,startup" {
		t.Errorf("selectFigures = %v, %v; want [search startup]", got, err)
	}
	if _, err := selectFigures("search,speed"); err == nil || !strings.Contains(err.Error(), `"speed"`) {
		t.Errorf("unknown figure: err = %v, want it named", err)
	}
}

func TestRunRejectsArguments(t *testing.T) {
	var errOut bytes.Buffer
	if err := run(context.Background(), []string{"--only=nope"}, io.Discard, &errOut); err == nil {
		t.Error("--only=nope: no error")
	}
	if err := run(context.Background(), []string{"extra"}, io.Discard, &errOut); err == nil {
		t.Error("a positional argument: no error")
	}
}

// testLog writes the program's progress to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
