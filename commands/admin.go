package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/recallbot/recall/access"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// StatsSource counts what /stats shows (memory.Store). now picks "today"
// (its UTC day).
type StatsSource interface {
	Stats(ctx context.Context, now time.Time) (memory.Stats, error)
}

// AdminOptions configure the admin commands.
type AdminOptions struct {
	// Access is the bot's access list: who is an admin, and what /allow,
	// /deny and /pending change and read. Required.
	Access *access.List
	// Stats counts for /stats; nil: /stats says it is not available.
	Stats StatsSource
	// The limits in force (limits.messages_per_minute, limits.tokens_per_day),
	// shown by /stats; 0 = unlimited.
	MessagesPerMinute, TokensPerDay int
}

// Texts of the admin commands that tests and docs refer to.
const (
	notAdminText   = "This command is for the bot's admins."
	adminGroupText = "Send admin commands to me in a private chat."
	welcomeText    = "You're in — an admin let you in. Just write to me; /help lists what I can do."
)

// enableAdmin adds the admin commands — /allow, /deny, /pending, /stats —
// declared in adminCommands (Options.Admin). Only admins (Access.IsAdmin: access.admins and
// the terminal user) may run them, and only in a private chat (their answers
// name users); anyone else is told the command is for the bot's admins. They
// are not in List (the platforms' command menus are everyone's); /help shows
// them to admins.
func (c *Commands) enableAdmin(opts AdminOptions) {
	if opts.Access == nil {
		panic("commands.New: Options.Admin needs an access list")
	}
	c.isAdmin = opts.Access.IsAdmin
	admin := adminCommands(opts)
	for _, cmd := range admin {
		c.byName[cmd.Name] = cmd
	}
	// In a group the memory is everyone's there: only admins delete it.
	if purge := c.byName["purge"]; purge != nil {
		run := purge.Run
		purge.Run = func(ctx context.Context, call *Call) error {
			if call.Turn.In.IsGroup && !opts.Access.IsAdmin(call.Turn.In.UserID()) {
				return call.Reply(ctx, "In a group, only the bot's admins can delete its memory: it holds what everyone here said.")
			}
			return run(ctx, call)
		}
	}
	if help := c.byName["help"]; help != nil {
		everyone := help.Run
		help.Run = func(ctx context.Context, call *Call) error {
			if !opts.Access.IsAdmin(call.Turn.In.UserID()) || call.Turn.In.IsGroup {
				return everyone(ctx, call)
			}
			var b strings.Builder
			b.WriteString(call.HelpText())
			b.WriteString("\n\nFor admins (in a private chat):\n")
			for _, cmd := range admin {
				line := "/" + cmd.Name
				if cmd.Usage != "" {
					line += " " + cmd.Usage
				}
				fmt.Fprintf(&b, "%s — %s\n", line, cmd.Help)
			}
			return call.Reply(ctx, strings.TrimRight(b.String(), "\n"))
		}
	}
}

// adminCommands is the admin command list, in the order /help shows it.
func adminCommands(o AdminOptions) []*Command {
	a := &admin{AdminOptions: o}
	return []*Command{
		{Name: "allow", Usage: "<id|code>", Help: "let someone in: a code from /pending, an id like telegram:123456789, or a number on this channel", Run: a.only(a.runAllow)},
		{Name: "deny", Usage: "<id|code>", Help: "shut someone out, or turn down a request (/allow undoes it)", Run: a.only(a.runDeny)},
		{Name: "pending", Help: "who is waiting to be let in, with their codes", Run: a.only(a.runPending)},
		{Name: "stats", Help: "users, messages, tokens today, database size, write queue", Run: a.only(a.runStats)},
	}
}

type admin struct{ AdminOptions }

// only runs run for an admin in a private chat, and refuses anyone else.
func (a *admin) only(run func(ctx context.Context, c *Call) error) func(ctx context.Context, c *Call) error {
	return func(ctx context.Context, c *Call) error {
		user := c.Turn.In.UserID()
		if !a.Access.IsAdmin(user) {
			c.Turn.Logger().Info("admin command refused", "command", c.Name, "user", user)
			return c.Reply(ctx, notAdminText)
		}
		if c.Turn.In.IsGroup {
			return c.Reply(ctx, adminGroupText)
		}
		return run(ctx, c)
	}
}

// plain sends text as is: user names and ids must not be read as Markdown.
func plain(ctx context.Context, c *Call, text string) error {
	_, err := c.Turn.Out.Send(ctx, pipeline.Outbound{Key: c.Key, Text: text, Plain: true, ReplyTo: c.Turn.In.MessageID})
	return err
}

// target is whom /allow or /deny is about.
type target struct {
	user string
	req  *access.PairingRequest // their pending request, if any
}

// label is "telegram:123 (Ada)", or the id alone.
func (t target) label() string {
	if t.req != nil && t.req.Name != "" {
		return t.user + " (" + t.req.Name + ")"
	}
	return t.user
}

// resolve reads the argument of /allow and /deny: a pairing code, a full id
// ("telegram:123"), or a number (optionally "+") meaning that id on the
// admin's own channel.
func (a *admin) resolve(c *Call) (target, error) {
	arg := strings.TrimSpace(c.Args)
	example := fmt.Sprintf("Use /%[1]s <id|code>, e.g. /%[1]s ABC234 (a code from /pending), /%[1]s telegram:123456789, or /%[1]s 123456789 for an id on this channel.", c.Name)
	if arg == "" || len(strings.Fields(arg)) != 1 {
		return target{}, usage("%s", example)
	}
	if r, ok := a.Access.Request(arg); ok {
		return target{user: r.UserID, req: &r}, nil
	}
	var user string
	switch digits := strings.TrimPrefix(arg, "+"); {
	case strings.Contains(arg, ":"):
		u, err := access.ParseUserID(arg)
		if err != nil {
			return target{}, usage("%q is not a user id. %s", arg, example)
		}
		user = u
	case digits != "" && strings.Trim(digits, "0123456789") == "":
		if c.Key.Channel == "console" {
			return target{}, usage("Here, give the whole id with its channel, e.g. /%s telegram:%s.", c.Name, digits)
		}
		user = c.Key.Channel + ":" + digits
	case access.LooksLikeCode(arg):
		return target{}, usage("No one is waiting with the code %s: codes last 24 hours and end when someone is let in or turned down. /pending lists who is waiting.", access.NormalizeCode(arg))
	default:
		return target{}, usage("%s", example)
	}
	t := target{user: user}
	for _, r := range a.Access.Pending() {
		if r.UserID == user {
			t.req = &r
			break
		}
	}
	return t, nil
}

func (a *admin) runAllow(ctx context.Context, c *Call) error {
	t, err := a.resolve(c)
	if err != nil {
		return err
	}
	switch {
	case a.Access.IsAdmin(t.user):
		return plain(ctx, c, t.user+" is an admin; admins can always talk to me.")
	case a.Access.Allowed(t.user) && t.req == nil:
		return plain(ctx, c, t.user+" can already talk to me.")
	}
	if err := a.Access.Allow(ctx, t.user, c.Turn.In.UserID()); err != nil {
		return err
	}
	c.Turn.Logger().Info("admin allowed a user", "user", t.user, "admin", c.Turn.In.UserID())
	msg := "Done: " + t.label() + " can talk to me now."
	if t.req != nil && !t.req.Key.IsZero() && t.req.Key.Channel == c.Key.Channel {
		if _, err := c.Turn.Out.Send(ctx, pipeline.Outbound{Key: t.req.Key, Text: welcomeText, Plain: true}); err != nil {
			c.Turn.Logger().Warn("telling a user they are in", "user", t.user, "err", err)
			msg += " I couldn't tell them (they may have blocked me); they can just write to me."
		} else {
			msg += " I told them."
		}
	}
	return plain(ctx, c, msg)
}

func (a *admin) runDeny(ctx context.Context, c *Call) error {
	t, err := a.resolve(c)
	if err != nil {
		return err
	}
	if err := a.Access.Deny(ctx, t.user, c.Turn.In.UserID()); err != nil {
		if errors.Is(err, access.ErrCannotDeny) {
			return plain(ctx, c, t.user+" is an admin and cannot be shut out. Remove them from access.admins first.")
		}
		return err
	}
	c.Turn.Logger().Info("admin denied a user", "user", t.user, "admin", c.Turn.In.UserID())
	msg := "Done: " + t.label() + " can no longer talk to me."
	if t.req != nil {
		msg = "Done: I turned down " + t.label() + "; they can no longer talk to me."
	}
	if a.Access.InConfig(t.user) {
		msg += " access.allowed_users lists them; this overrides it."
	} else if a.Access.IsOpen() {
		msg += " The bot is open (access.open), but not to them."
	}
	return plain(ctx, c, msg+" /allow "+t.user+" undoes it.")
}

func (a *admin) runPending(ctx context.Context, c *Call) error {
	if err := noArgs(c); err != nil {
		return err
	}
	reqs := a.Access.Pending()
	if len(reqs) == 0 {
		msg := "Nobody is waiting to be let in."
		if a.Access.IsOpen() {
			msg += " (The bot is open: access.open lets everyone in.)"
		}
		return plain(ctx, c, msg)
	}
	now := c.opts.Now()
	var b strings.Builder
	fmt.Fprintf(&b, "Waiting to be let in (%d):\n", len(reqs))
	for _, r := range reqs {
		who := r.UserID
		if r.Name != "" {
			who += " (" + r.Name + ")"
		}
		fmt.Fprintf(&b, "• %s — %s, asked %s (%s ago), code valid %s more\n",
			r.Code, who, r.Created.UTC().Format("2006-01-02 15:04 UTC"), spanText(now.Sub(r.Created)), spanText(r.Expires.Sub(now)))
	}
	b.WriteString("/allow CODE lets someone in; /deny CODE turns them down.")
	return plain(ctx, c, b.String())
}

func (a *admin) runStats(ctx context.Context, c *Call) error {
	if err := noArgs(c); err != nil {
		return err
	}
	if a.Stats == nil {
		return plain(ctx, c, "Statistics are not available.")
	}
	st, err := a.Stats.Stats(ctx, c.opts.Now())
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Users: %s wrote to me, in %s.\n", count(st.Senders, "person", "people"), count(st.Owners, "chat", "chats"))
	fmt.Fprintf(&b, "Access: %s allowed, %d denied, %d waiting (/pending), open: %s.\n",
		thousands(len(a.Access.Users())), len(a.Access.Denied()), len(a.Access.Pending()), yesNoText(a.Access.IsOpen()))
	fmt.Fprintf(&b, "Messages: %s stored, %s today (UTC).\n", thousands64(st.Messages), thousands64(st.MessagesToday))
	fmt.Fprintf(&b, "Tokens today: %s, by %s.\n", thousands64(st.TokensToday), count(st.TokenUsers, "user", "users"))
	fmt.Fprintf(&b, "Limits: %s, %s (admins exempt).\n",
		limitText(a.MessagesPerMinute, "messages per minute"), limitText(a.TokensPerDay, "tokens per day")+" per user")
	fmt.Fprintf(&b, "Database: %s (recall.db %s, WAL %s)", sizeText(st.DBBytes+st.WALBytes), sizeText(st.DBBytes), sizeText(st.WALBytes))
	if st.JSONOwners > 0 {
		fmt.Fprintf(&b, "; JSON files: %s for %s owners", sizeText(st.JSONBytes), thousands(st.JSONOwners))
	}
	fmt.Fprintf(&b, "; schema %d.\n", st.SchemaVersion)
	q := st.Queue
	fmt.Fprintf(&b, "Write queue: %s waiting, %s written since start, %s failed attempts",
		thousands(q.Queued), thousands64(q.Written), thousands64(q.Failures))
	if q.Failing != nil {
		fmt.Fprintf(&b, " — writes failing since %s (see the log)", q.Since.UTC().Format("2006-01-02 15:04 UTC"))
	}
	b.WriteString(".")
	return plain(ctx, c, b.String())
}

// count writes "1 person", "12 people".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return thousands(n) + " " + many
}

func yesNoText(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func limitText(n int, what string) string {
	if n <= 0 {
		return "no limit on " + what
	}
	return thousands(n) + " " + what
}

// spanText writes a span of time for people: "just now"/"under a minute",
// "5 min", "2 h 5 min", "3 d 4 h".
func spanText(d time.Duration) string {
	if d < time.Minute {
		return "under a minute"
	}
	mins := int(d / time.Minute)
	days, hours, m := mins/(24*60), mins/60%24, mins%60
	switch {
	case days > 0 && hours > 0:
		return fmt.Sprintf("%d d %d h", days, hours)
	case days > 0:
		return fmt.Sprintf("%d d", days)
	case hours > 0 && m > 0:
		return fmt.Sprintf("%d h %d min", hours, m)
	case hours > 0:
		return fmt.Sprintf("%d h", hours)
	default:
		return fmt.Sprintf("%d min", m)
	}
}

// sizeText writes a byte count: "512 B", "40.0 KB", "12.4 MB".
func sizeText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n)/unit, "KB"
	for _, s := range []string{"MB", "GB", "TB"} {
		if v < unit {
			break
		}
		v, suffix = v/unit, s
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}

func thousands(n int) string { return thousands64(int64(n)) }

// thousands64 writes n with a comma every three digits: 4812 → "4,812".
func thousands64(n int64) string {
	s := fmt.Sprint(n)
	sign := ""
	if n < 0 {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return sign + b.String()
}
