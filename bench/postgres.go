package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/recallbot/recall/bench/figures"
	"github.com/recallbot/recall/memory"
)

// PostgreSQL's rows of the search, turn and recall figures, given
// --postgres: the same measurements on the PostgreSQL backend, each beside
// SQLite's of the same run.

// measureSearchPostgres: archive search p50/p99 on the archive fixture
// copied into PostgreSQL (100k archived in a 1M-message database at full
// scale) vs SQLite on the same fixture (st), the same queries alternating.
func measureSearchPostgres(ctx context.Context, e *runEnv, st *memory.Store) ([]row, error) {
	if e.postgres == "" {
		return nil, nil
	}
	sc := e.scale
	u, err := figures.PostgresArchive(ctx, e.postgres, sc.archive, e.log)
	if err != nil {
		return nil, err
	}
	pg, err := memory.OpenPostgres(ctx, u)
	if err != nil {
		return nil, err
	}
	defer func() { _ = pg.Close() }() // a pool: nothing to report
	pgS, sqS, err := figures.SearchPostgres(ctx, pg, st, figures.BigKey, figures.SearchQueries(sc.queries))
	if err != nil {
		return nil, err
	}
	pd, sd := figures.Durations(pgS), figures.Durations(sqS)
	scaleS := fmt.Sprintf("%s msgs, %d queries, alternating", sc.archive, sc.queries)
	var rows []row
	for _, p := range []float64{0.5, 0.99} {
		o, s := figures.MS(figures.Pct(pd, p)), figures.MS(figures.Pct(sd, p))
		rows = append(rows, row{
			Figure: "archive search p" + strconv.Itoa(int(p*100)) + " on PostgreSQL vs SQLite",
			Ours:   fmtMS(o), Baseline: fmtMS(s), Ratio: fmtRatio(o, s), Scale: scaleS,
			Values: map[string]float64{"pg_ms": o, "sqlite_ms": s, "pg_hits": figures.MeanHits(pgS), "sqlite_hits": figures.MeanHits(sqS)},
		})
	}
	return rows, nil
}

// measureRecallPostgres: the recall figure run again with the chats in
// PostgreSQL (a fresh schema, dropped after), beside SQLite's result.
func measureRecallPostgres(ctx context.Context, e *runEnv, chats []figures.RecallChat, sqlite figures.RecallResult) ([]row, error) {
	if e.postgres == "" {
		return nil, nil
	}
	schema := "recall_bench_recall_" + strconv.Itoa(os.Getpid())
	u, err := figures.PostgresSchema(ctx, e.postgres, schema, true)
	if err != nil {
		return nil, err
	}
	defer func() { _ = figures.DropPostgresSchema(context.Background(), e.postgres, schema) }()
	fmt.Fprintln(e.log, "  again on PostgreSQL")
	res, err := figures.Recall(ctx, chats, figures.RecallOptions{DatabaseURL: u, Progress: func(f string, a ...any) { fmt.Fprintf(e.log, f+"\n", a...) }})
	if err != nil {
		return nil, fmt.Errorf("on PostgreSQL: %w", err)
	}
	o, s := res.Ours, sqlite.Ours
	scaleS := fmt.Sprintf("REALTALK: %d chats, %s turns, %d questions; 1,500-token snippets", res.Chats, thousands(int64(res.Turns)), o.Questions)
	po, ps := figures.MS(figures.Pct(o.Latency, 0.5)), figures.MS(figures.Pct(s.Latency, 0.5))
	qo, qs := figures.MS(figures.Pct(o.Latency, 0.99)), figures.MS(figures.Pct(s.Latency, 0.99))
	return []row{
		{Figure: "archive snippets: evidence recall on PostgreSQL vs SQLite", Ours: fmt.Sprintf("%.3f", o.Recall), Baseline: fmt.Sprintf("%.3f", s.Recall),
			Ratio: fmt.Sprintf("%+.1f points", 100*(o.Recall-s.Recall)), Scale: scaleS,
			Values: map[string]float64{"recall": o.Recall, "sqlite_recall": s.Recall, "any_found": o.AnyFound, "sqlite_any_found": s.AnyFound, "bm25_recall": res.Baseline.Recall}},
		{Figure: "archive snippets: retrieval p50 on PostgreSQL vs SQLite", Ours: fmtMS(po), Baseline: fmtMS(ps), Ratio: fmtRatio(po, ps), Scale: scaleS},
		{Figure: "archive snippets: retrieval p99 on PostgreSQL vs SQLite", Ours: fmtMS(qo), Baseline: fmtMS(qs), Ratio: fmtRatio(qo, qs), Scale: scaleS},
	}, nil
}

// measureTurnPostgres: turn overhead p50/p99 of the turn figure's big
// conversation (100k archived messages at full scale) on PostgreSQL vs
// SQLite, the same messages alternating between the two stores.
func measureTurnPostgres(ctx context.Context, e *runEnv) ([]row, error) {
	if e.postgres == "" {
		return nil, nil
	}
	sc := e.scale
	fmt.Fprintln(e.log, "  again on PostgreSQL, beside SQLite")
	res, err := figures.TurnOverheadPostgres(ctx, e.postgres, figures.TurnOptions{Archived: sc.turnArchived, Turns: sc.turns, Warmup: sc.warmup, Progress: e.log})
	if err != nil {
		return nil, fmt.Errorf("on PostgreSQL: %w", err)
	}
	scaleS := fmt.Sprintf("%d turns each, alternating; %s archived", sc.turns, thousands(int64(sc.turnArchived)))
	cpu := func(d []time.Duration) float64 { return figures.MS(figures.Sum(d)) / float64(max(1, len(d))) }
	var rows []row
	for _, p := range []float64{0.5, 0.99} {
		o, s := figures.MS(figures.Pct(res.Postgres, p)), figures.MS(figures.Pct(res.SQLite, p))
		rows = append(rows, row{
			Figure: "turn overhead p" + strconv.Itoa(int(p*100)) + " (chain without LLM) on PostgreSQL vs SQLite",
			Ours:   fmtMS(o), Baseline: fmtMS(s), Ratio: fmtRatio(o, s), Scale: scaleS,
			Values: map[string]float64{"pg_ms": o, "sqlite_ms": s,
				"pg_asm_ms": figures.MS(figures.Pct(res.PostgresAsm, p)), "sqlite_asm_ms": figures.MS(figures.Pct(res.SQLiteAsm, p)),
				"pg_cpu_ms_mean": cpu(res.PostgresCPU), "sqlite_cpu_ms_mean": cpu(res.SQLiteCPU)},
		})
	}
	return rows, nil
}
