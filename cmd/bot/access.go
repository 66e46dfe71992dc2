package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/recallbot/recall/access"
	"github.com/recallbot/recall/app"
	"github.com/recallbot/recall/config"
)

// accessRefresh is how soon a running bot applies a decision made with
// `bot allow` or `bot deny` beside it.
const accessRefresh = app.AccessRefresh

// openAccess opens the store and the access list as the bot sees them.
func openAccess(ctx context.Context, cfg config.Config) (*access.List, func(*error), error) {
	s, err := openStore(ctx, cfg, true)
	if err != nil {
		return nil, nil, err
	}
	a := access.New(cfg.Access.Open, cfg.Access.AllowedUsers,
		access.WithAdmins(cfg.Access.Admins...), access.WithStore(s))
	if err := a.Load(ctx); err != nil {
		_ = s.Close(context.Background())
		return nil, nil, err
	}
	return a, func(err *error) { closeStore(s, err) }, nil
}

// runAccess is `bot allow CODE|ID` and `bot deny CODE|ID`: the operator's
// /allow and /deny from a shell, working beside the running bot (it applies
// the decision within accessRefresh). With no argument it lists who waits.
func runAccess(ctx context.Context, cfg config.Config, allow bool, args []string, stdout io.Writer) (err error) {
	name := "deny"
	if allow {
		name = "allow"
	}
	if len(args) > 1 {
		return usageError(fmt.Sprintf("usage: bot %s CODE|ID (a pairing code from the log, or an id such as telegram:123456789)", name))
	}
	a, done, err := openAccess(ctx, cfg)
	if err != nil {
		return err
	}
	defer done(&err)
	if len(args) == 0 {
		printPending(a, stdout, name)
		return nil
	}
	arg := strings.TrimSpace(args[0])
	user, label := "", ""
	if r, ok := a.Request(arg); ok {
		user, label = r.UserID, r.UserID
		if r.Name != "" {
			label += " (" + r.Name + ")"
		}
	} else if strings.Contains(arg, ":") {
		if user, err = access.ParseUserID(arg); err != nil {
			return usageError(fmt.Sprintf("%q is not a user id: write it as channel:id, e.g. telegram:123456789", arg))
		}
		label = user
	} else if access.LooksLikeCode(arg) {
		return usageError(fmt.Sprintf("no one is waiting with the code %s (codes last 24 hours); run `bot %s` to list who is waiting", access.NormalizeCode(arg), name))
	} else {
		return usageError(fmt.Sprintf("%q is neither a pairing code nor an id such as telegram:123456789", arg))
	}
	if allow {
		if a.IsAdmin(user) {
			fmt.Fprintf(stdout, "%s is an admin; admins can always talk to the bot.\n", user)
			return nil
		}
		if err := a.Allow(ctx, user, "operator"); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s can talk to the bot now (a running bot applies it within %s). To undo: bot deny %s\n", label, accessRefresh, user)
		return nil
	}
	if err := a.Deny(ctx, user, "operator"); err != nil {
		if errors.Is(err, access.ErrCannotDeny) {
			return usageError(user + " is an admin and cannot be shut out; remove them from access.admins first")
		}
		return err
	}
	fmt.Fprintf(stdout, "%s can no longer talk to the bot (a running bot applies it within %s). To undo: bot allow %s\n", label, accessRefresh, user)
	return nil
}

func printPending(a *access.List, w io.Writer, name string) {
	p := a.Pending()
	if len(p) == 0 {
		fmt.Fprintf(w, "No one is waiting to be let in. Usage: bot %s CODE|ID\n", name)
		return
	}
	fmt.Fprintf(w, "Waiting to be let in (bot allow CODE lets one in, bot deny CODE turns one down):\n")
	for _, r := range p {
		fmt.Fprintf(w, "  %s  %s %s (asked %s)\n", r.Code, r.UserID, r.Name, r.Created.Format("2006-01-02 15:04"))
	}
}
