package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/recallbot/recall/bench/figures"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
)

// scale sizes every figure.
type scale struct {
	name string

	ingestConvs, ingestMsgs, ingestRounds int

	archive       figures.ArchiveLayout
	queries       int
	searchRounds  int
	turnArchived  int
	turns, warmup int

	concConvs, concTurns int
	concC                []int
	delay                time.Duration // the fake LLM's

	tokenTurns []int // the turns reported; the run goes to the last

	rssConvs, rssTurns, rssC int
	rssSettle                time.Duration
	rssQuiet                 time.Duration // after the load, before the "once quiet" reading

	startup   figures.ArchiveLayout
	startRuns int

	smallConvs, smallTurns int // the small load of the "peak resident memory" pair

	firstTurns, firstRuns int
}

var fullScale = scale{
	name:        "full",
	ingestConvs: 50, ingestMsgs: 20_000, ingestRounds: 3,
	archive: figures.Archive1M, queries: 500, searchRounds: 1,
	turnArchived: 100_000, turns: 300, warmup: 20,
	concConvs: 1000, concTurns: 10, concC: []int{50, 100}, delay: 200 * time.Millisecond,
	tokenTurns: []int{10, 100, 1000},
	rssConvs:   1000, rssTurns: 10, rssC: 100, rssSettle: 2 * time.Second, rssQuiet: 40 * time.Second,
	startup: figures.Archive1G, startRuns: 3,
	smallConvs: 20, smallTurns: 10,
	firstTurns: 10, firstRuns: 5,
}

var quickScale = scale{
	name:        "quick",
	ingestConvs: 50, ingestMsgs: 4_000, ingestRounds: 1,
	archive: figures.Archive100k, queries: 200, searchRounds: 1,
	turnArchived: 10_000, turns: 60, warmup: 10,
	concConvs: 100, concTurns: 5, concC: []int{50}, delay: 200 * time.Millisecond,
	tokenTurns: []int{10, 100},
	rssConvs:   100, rssTurns: 5, rssC: 50, rssSettle: time.Second, rssQuiet: 5 * time.Second,
	startup: figures.Archive100k, startRuns: 3,
	smallConvs: 20, smallTurns: 10,
	firstTurns: 10, firstRuns: 3,
}

// runEnv is what the figures of one run share: the scale, the progress
// log, and the bot binary once built.
type runEnv struct {
	scale  scale
	log    io.Writer
	binDir string
	bin    string
	data   string // REALTALK's data/ folder ("" skips the recall figure)
	chats  string // which of its chats (--chats, e.g. "1-5"; "" all)
	// embeddings, when set (--embeddings-url), adds hybrid retrieval's
	// rows to the recall figure.
	embeddings *llm.Embedder
	// profiles is where the memory figure writes the bot's profiles ("":
	// none; else the bot is built with the pprof tag).
	profiles string
	botEnv   []string // more environment for the bot of the memory figure
	// postgres is a server's URL: the PostgreSQL rows of search, turn and recall
	// ("" skips them; bench/postgres.go).
	postgres string
}

// botBinary builds cmd/bot once per run.
func (e *runEnv) botBinary(ctx context.Context) (string, error) {
	if e.bin != "" {
		return e.bin, nil
	}
	dir, err := os.MkdirTemp("", "recall-bench-bin-")
	if err != nil {
		return "", err
	}
	e.binDir = dir
	fmt.Fprintln(e.log, "  building cmd/bot")
	var tags []string
	if e.profiles != "" {
		tags = append(tags, "pprof")
	}
	e.bin, err = figures.BuildBot(ctx, dir, tags...)
	return e.bin, err
}

func (e *runEnv) close() {
	if e.binDir != "" {
		os.RemoveAll(e.binDir)
	}
}

type figure struct {
	name string
	run  func(ctx context.Context, e *runEnv) ([]row, error)
}

var figureList = []figure{
	{"ingest", measureIngest},
	{"search", measureSearch},
	{"turn", measureTurn},
	{"concurrency", measureConcurrency},
	{"tokens", measureTokens},
	{"memory", measureMemory},
	{"smallload", measureSmallLoad},
	{"firstreply", measureFirstReply},
	{"startup", measureStartup},
	{"recall", measureRecall},
}

func figureNames() []string {
	var out []string
	for _, f := range figureList {
		out = append(out, f.name)
	}
	return out
}

func measureIngest(ctx context.Context, e *runEnv) ([]row, error) {
	sc := e.scale
	res, err := figures.Ingest(ctx, "", figures.IngestRows(sc.ingestConvs, sc.ingestMsgs), sc.ingestRounds)
	if err != nil {
		return nil, err
	}
	w, r, b := res.Rate(res.Writer, sc.ingestRounds), res.Rate(res.Raw, sc.ingestRounds), res.Rate(res.Batch, sc.ingestRounds)
	scaleS := fmt.Sprintf("%s msgs in %d convs × %d rounds", thousands(int64(sc.ingestMsgs)), sc.ingestConvs, sc.ingestRounds)
	vals := map[string]float64{"writer_msgs_s": w, "raw_msgs_s": r, "raw_batch_msgs_s": b}
	return []row{
		{Figure: "writer ingest vs raw INSERT, 1,000-row transactions", Ours: fmtRate(w, "msgs/s"), Baseline: fmtRate(r, "msgs/s"), Ratio: fmtRatio(w, r), Scale: scaleS, Values: vals},
		{Figure: "writer ingest vs raw INSERT … SELECT json_each, 1,000 rows", Ours: fmtRate(w, "msgs/s"), Baseline: fmtRate(b, "msgs/s"), Ratio: fmtRatio(w, b), Scale: scaleS},
	}, nil
}

func measureSearch(ctx context.Context, e *runEnv) ([]row, error) {
	sc := e.scale
	dir, err := figures.ArchiveFixture(ctx, sc.archive, e.log)
	if err != nil {
		return nil, err
	}
	st, err := memory.Open(ctx, memory.Options{Dir: dir})
	if err != nil {
		return nil, err
	}
	defer st.Close(context.Background())
	stock, err := figures.StockIndex(ctx, dir, sc.archive.Name+"-stockfts", e.log)
	if err != nil {
		return nil, err
	}
	res, err := figures.SearchArchive(ctx, st, stock, figures.BigKey, figures.SearchQueries(sc.queries), sc.searchRounds)
	if err != nil {
		return nil, err
	}
	od, xd, sd, ld := figures.Durations(res.Ours), figures.Durations(res.Exact), figures.Durations(res.Stock), figures.Durations(res.Like)
	fd := figures.Durations(res.FromIndex)
	scaleS := fmt.Sprintf("%s msgs, %d queries", sc.archive, sc.queries*sc.searchRounds)
	var rows []row
	for _, p := range []float64{0.5, 0.99} {
		pct := func(d []time.Duration) float64 { return figures.MS(figures.Pct(d, p)) }
		cpu := func(s []figures.SearchSample) float64 { return pct(figures.CPUTimes(s)) }
		o, x, s, l, fi := pct(od), pct(xd), pct(sd), pct(ld), pct(fd)
		pn := "p" + strconv.Itoa(int(p*100))
		rows = append(rows, row{
			Figure: "archive search " + pn + " vs seed 002 LIKE-and-count",
			Ours:   fmtMS(o), Baseline: fmtMS(l), Ratio: fmtRatio(l, o) + " faster", Scale: scaleS,
			Values: map[string]float64{"ours_ms": o, "like_ms": l, "ours_hits": figures.MeanHits(res.Ours), "like_hits": figures.MeanHits(res.Like)},
		}, row{
			Figure: "archive search " + pn + " vs stock FTS5 bm25() + conversation join",
			Ours:   fmtMS(o), Baseline: fmtMS(s), Ratio: fmtRatio(s, o) + " faster", Scale: scaleS,
			Values: map[string]float64{"ours_ms": o, "stock_ms": s, "stock_hits": figures.MeanHits(res.Stock), "overlap": res.Overlap,
				"ours_cpu_ms": cpu(res.Ours), "stock_cpu_ms": cpu(res.Stock)},
		}, row{
			Figure: "archive search " + pn + ", pruning on vs off",
			Ours:   fmtMS(o), Baseline: fmtMS(x), Ratio: fmtRatio(o, x), Scale: scaleS,
			Values: map[string]float64{"ours_ms": o, "exact_ms": x, "exact_hits": figures.MeanHits(res.Exact),
				"ours_cpu_ms": cpu(res.Ours), "exact_cpu_ms": cpu(res.Exact)},
		}, row{
			Figure: "archive search " + pn + ", doclists in memory vs read from FTS5",
			Ours:   fmtMS(o), Baseline: fmtMS(fi), Ratio: fmtRatio(o, fi), Scale: scaleS,
			Values: map[string]float64{"ours_ms": o, "fts5_ms": fi, "ours_cpu_ms": cpu(res.Ours), "fts5_cpu_ms": cpu(res.FromIndex)},
		})
	}
	pg, err := measureSearchPostgres(ctx, e, st)
	return append(rows, pg...), err
}

func measureTurn(ctx context.Context, e *runEnv) ([]row, error) {
	sc := e.scale
	res, err := figures.TurnOverhead(ctx, figures.TurnOptions{Archived: sc.turnArchived, Turns: sc.turns, Warmup: sc.warmup, Progress: e.log})
	if err != nil {
		return nil, err
	}
	scaleS := fmt.Sprintf("%d turns; %s archived vs a fresh conv", sc.turns, thousands(int64(sc.turnArchived)))
	var rows []row
	for _, p := range []float64{0.5, 0.99} {
		o, f := figures.MS(figures.Pct(res.Big, p)), figures.MS(figures.Pct(res.Fresh, p))
		rows = append(rows, row{
			Figure: "turn overhead p" + strconv.Itoa(int(p*100)) + " (chain without LLM) vs fresh conversation",
			Ours:   fmtMS(o), Baseline: fmtMS(f), Ratio: fmtRatio(o, f), Scale: scaleS,
			Values: map[string]float64{"ms": o, "fresh_ms": f, "asm_ms": figures.MS(figures.Pct(res.Asm, p)), "store_ms": figures.MS(figures.Pct(res.Store, p)),
				"cpu_ms_mean": figures.MS(figures.Sum(res.BigCPU)) / float64(max(1, len(res.BigCPU)))},
		})
	}
	rows = append(rows, row{
		Figure: "the big conversation's search index in memory, built in the background from open (turns meanwhile read FTS5)",
		Ours:   fmtMS(figures.MS(res.IndexReady)), Baseline: "—", Ratio: "—", Scale: thousands(int64(sc.turnArchived)) + " archived",
		Values: map[string]float64{"ms": figures.MS(res.IndexReady)},
	})
	// The same turns with hybrid retrieval on (memory.embeddings against a
	// fake endpoint answering at once), alternating with full text only.
	h, err := figures.TurnOverheadHybrid(ctx, figures.TurnOptions{Archived: sc.turnArchived, Turns: sc.turns, Warmup: sc.warmup, Progress: e.log})
	if err != nil {
		return nil, fmt.Errorf("with embeddings: %w", err)
	}
	hs := fmt.Sprintf("%d turns each, alternating; %s archived, 256 dims", sc.turns, thousands(int64(sc.turnArchived)))
	rows = append(rows, pairRows(h.PairResult, "with embeddings (0-ms fake endpoint) vs full text only", "fulltext", hs)...)
	// The same turns with pseudo-relevance feedback on (memory.feedback),
	// alternating with it off.
	fb, err := figures.TurnOverheadFeedback(ctx, figures.TurnOptions{Archived: sc.turnArchived, Turns: sc.turns, Warmup: sc.warmup, Progress: e.log})
	if err != nil {
		return nil, fmt.Errorf("with feedback: %w", err)
	}
	fs := fmt.Sprintf("%d turns each, alternating; %s archived", sc.turns, thousands(int64(sc.turnArchived)))
	rows = append(rows, pairRows(fb, "with feedback (memory.feedback) vs without", "without", fs)...)
	perMsg := float64(h.FixtureBytes[1]-h.FixtureBytes[0]) / float64(max(1, h.Vectors))
	rows = append(rows,
		row{Figure: "first turn with embeddings (its index loads; the turn waits ≤ 300 ms for it) vs a later p50", Ours: fmtMS(figures.MS(h.FirstVariant)),
			Baseline: fmtMS(figures.MS(figures.Pct(h.Variant, 0.5))), Ratio: fmtRatio(figures.MS(h.FirstVariant), figures.MS(figures.Pct(h.Variant, 0.5))), Scale: hs},
		row{Figure: "database bytes per embedded message (256 dims) vs the message itself", Ours: fmt.Sprintf("%.0f B", perMsg),
			Baseline: fmt.Sprintf("%.0f B", float64(h.FixtureBytes[0])/float64(sc.turnArchived)), Ratio: fmtRatio(perMsg, float64(h.FixtureBytes[0])/float64(sc.turnArchived)), Scale: hs,
			Values: map[string]float64{"bytes_per_vector": perMsg}},
	)
	pg, err := measureTurnPostgres(ctx, e)
	return append(rows, pg...), err
}

// pairRows are the p50 and p99 rows of a figure of two rigs alternating
// (figures.PairResult): "turn overhead pNN <what>", the variant's turns
// beside the base's, whose values are named with base.
func pairRows(pr figures.PairResult, what, base, scale string) []row {
	var rows []row
	mean := func(d []time.Duration) float64 { return figures.MS(figures.Sum(d)) / float64(max(1, len(d))) }
	for _, p := range []float64{0.5, 0.99} {
		o, f := figures.MS(figures.Pct(pr.Variant, p)), figures.MS(figures.Pct(pr.Base, p))
		rows = append(rows, row{
			Figure: "turn overhead p" + strconv.Itoa(int(p*100)) + " " + what,
			Ours:   fmtMS(o), Baseline: fmtMS(f), Ratio: fmtRatio(o, f), Scale: scale,
			Values: map[string]float64{"ms": o, base + "_ms": f, "asm_ms": figures.MS(figures.Pct(pr.VariantAsm, p)), base + "_asm_ms": figures.MS(figures.Pct(pr.BaseAsm, p)),
				"cpu_ms_mean": mean(pr.VariantCPU), base + "_cpu_ms_mean": mean(pr.BaseCPU)},
		})
	}
	return rows
}

func measureConcurrency(ctx context.Context, e *runEnv) ([]row, error) {
	sc := e.scale
	var rows []row
	for _, c := range sc.concC {
		res, err := figures.Concurrent(ctx, figures.ConcurrentOptions{Convs: sc.concConvs, Turns: sc.concTurns, Concurrency: c, Delay: sc.delay})
		if err != nil {
			return nil, err
		}
		turns := float64(sc.concConvs * sc.concTurns)
		rows = append(rows, row{
			Figure: fmt.Sprintf("throughput, C=%d LLM calls in flight, vs ideal C/%s", c, sc.delay),
			Ours:   fmtRate(res.Throughput, "turns/s"), Baseline: fmtRate(res.Ideal, "turns/s"), Ratio: fmtRatio(res.Throughput, res.Ideal),
			Scale: fmt.Sprintf("%s convs × %d turns, order verified", thousands(int64(sc.concConvs)), sc.concTurns),
			Values: map[string]float64{"throughput": res.Throughput, "ideal": res.Ideal, "wall_s": res.Wall.Seconds(),
				"cpu_ms_per_turn": figures.MS(res.CPU) / turns, "llm_calls": float64(res.LLMCalls), "new_conns": float64(res.NewConns),
				"notices": float64(res.Notices), "log_warnings": float64(res.LogWarnings)},
		})
		if res.LogWarnings > 0 {
			fmt.Fprintln(e.log, "  ", res.Warnings)
		}
	}
	return rows, nil
}

func measureTokens(ctx context.Context, e *runEnv) ([]row, error) {
	sc := e.scale
	last := slices.Max(sc.tokenTurns)
	res, err := figures.PromptTokens(ctx, last)
	if err != nil {
		return nil, err
	}
	var rows []row
	for _, t := range sc.tokenTurns {
		p, f := res["t"+strconv.Itoa(t)+"_prompt"], res["t"+strconv.Itoa(t)+"_full"]
		rows = append(rows, row{
			Figure: fmt.Sprintf("prompt tokens at turn %s vs full history", thousands(int64(t))),
			Ours:   thousands(int64(p)), Baseline: thousands(int64(f)), Ratio: fmtRatio(p, f),
			Scale:  fmt.Sprintf("1 conv, %s turns, summaries every 10", thousands(int64(last))),
			Values: map[string]float64{"prompt": p, "full": f, "max_prompt": res["max_prompt"], "summary_calls": res["summary_calls"]},
		})
	}
	return rows, nil
}

func measureMemory(ctx context.Context, e *runEnv) ([]row, error) {
	sc := e.scale
	bin, err := e.botBinary(ctx)
	if err != nil {
		return nil, err
	}
	res, err := figures.ResidentMemory(ctx, bin, figures.ResidentOptions{Convs: sc.rssConvs, Turns: sc.rssTurns, Delay: sc.delay, Concurrency: sc.rssC, Settle: sc.rssSettle, Quiet: sc.rssQuiet, Profiles: e.profiles, Env: e.botEnv})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(e.log, "  idle: %s anonymous + %s files; after the load: %s anonymous + %s files\n",
		fmtMiB(res.Idle.Anon), fmtMiB(res.Idle.File), fmtMiB(res.Loaded.Anon), fmtMiB(res.Loaded.File))
	load := fmt.Sprintf("real bot; %s users × %d msgs, %s LLM, C=%d", thousands(int64(sc.rssConvs)), sc.rssTurns, sc.delay, sc.rssC)
	idle := "real bot, Telegram mode, empty db"
	triple := func(a, b, c int64) string {
		return fmt.Sprintf("%.1f / %.1f / %.1f MiB", mib(a), mib(b), mib(c))
	}
	// Anonymous memory is what the host pays for this process alone (the
	// Go heap and stacks, SQLite's memories); the executable's mapped pages
	// in VmRSS are the kernel's to share and reclaim. PSS counts a page
	// shared with other processes in part.
	return []row{
		{Figure: "anonymous memory idle (RssAnon)", Ours: fmtMiB(res.Idle.Anon), Baseline: "—", Ratio: "—",
			Scale: idle, Values: map[string]float64{"anon_mib": mib(res.Idle.Anon), "pss_mib": mib(res.Idle.Pss), "rss_mib": mib(res.Idle.RSS), "file_mib": mib(res.Idle.File)}},
		{Figure: "anonymous memory after the load (RssAnon) vs idle", Ours: fmtMiB(res.Loaded.Anon), Baseline: fmtMiB(res.Idle.Anon), Ratio: fmtRatio(float64(res.Loaded.Anon), float64(res.Idle.Anon)),
			Scale: load, Values: map[string]float64{"anon_mib": mib(res.Loaded.Anon), "idle_anon_mib": mib(res.Idle.Anon), "pss_mib": mib(res.Loaded.Pss), "rss_mib": mib(res.Loaded.RSS),
				"file_mib": mib(res.Loaded.File), "load_s": res.Wall.Seconds(), "other_msgs": float64(res.Others)}},
		{Figure: fmt.Sprintf("anonymous memory %s after the load (RssAnon) vs idle", sc.rssQuiet), Ours: fmtMiB(res.Quiet.Anon), Baseline: fmtMiB(res.Idle.Anon), Ratio: fmtRatio(float64(res.Quiet.Anon), float64(res.Idle.Anon)),
			Scale: load, Values: map[string]float64{"anon_mib": mib(res.Quiet.Anon), "pss_mib": mib(res.Quiet.Pss), "rss_mib": mib(res.Quiet.RSS), "quiet_s": sc.rssQuiet.Seconds()}},
		{Figure: "peak anonymous memory during the load (RssAnon, read every 100 ms) vs idle", Ours: fmtMiB(res.PeakAnon), Baseline: fmtMiB(res.Idle.Anon), Ratio: fmtRatio(float64(res.PeakAnon), float64(res.Idle.Anon)),
			Scale: load, Values: map[string]float64{"peak_anon_mib": mib(res.PeakAnon), "peak_pss_mib": mib(res.PeakPss), "hwm_mib": mib(res.Loaded.Peak)}},
		{Figure: "PSS idle / after the load / peak (smaps_rollup)", Ours: triple(res.Idle.Pss, res.Loaded.Pss, res.PeakPss), Baseline: "—", Ratio: "—",
			Scale: load, Values: map[string]float64{"idle_pss_mib": mib(res.Idle.Pss), "pss_mib": mib(res.Loaded.Pss), "peak_pss_mib": mib(res.PeakPss)}},
		{Figure: "VmRSS idle / after the load / peak (VmHWM)", Ours: triple(res.Idle.RSS, res.Loaded.RSS, res.Loaded.Peak), Baseline: "—", Ratio: "—",
			Scale: load, Values: map[string]float64{"idle_rss_mib": mib(res.Idle.RSS), "rss_mib": mib(res.Loaded.RSS), "hwm_mib": mib(res.Loaded.Peak)}},
	}, nil
}

// measureSmallLoad runs the same small load twice on the real bot: with an
// OpenAI model (exact token counts with the BPE tables) and, the baseline,
// with a model counted by the chars/4 estimate, which loads no tables.
func measureSmallLoad(ctx context.Context, e *runEnv) ([]row, error) {
	sc := e.scale
	bin, err := e.botBinary(ctx)
	if err != nil {
		return nil, err
	}
	o := figures.ResidentOptions{Convs: sc.smallConvs, Turns: sc.smallTurns, Delay: sc.delay, Settle: sc.rssSettle}
	exact, err := figures.ResidentMemory(ctx, bin, o)
	if err != nil {
		return nil, err
	}
	o.Model = "llama3"
	estimate, err := figures.ResidentMemory(ctx, bin, o)
	if err != nil {
		return nil, err
	}
	return []row{{
		Figure: "peak resident memory (VmHWM), gpt-4o-mini (exact tokens) vs llama3 (estimate)",
		Ours:   fmtMiB(exact.Loaded.Peak), Baseline: fmtMiB(estimate.Loaded.Peak), Ratio: fmtRatio(float64(exact.Loaded.Peak), float64(estimate.Loaded.Peak)),
		Scale: fmt.Sprintf("real bot; %d users × %d msgs, %s LLM", sc.smallConvs, sc.smallTurns, sc.delay),
		Values: map[string]float64{"hwm_mib": mib(exact.Loaded.Peak), "estimate_hwm_mib": mib(estimate.Loaded.Peak),
			"rss_mib": mib(exact.Loaded.RSS), "estimate_rss_mib": mib(estimate.Loaded.RSS), "idle_mib": mib(exact.Idle.RSS)},
	}}, nil
}

// measureFirstReply compares the first reply of a fresh bot with the last
// of the same conversation.
func measureFirstReply(ctx context.Context, e *runEnv) ([]row, error) {
	sc := e.scale
	bin, err := e.botBinary(ctx)
	if err != nil {
		return nil, err
	}
	res, err := figures.FirstReply(ctx, bin, sc.firstTurns, sc.firstRuns)
	if err != nil {
		return nil, err
	}
	f, l := figures.MS(figures.Pct(res.First, 0.5)), figures.MS(figures.Pct(res.Last, 0.5))
	return []row{{
		Figure: fmt.Sprintf("first reply after start-up vs reply %d, median", sc.firstTurns),
		Ours:   fmtMS(f), Baseline: fmtMS(l), Ratio: fmtRatio(f, l),
		Scale: fmt.Sprintf("real bot, gpt-4o-mini, LLM at 0 ms; %d starts, 1 user × %d msgs", sc.firstRuns, sc.firstTurns),
		Values: map[string]float64{"first_ms": f, "last_ms": l, "added_ms": f - l,
			"first_max_ms": figures.MS(figures.Pct(res.First, 1)), "last_max_ms": figures.MS(figures.Pct(res.Last, 1))},
	}}, nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func measureStartup(ctx context.Context, e *runEnv) ([]row, error) {
	sc := e.scale
	bin, err := e.botBinary(ctx)
	if err != nil {
		return nil, err
	}
	big, err := figures.ArchiveFixture(ctx, sc.startup, e.log)
	if err != nil {
		return nil, err
	}
	size := figures.DatabaseSize(big)
	// Alternate the two databases: each start sees the same machine.
	var bigT, emptyT []time.Duration
	for range sc.startRuns {
		t, _, err := figures.Startup(ctx, bin, big, 1)
		if err != nil {
			return nil, err
		}
		bigT = append(bigT, t...)
		empty, err := os.MkdirTemp("", "recall-startup-empty-")
		if err != nil {
			return nil, err
		}
		t, _, err = figures.Startup(ctx, bin, empty, 1)
		os.RemoveAll(empty)
		if err != nil {
			return nil, err
		}
		emptyT = append(emptyT, t...)
	}
	o, b := figures.MS(figures.Pct(bigT, 0.5)), figures.MS(figures.Pct(emptyT, 0.5))
	return []row{{
		Figure: "start-up to ready (/healthz ok), median, vs empty database",
		Ours:   fmtMS(o), Baseline: fmtMS(b), Ratio: fmtRatio(o, b),
		Scale:  fmt.Sprintf("real bot; %s db (%s msgs), %d starts each, page cache warm", fmtMiB(size), thousands(int64(sc.startup.Total)), sc.startRuns),
		Values: map[string]float64{"ms": o, "empty_ms": b, "db_mib": mib(size)},
	}}, nil
}

// recallRows are a way of retrieving (what) beside another (vs): evidence
// recall (carrying values), any evidence found, recall per category,
// tokens used, retrieval p50 and p99.
func recallRows(what, vs string, o, b figures.RecallScore, cats []string, scale string, values map[string]float64) []row {
	score := func(name string, x, y float64, v map[string]float64) row {
		return row{Figure: what + ": " + name + " vs " + vs, Ours: fmt.Sprintf("%.3f", x), Baseline: fmt.Sprintf("%.3f", y), Ratio: fmtRatio(x, y), Scale: scale, Values: v}
	}
	rows := []row{score("evidence recall", o.Recall, b.Recall, values), score("any evidence found", o.AnyFound, b.AnyFound, nil)}
	for _, c := range cats {
		rows = append(rows, score("evidence recall, category "+c+",", o.ByCategory[c], b.ByCategory[c], nil))
	}
	ms := func(s figures.RecallScore, p float64) float64 { return figures.MS(figures.Pct(s.Latency, p)) }
	rows = append(rows, row{Figure: what + ": tokens used vs " + vs, Ours: thousands(int64(o.Tokens)), Baseline: thousands(int64(b.Tokens)), Ratio: fmtRatio(o.Tokens, b.Tokens), Scale: scale})
	for _, p := range []float64{0.5, 0.99} {
		rows = append(rows, row{Figure: what + ": retrieval p" + strconv.Itoa(int(p*100)) + " vs " + vs, Ours: fmtMS(ms(o, p)), Baseline: fmtMS(ms(b, p)), Ratio: fmtRatio(ms(o, p), ms(b, p)), Scale: scale})
	}
	return rows
}

func measureRecall(ctx context.Context, e *runEnv) ([]row, error) {
	if e.data == "" {
		fmt.Fprintln(e.log, "  skipped: --data names REALTALK's data/ folder (github.com/danny911kr/REALTALK)")
		return nil, nil
	}
	chats, err := figures.LoadRecallChats(e.data)
	if err != nil {
		return nil, err
	}
	if chats, err = figures.SelectRecallChats(chats, e.chats); err != nil {
		return nil, err
	}
	ropts := figures.RecallOptions{Progress: func(f string, a ...any) { fmt.Fprintf(e.log, f+"\n", a...) }}
	if e.embeddings != nil {
		ropts.Embeddings = e.embeddings
	}
	res, err := figures.Recall(ctx, chats, ropts)
	if err != nil {
		return nil, err
	}
	o, b := res.Ours, res.Baseline
	scaleS := fmt.Sprintf("REALTALK: %d chats, %s turns, %d questions; 1,500-token snippets", res.Chats, thousands(int64(res.Turns)), o.Questions)
	vals := func(s figures.RecallScore) map[string]float64 {
		v := map[string]float64{"recall": s.Recall, "any_found": s.AnyFound, "tokens": s.Tokens,
			"p50_ms": figures.MS(figures.Pct(s.Latency, 0.5)), "p99_ms": figures.MS(figures.Pct(s.Latency, 0.99))}
		for c, r := range s.ByCategory {
			v["recall_cat"+c] = r
		}
		return v
	}
	ov, bv := vals(o), vals(b)
	for k, v := range bv {
		ov["baseline_"+k] = v
	}
	cats := make([]string, 0, len(o.ByCategory))
	for c := range o.ByCategory {
		cats = append(cats, c)
	}
	slices.Sort(cats)
	rows := recallRows("archive snippets", "BM25 top-20", o, b, cats, scaleS, ov)
	rows = append(rows,
		row{Figure: "BM25 top-20 evidence recall: ours vs stock FTS5 bm25()", Ours: fmt.Sprintf("%.3f", b.Recall), Baseline: fmt.Sprintf("%.3f", res.Stock.Recall), Ratio: fmtRatio(b.Recall, res.Stock.Recall), Scale: scaleS,
			Values: map[string]float64{"recall": b.Recall, "stock_recall": res.Stock.Recall, "stock_any_found": res.Stock.AnyFound, "stock_tokens": res.Stock.Tokens,
				"stock_p50_ms": figures.MS(figures.Pct(res.Stock.Latency, 0.5)), "stock_p99_ms": figures.MS(figures.Pct(res.Stock.Latency, 0.99))}},
	)
	// With feedback beside without, whichever memory.feedback's default is
	// (ours is that one).
	rows = append(rows, recallRows("archive snippets with feedback", "without", res.Feedback, res.Plain, cats, scaleS+"; assemble.WithFeedback", vals(res.Feedback))...)
	if h := res.Hybrid; h != nil {
		hs := scaleS + "; embeddings " + e.embeddings.Model()
		hv := vals(*h)
		rows = append(rows,
			row{Figure: "archive snippets with embeddings: evidence recall vs full text only", Ours: fmt.Sprintf("%.3f", h.Recall), Baseline: fmt.Sprintf("%.3f", o.Recall), Ratio: fmtRatio(h.Recall, o.Recall), Scale: hs, Values: hv},
			row{Figure: "archive snippets with embeddings: any evidence found vs full text only", Ours: fmt.Sprintf("%.3f", h.AnyFound), Baseline: fmt.Sprintf("%.3f", o.AnyFound), Ratio: fmtRatio(h.AnyFound, o.AnyFound), Scale: hs},
			row{Figure: "archive snippets with embeddings: retrieval p50 vs full text only", Ours: fmtMS(hv["p50_ms"]), Baseline: fmtMS(ov["p50_ms"]), Ratio: fmtRatio(hv["p50_ms"], ov["p50_ms"]), Scale: hs + " (incl. the endpoint)"},
		)
	}
	pg, err := measureRecallPostgres(ctx, e, chats, res)
	return append(rows, pg...), err
}
