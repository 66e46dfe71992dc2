// Command bench reproduces every performance figure of Recall in one run
// and prints them as one table, each figure beside its baseline measured in
// the same run:
//
//	go run ./bench                  # the figures at full scale (~15 min; builds cached fixtures once)
//	go run ./bench --quick          # small scale, under a minute
//	go run ./bench --only=search,turn --json
//
// Fixtures are cached in $TMPDIR (recall-bench-*), shared with the Go
// benchmarks of ./memory and ./bench; the program says when it builds one.
// The figures: writer ingest vs raw batched INSERTs; archive search p50/p99
// vs seed 002's LIKE scan and stock FTS5 bm25(), and with each optional part
// of it off; turn overhead p50/p99 in a conversation with a
// big archive vs a fresh one; 1,000 conversations × 10 turns with a 200 ms
// fake LLM, throughput vs the ideal C / 0.2 s; prompt tokens at turns
// 10/100/1,000 vs the full history; the real bot's resident memory idle and
// after a load; its peak resident memory under a small load with exact token
// counts vs the chars/4 estimate; its first reply after start-up vs the
// tenth; its start-up time to ready with a 1 GB database vs an empty one;
// and, given --data (REALTALK's data/ folder), the evidence recall of the
// archive snippets vs plain BM25 top-20:
//
//	go run ./bench --only=recall --data ~/REALTALK/data
//	go run ./bench --only=recall --data ~/REALTALK/data --chats 1-5   (a half, by chat number)
//
// With an embeddings endpoint, the recall figure scores hybrid retrieval
// (memory.embeddings) too:
//
//	go run ./bench --only=recall --data ~/REALTALK/data --embeddings-url http://localhost:11434/v1 --embeddings-model nomic-embed-text
//
// With --postgres URL, the search, turn and recall figures add PostgreSQL's
// rows beside SQLite's (bench/postgres.go).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/recallbot/recall/llm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "small fixtures and loads: the whole run takes under a minute")
	only := fs.String("only", "", "comma-separated figures to run: "+strings.Join(figureNames(), ","))
	asJSON := fs.Bool("json", false, "print the table as JSON")
	data := fs.String("data", "", "the data/ folder of REALTALK (github.com/danny911kr/REALTALK) for the recall figure")
	chats := fs.String("chats", "", "the REALTALK chats the recall figure asks, by number: \"1-5\", \"6-10\", \"1,3\" (default all): a change should hold on each half")
	embURL := fs.String("embeddings-url", "", "an OpenAI-compatible embeddings endpoint (ending in /v1): the recall figure scores hybrid retrieval too")
	embModel := fs.String("embeddings-model", "", "the embeddings model for --embeddings-url (e.g. text-embedding-3-small, nomic-embed-text)")
	embDims := fs.Int("embeddings-dims", 0, "the vector size to ask --embeddings-url for (0: the model's own)")
	bot := fs.String("bot", "", "run this bot binary in the real-bot figures instead of building cmd/bot (e.g. the release build: CGO_ENABLED=0 go build -trimpath -ldflags \"-s -w\" ./cmd/bot)")
	botEnv := fs.String("botenv", "", "comma-separated KEY=value pairs added to the bot's environment in the memory figure (e.g. GOGC=50)")
	profiles := fs.String("profiles", "", "a folder for the real bot's heap and goroutine profiles, idle and after the memory figure's load (the bot is then built with -tags pprof)")
	pg := fs.String("postgres", "", "a postgres:// URL: the search, turn and recall figures add PostgreSQL rows (in schemas and databases of their own)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	sc := fullScale
	if *quick {
		sc = quickScale
	}
	names, err := selectFigures(*only)
	if err != nil {
		return err
	}
	var emb *llm.Embedder
	if *embURL != "" {
		// The key, if the endpoint needs one, comes from the environment.
		e, err := llm.NewEmbedder(llm.EmbedderOptions{BaseURL: *embURL, APIKey: os.Getenv("RECALL_MEMORY_EMBEDDINGS_API_KEY"), Model: *embModel, Dimensions: *embDims})
		if err != nil {
			return fmt.Errorf("--embeddings-url: %w", err)
		}
		emb = e
	}
	rep, err := measure(ctx, sc, names, runEnv{data: *data, chats: *chats, embeddings: emb, postgres: *pg, profiles: *profiles, bin: *bot, botEnv: splitList(*botEnv)}, stderr)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.write(stdout)
	return nil
}

// measure runs the figures names at scale sc, in the order of figureList;
// progress goes to log. opts holds the options of the run (data, profiles,
// bin).
func measure(ctx context.Context, sc scale, names []string, opts runEnv, log io.Writer) (report, error) {
	rep := report{Machine: describeMachine(), Scale: sc.name}
	start := time.Now()
	env := &opts
	env.scale, env.log = sc, log
	defer env.close()
	for _, f := range figureList {
		if !slices.Contains(names, f.name) {
			continue
		}
		fmt.Fprintf(log, "measuring %s …\n", f.name)
		t := time.Now()
		rows, err := f.run(ctx, env)
		if err != nil {
			return rep, fmt.Errorf("%s: %w", f.name, err)
		}
		fmt.Fprintf(log, "  %s took %s\n", f.name, time.Since(t).Round(100*time.Millisecond))
		rep.Rows = append(rep.Rows, rows...)
	}
	rep.Took = time.Since(start).Round(time.Second).String()
	return rep, nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// selectFigures parses --only.
func selectFigures(only string) ([]string, error) {
	if strings.TrimSpace(only) == "" {
		return figureNames(), nil
	}
	var out []string
	for _, n := range strings.Split(only, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(figureNames(), n) {
			return nil, fmt.Errorf("--only: no figure %q; the figures are %s", n, strings.Join(figureNames(), ", "))
		}
		out = append(out, n)
	}
	return out, nil
}
