package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/datadir"
	"github.com/recallbot/recall/memory"
)

const migrateUsage = `usage: bot migrate                        apply the configured database's migrations and exit
       bot migrate --to postgres://…       copy the data directory (SQLite and JSON files) into PostgreSQL
       bot migrate --from postgres://…     copy a PostgreSQL database back into the data directory's SQLite file

Both copies go owner by owner, read each back and compare counts and a
fingerprint of the content, and are resumable: after an interruption run the
same command again. Stop the bot (every replica) first. --from fills an empty
data directory (data.dir, RECALL_DATA_DIR) only; then unset database.url and
start the bot on it. The database is left as it was.`

// runMigrate is `bot migrate`: without --to it opens the configured
// database — PostgreSQL when database.url is set (its migrations run under
// an advisory lock: replicas and a migrate job may start together), else
// data.dir's SQLite file — which applies what is pending, and says what it
// applied. With --to it copies the data directory into PostgreSQL
// (memory.CopyToPostgres: per owner, verified, resumable), with --from a
// database back into an empty data directory (memory.CopyFromPostgres),
// with a progress line on stderr.
func runMigrate(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) (err error) {
	fl := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	to := fl.String("to", "", "a postgres:// URL to copy the data directory into")
	from := fl.String("from", "", "a postgres:// URL to copy into the data directory")
	if err := fl.Parse(args); err != nil {
		return usageError(flagProblem(err) + migrateUsage)
	}
	if fl.NArg() > 0 {
		return usageError(fmt.Sprintf("unexpected argument %q\n%s", fl.Arg(0), migrateUsage))
	}
	switch {
	case *to != "" && *from != "":
		return usageError("--to and --from: one direction at a time\n" + migrateUsage)
	case *to != "":
		return copyToPostgres(ctx, cfg, *to, stdout, stderr)
	case *from != "":
		return copyFromPostgres(ctx, cfg, *from, stdout, stderr)
	}
	if cfg.Database.URL != "" {
		p, err := memory.OpenPostgres(ctx, cfg.Database.URL)
		if err != nil {
			return err
		}
		defer func() { _ = p.Close() }() // a pool: nothing to report
		v, err := p.SchemaVersion(ctx)
		if err != nil {
			return fmt.Errorf("reading the schema version: %w", err)
		}
		printApplied(stdout, "PostgreSQL", p.Applied(), v)
		return nil
	}
	// SQLite: the file is the bot's, so not beside a running bot.
	lock, err := datadir.Acquire(cfg.Data.Dir)
	if err != nil {
		return err
	}
	defer func() { _ = lock.Release() }()
	path := filepath.Join(cfg.Data.Dir, memory.DatabaseFile)
	s, err := memory.OpenSQLite(ctx, path)
	if err != nil {
		return err
	}
	defer s.Close()
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	printApplied(stdout, "SQLite "+path, s.Applied(), v)
	return nil
}

func printApplied(w io.Writer, what string, applied []string, version int) {
	if len(applied) == 0 {
		fmt.Fprintf(w, "%s: up to date (schema version %d)\n", what, version)
		return
	}
	fmt.Fprintf(w, "%s: applied %s (schema version %d)\n", what, strings.Join(applied, ", "), version)
}

// copyToPostgres copies data.dir into the database at target. It holds the
// data directory's lock (a bot writing there meanwhile would be copied only
// in part) and refuses a target that is not a postgres:// URL.
func copyToPostgres(ctx context.Context, cfg config.Config, target string, stdout, stderr io.Writer) (err error) {
	if err := checkPostgresURL("--to", target); err != nil {
		return err
	}
	if err := memory.StoreExists(cfg.Data.Dir); err != nil {
		return fmt.Errorf("nothing to copy: %w", err)
	}
	lock, err := datadir.Acquire(cfg.Data.Dir)
	if err != nil {
		return err
	}
	defer func() { _ = lock.Release() }()
	src, err := memory.Open(ctx, memory.Options{Dir: cfg.Data.Dir, MaxMemories: cfg.Memory.MaxMemories})
	if err != nil {
		return err
	}
	defer closeStore(src, &err)
	dst, err := memory.OpenPostgres(ctx, target)
	if err != nil {
		return err
	}
	defer func() { _ = dst.Close() }() // a pool: nothing to report
	bar := newProgressBar(stderr)
	rep, err := memory.CopyToPostgres(ctx, src, dst, bar.update)
	bar.done()
	printRefused(stderr, "PostgreSQL", rep.Refused)
	if err != nil {
		return fmt.Errorf("%w\n(what was copied stays, each owner whole; run the same command again to resume)", err)
	}
	c := rep.Source
	fmt.Fprintf(stdout, "copied %d owners (%d were there already): %d conversations, %d messages, %d summaries, %d notes, %d facts, %d settings; %d access decisions, %d pairing requests, %d usage days, %d handled ids, %d embeddings — verified in PostgreSQL (counts and fingerprints)\n",
		rep.Copied, rep.Skipped, c.Conversations, c.Messages, c.Summaries, c.Notes, c.Facts, c.Settings, c.Access, c.Pairing, c.Usage, c.Handled, c.Embeddings)
	printRefusedSummary(stdout, rep.Refused)
	printEmbeddingsLeft(stdout, c)
	if rep.Retired > 0 {
		fmt.Fprintf(stdout, "%d per-user JSON files were renamed to *.json%s (kept; on this machine they would have gone on answering beside the database)\n", rep.Retired, memory.JSONRetiredSuffix)
	}
	fmt.Fprintln(stdout, "Next: set database.url (RECALL_DATABASE_URL) to this database and start the bot; recall.db is left as it was.")
	return nil
}

// printRefused lists, one a line, the rows the target refused (the copy
// went on without them).
func printRefused(w io.Writer, into string, refused []memory.CopyRefusal) {
	for _, r := range refused {
		fmt.Fprintf(w, "could not copy %s (%s refused it)\n", r, into)
	}
}

// printRefusedSummary counts the rows the target refused, after the summary.
func printRefusedSummary(w io.Writer, refused []memory.CopyRefusal) {
	if len(refused) == 0 {
		return
	}
	msgs := 0
	for _, r := range refused {
		if r.Kind == "message" {
			msgs++
		}
	}
	fmt.Fprintf(w, "could not copy %d rows (%d messages; listed above, with the reason): the copy went on without them, and they are left out of the verification; the source still holds them\n", len(refused), msgs)
}

// printEmbeddingsLeft says how many vectors did not follow their message.
func printEmbeddingsLeft(w io.Writer, c memory.CopyCounts) {
	if c.EmbeddingsLeft > 0 {
		fmt.Fprintf(w, "%d embeddings were not copied (their message was not found in the copy): with memory.embeddings on, the bot embeds those messages again (or run bot reindex)\n", c.EmbeddingsLeft)
	}
}

// checkPostgresURL refuses what is not a postgres:// URL with a host.
func checkPostgresURL(flagName, s string) error {
	if u, err := url.Parse(s); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return usageError(flagName + ": want a postgres://user:password@host:port/database URL\n" + migrateUsage)
	}
	return nil
}

// copyFromPostgres copies the database at source into data.dir's SQLite
// file (memory.CopyFromPostgres: per owner, verified, resumable), holding
// the data directory's lock; an empty data directory only, or one holding
// an unfinished copy from the same database.
func copyFromPostgres(ctx context.Context, cfg config.Config, source string, stdout, stderr io.Writer) error {
	if err := checkPostgresURL("--from", source); err != nil {
		return err
	}
	lock, err := datadir.Acquire(cfg.Data.Dir)
	if err != nil {
		return err
	}
	defer func() { _ = lock.Release() }()
	src, err := memory.OpenPostgres(ctx, source)
	if err != nil {
		return err
	}
	defer func() { _ = src.Close() }() // a pool: nothing to report
	bar := newProgressBar(stderr)
	rep, err := memory.CopyFromPostgres(ctx, src, cfg.Data.Dir, bar.update)
	bar.done()
	printRefused(stderr, "SQLite", rep.Refused)
	switch {
	case errors.Is(err, memory.ErrTargetNotEmpty) || errors.Is(err, memory.ErrUnfinishedCopy):
		return err
	case err != nil:
		return fmt.Errorf("%w\n(what was copied stays, each owner whole; run the same command again to resume)", err)
	}
	c := rep.Source
	fmt.Fprintf(stdout, "copied %d owners (%d were there already): %d conversations, %d messages, %d summaries, %d notes, %d facts, %d settings; %d access decisions, %d pairing requests, %d usage days, %d handled ids, %d embeddings — verified in %s (counts and fingerprints)\n",
		rep.Copied, rep.Skipped, c.Conversations, c.Messages, c.Summaries, c.Notes, c.Facts, c.Settings, c.Access, c.Pairing, c.Usage, c.Handled, c.Embeddings, filepath.Join(cfg.Data.Dir, memory.DatabaseFile))
	printRefusedSummary(stdout, rep.Refused)
	printEmbeddingsLeft(stdout, c)
	fmt.Fprintln(stdout, "Next: unset database.url (RECALL_DATABASE_URL) and start the bot on this data directory; the database is left as it was.")
	return nil
}

// progressBar draws the copy's progress on a terminal (redrawn in place),
// or prints a line at every tenth elsewhere (a log keeps them).
type progressBar struct {
	w        io.Writer
	terminal bool
	shown    int // tenths printed (not on a terminal)
	drawn    bool
}

func newProgressBar(w io.Writer) *progressBar {
	f, ok := w.(*os.File)
	return &progressBar{w: w, terminal: ok && isTerminal(f)}
}

func (p *progressBar) update(done, total, messages int) {
	if total == 0 {
		return
	}
	if p.terminal {
		const width = 30
		n := done * width / total
		fmt.Fprintf(p.w, "\r[%s%s] %d/%d owners, %d messages", strings.Repeat("#", n), strings.Repeat(".", width-n), done, total, messages)
		p.drawn = true
		return
	}
	if tenth := done * 10 / total; tenth > p.shown || done == total {
		p.shown = tenth
		fmt.Fprintf(p.w, "copied %d/%d owners, %d messages\n", done, total, messages)
	}
}

func (p *progressBar) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}
