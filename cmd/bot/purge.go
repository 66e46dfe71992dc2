package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/recallbot/recall/access"
	"github.com/recallbot/recall/app"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/datadir"
	"github.com/recallbot/recall/logs"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

const purgeUsage = "usage: bot purge --user ID | --conversation KEY | --older-than DAYS [--yes]\n" +
	"  --user telegram:123456     everything of that user: their chats, notes, facts, settings, and their messages in groups\n" +
	"  --conversation KEY         one conversation, e.g. telegram:123456: (or telegram:-100123:7 for a topic)\n" +
	"  --older-than DAYS          messages older than DAYS days (and what was built from them); with --user or\n" +
	"                             --conversation only theirs (not the user's messages in groups), alone every owner's\n" +
	"  --yes                      do not ask for confirmation"

// purgeLockedText is what `bot purge` says while a bot runs on the data
// directory: a purge beside it would race with its queued writes, its
// delivery journal and its caches.
func purgeLockedText(e *datadir.LockedError) string {
	who := "the bot"
	if e.PID > 0 {
		who += fmt.Sprintf(" (PID %d)", e.PID)
	}
	return fmt.Sprintf("%s is running on the data directory %s, and a purge beside it could be undone by what it writes next. "+
		"Either stop it, run bot purge again, and start it; or let the user send /purge in their chat with the bot "+
		"(in a group, a bot admin's /purge): the running bot purges as completely as bot purge does.", who, e.Dir)
}

// purgeRequest is what one `bot purge` deletes.
type purgeRequest struct {
	user      string       // --user: the owner and sender "channel:id"
	key       pipeline.Key // --conversation
	olderDays int          // --older-than; 0: any age
	yes       bool
}

func parsePurge(args []string) (purgeRequest, error) {
	var r purgeRequest
	fl := flag.NewFlagSet("purge", flag.ContinueOnError)
	fl.SetOutput(io.Discard) // the error is returned with the usage, to run's stderr
	user := fl.String("user", "", "")
	conv := fl.String("conversation", "", "")
	fl.IntVar(&r.olderDays, "older-than", 0, "")
	fl.BoolVar(&r.yes, "yes", false, "")
	if err := fl.Parse(args); err != nil {
		return r, usageError(flagProblem(err) + purgeUsage)
	}
	if fl.NArg() > 0 {
		return r, usageError(fmt.Sprintf("unexpected %q\n%s", fl.Arg(0), purgeUsage))
	}
	set := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["user"] && set["conversation"]:
		return r, usageError("give --user or --conversation, not both\n" + purgeUsage)
	case !set["user"] && !set["conversation"] && !set["older-than"]:
		return r, usageError("say what to delete\n" + purgeUsage)
	}
	if set["older-than"] && (r.olderDays < 1 || r.olderDays > 36500) {
		return r, usageError("--older-than takes a whole number of days from 1 to 36500, e.g. --older-than 30")
	}
	if set["user"] {
		u, err := access.ParseUserID(strings.TrimSpace(*user))
		if err != nil {
			return r, usageError(fmt.Sprintf("%q is not a user id: write it as channel:id, e.g. --user telegram:123456789", *user))
		}
		r.user = u
	}
	if set["conversation"] {
		k, err := pipeline.ParseKey(strings.TrimSpace(*conv))
		if err == nil {
			err = k.Validate()
		}
		if err != nil {
			return r, usageError(fmt.Sprintf("%q is not a conversation key: write it as channel:chat:thread, e.g. --conversation telegram:123456: (bot export lists the keys)", *conv))
		}
		r.key = k
	}
	return r, nil
}

// runPurge is `bot purge`: /purge from a shell, for an operator erasing a
// user (or a conversation, or old messages) as completely as /purge does.
// It holds the data directory (run refuses while a bot runs on it) and
// asks for confirmation on stdin unless --yes.
func runPurge(ctx context.Context, cfg config.Config, args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	r, err := parsePurge(args)
	if err != nil {
		return err
	}
	if err := storeExists(cfg); err != nil {
		return err
	}
	a, err := app.New(ctx, cfg, app.Parts{Journal: true, Logger: logs.New(stderr, logs.LevelWarn, cfg.Log.Format, cfg.Secrets())})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, a.Close()) }()
	var cutoff time.Time
	if r.olderDays > 0 {
		cutoff = time.Now().AddDate(0, 0, -r.olderDays)
	}
	what, err := describePurge(ctx, a.Store, r)
	if err != nil {
		return err
	}
	if !r.yes {
		fmt.Fprintf(stdout, "Delete %s? This cannot be undone. [y/N] ", what)
		answer, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(stdout, "Nothing was deleted.")
			return nil
		}
	}
	var own, groups memory.PurgeReport
	switch {
	case r.user != "":
		var sender *memory.SenderScope
		if cutoff.IsZero() {
			channel, id, _ := strings.Cut(r.user, ":")
			sender = &memory.SenderScope{Channel: channel, SenderID: id, Except: r.user}
		}
		own, groups, err = a.Erase(ctx, memory.PurgeScope{Owner: r.user, OlderThan: cutoff}, sender)
	case !r.key.IsZero():
		own, _, err = a.Erase(ctx, memory.PurgeScope{Owner: r.key.Owner(), Key: r.key, OlderThan: cutoff}, nil)
	default:
		owners, oerr := a.Store.Owners(ctx)
		if oerr != nil {
			return fmt.Errorf("listing the owners: %w", oerr)
		}
		for _, o := range owners {
			rep, _, perr := a.Erase(ctx, memory.PurgeScope{Owner: o, OlderThan: cutoff}, nil)
			own = own.Add(rep)
			if perr != nil {
				err = perr
				break
			}
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Deleted %d messages, %d summaries, %d facts and %d notes.", own.Messages, own.Summaries, own.Facts, own.Memories)
	if groups != (memory.PurgeReport{}) {
		fmt.Fprintf(stdout, " In the groups: %d messages (theirs and the bot's answers to them), %d summaries and %d facts built from them, and %d notes they wrote there.",
			groups.Messages, groups.Summaries, groups.Facts, groups.Memories)
	}
	fmt.Fprintln(stdout)
	return nil
}

// describePurge says what r deletes, with counts, for the question.
func describePurge(ctx context.Context, s *memory.Store, r purgeRequest) (string, error) {
	age := ""
	if r.olderDays > 0 {
		age = fmt.Sprintf(" older than %d days", r.olderDays)
	}
	switch {
	case r.user != "":
		d, err := s.Export(ctx, r.user, nil)
		if err != nil {
			return "", fmt.Errorf("reading the data of %s: %w", r.user, err)
		}
		msgs := 0
		for _, c := range d.Conversations {
			msgs += len(c.Messages)
		}
		if r.olderDays > 0 {
			return fmt.Sprintf("the messages%s of %s (of %d messages in %d conversations) and what was built from them", age, r.user, msgs, len(d.Conversations)), nil
		}
		what := fmt.Sprintf("everything of %s: %d messages in %d conversations, %d notes, %d facts and their settings", r.user, msgs, len(d.Conversations), len(d.Memories), len(d.Facts))
		channel, id, _ := strings.Cut(r.user, ":")
		n, g, err := s.SenderMessages(ctx, memory.SenderScope{Channel: channel, SenderID: id, Except: r.user})
		if err != nil {
			return "", err
		}
		if n > 0 {
			what += fmt.Sprintf(", and their %d messages in %d groups (with the bot's answers to them and the summaries built from them)", n, g)
		}
		return what, nil
	case !r.key.IsZero():
		k := r.key
		d, err := s.Export(ctx, k.Owner(), &k)
		if err != nil {
			return "", fmt.Errorf("reading the conversation %s: %w", k, err)
		}
		msgs := 0
		for _, c := range d.Conversations {
			msgs += len(c.Messages)
		}
		return fmt.Sprintf("the messages%s of the conversation %s (it has %d) and the summaries and facts built from them", age, k, msgs), nil
	}
	owners, err := s.Owners(ctx)
	if err != nil {
		return "", fmt.Errorf("listing the owners: %w", err)
	}
	return fmt.Sprintf("every message%s of all %d owners, and the summaries and facts built from them", age, len(owners)), nil
}
