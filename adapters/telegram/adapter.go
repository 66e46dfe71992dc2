package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/backoff"
	"github.com/recallbot/recall/pipeline"
)

// Adapter connects one Telegram bot to the pipeline: it receives updates
// (long polling or webhook), normalizes them, makes them durable with accept,
// hands them to submit, and sends the answers (Sender).
type Adapter struct {
	opts    Options
	api     *bot.Bot
	poller  *http.Client // for getUpdates, which the library must not run
	files   *http.Client // downloads of files users sent (Media.Fetch)
	submit  pipeline.SubmitFunc
	accept  pipeline.AcceptFunc
	log     *slog.Logger
	out     *sender
	data    *callbackData
	known   map[string]bool // command names, lowercase (Options.KnownCommands)
	notices *noticeGate     // which media messages get the text-only notice

	// Timing, replaceable in tests.
	retryBase, retryMax time.Duration
	callTimeout         time.Duration // for calls made in the background

	running  atomic.Bool
	health   atomic.Pointer[error] // the last problem receiving updates; nil when fine
	polling  atomic.Bool           // long polling (Health then also watches lastPoll)
	lastPoll atomic.Int64          // unix nanoseconds of the last completed getUpdates (or the start)
	now      func() time.Time      // the clock of lastPoll; replaceable in tests
	bg       sync.WaitGroup        // callback answers, text-only notices, the command menu

	// listening, when set (tests), receives the webhook server's address.
	listening chan<- string
}

// allowedUpdates are the update kinds the bot asks for.
var allowedUpdates = []string{models.AllowedUpdateMessage, models.AllowedUpdateEditedMessage, models.AllowedUpdateCallbackQuery}

// New returns an adapter that hands messages to submit after accept has made
// them durable. It makes no network call; Run does.
func New(opts Options, submit pipeline.SubmitFunc, accept pipeline.AcceptFunc) (*Adapter, error) {
	if strings.TrimSpace(opts.Token) == "" {
		return nil, errors.New("telegram: telegram.token is empty")
	}
	if submit == nil {
		return nil, errors.New("telegram: a submit function is required")
	}
	if opts.APIURL == "" {
		opts.APIURL = DefaultAPIURL
	}
	opts.APIURL = strings.TrimRight(opts.APIURL, "/")
	switch opts.GroupsReply {
	case "":
		opts.GroupsReply = GroupsReplyMention
	case GroupsReplyMention, GroupsReplyAlways:
	default:
		return nil, fmt.Errorf("telegram: telegram.groups.reply must be %q or %q, got %q", GroupsReplyMention, GroupsReplyAlways, opts.GroupsReply)
	}
	if opts.Webhook.URL != "" {
		if opts.Webhook.Secret == "" {
			return nil, errors.New("telegram: telegram.webhook.secret is required when telegram.webhook.url is set")
		}
		if opts.Webhook.Listen == "" {
			return nil, errors.New("telegram: telegram.webhook.listen is required when telegram.webhook.url is set")
		}
		if _, err := webhookPath(opts.Webhook.URL); err != nil {
			return nil, err
		}
	}
	if opts.PollTimeout <= 0 {
		opts.PollTimeout = DefaultPollTimeout
	}
	opts.PollTimeout = max(opts.PollTimeout.Round(time.Second), time.Second)
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("channel", Channel)

	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	poller := *client
	poller.Timeout = 0 // each getUpdates call has its own deadline
	caller := *client  // the library's: 5xx answers become recognizable errors
	next := caller.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	caller.Transport = serverErrors{next}
	api, err := bot.New(opts.Token,
		bot.WithServerURL(opts.APIURL),
		bot.WithSkipGetMe(), // Run calls getMe itself, retrying while the network is down
		bot.WithHTTPClient(opts.PollTimeout, &caller),
		bot.WithErrorsHandler(func(err error) { log.Warn("telegram library error", "err", err) }),
	)
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	data := newCallbackData()
	known := map[string]bool{}
	for _, n := range opts.KnownCommands {
		known[strings.ToLower(strings.TrimPrefix(n, "/"))] = true
	}
	if len(known) == 0 {
		for _, c := range opts.Commands {
			known[strings.ToLower(strings.TrimPrefix(c.Name, "/"))] = true
		}
	}
	a := &Adapter{
		opts: opts, api: api, poller: &poller, files: client, submit: submit, accept: accept, log: log, data: data, known: known, notices: newNoticeGate(),
		retryBase: 500 * time.Millisecond, retryMax: 30 * time.Second, callTimeout: 10 * time.Second, now: time.Now,
	}
	a.out = &sender{api: api, log: log, data: data, pace: newPacer(), retryUnit: time.Second, sendTimeout: 30 * time.Second, fileTimeout: 5 * time.Minute,
		streamEvery: DefaultStreamEvery, retries: 3, retryBase: 500 * time.Millisecond, retryMax: 5 * time.Second}
	if !opts.LinkPreviews {
		a.out.preview = &models.LinkPreviewOptions{IsDisabled: bot.True()}
	}
	a.out.drafts.Store(true)
	a.out.draftSeq.Store(time.Now().Unix() % 1_000_000 * 1000) // drafts of a restarted bot get new ids
	return a, nil
}

// Restore gives back what a message loses when it is stored in the queue
// shared by replicas (turnqueue): the download of its media.
func (a *Adapter) Restore(in pipeline.Inbound) pipeline.Inbound {
	if in.Media != nil && in.Media.Ref != "" && in.Media.Fetch == nil {
		m := *in.Media
		m.Fetch = fetcher(a.api, a.files, a.opts.Token, m.Ref)
		in.Media = &m
	}
	return in
}

// Sender is where answers go: pass it with every message submitted to the
// pipeline (Run does), including messages resubmitted at start. It
// implements pipeline.Sender, Typer, Chooser, Editor and FileSender, and
// pipeline.Streamer when Options.Stream is set; it works before Run is
// called.
func (a *Adapter) Sender() pipeline.Sender {
	if a.opts.Stream {
		return streamSender{a.out}
	}
	return a.out
}

// Run connects to Telegram (getMe, retried while the network is down),
// registers the command menu, and receives updates until ctx ends: by long
// polling, or by serving the webhook when Options.Webhook.URL is set. It
// returns nil when ctx ends, after every goroutine it started has exited;
// ErrBadToken when the token is rejected; another error when the webhook
// server cannot listen. It may be called again once it returned (a replica
// that lost the polling lease and won it back), never twice at once.
func (a *Adapter) Run(ctx context.Context) error {
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("telegram: Run called while running")
	}
	defer a.running.Store(false)
	defer a.polling.Store(false)
	defer a.bg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the background calls before waiting for them

	me, err := a.getMe(ctx)
	if err != nil {
		return quiet(ctx, err)
	}
	mode := "long polling"
	if a.opts.Webhook.URL != "" {
		mode = "webhook"
	}
	a.log.Info("connected to Telegram", "bot", "@"+me.Username, "bot_id", me.ID, "mode", mode)
	if !me.ReadsAllGroupMessages {
		a.log.Warn(privacyWarning, "bot", "@"+me.Username)
	}
	if len(a.opts.Commands) > 0 {
		a.bg.Go(func() { a.setCommands(ctx) })
	}
	if a.opts.Webhook.URL != "" {
		return quiet(ctx, a.serveWebhook(ctx, me))
	}
	a.lastPoll.Store(a.now().UnixNano())
	a.polling.Store(true)
	err = a.retry(ctx, "deleting the webhook", func(ctx context.Context) error {
		_, err := a.api.DeleteWebhook(ctx, &bot.DeleteWebhookParams{}) // pending updates are kept
		return err
	})
	if err != nil {
		return quiet(ctx, err)
	}
	return quiet(ctx, a.poll(ctx, me))
}

// privacyWarning is logged at start while group privacy mode is on.
const privacyWarning = "group privacy mode is on: in groups the bot gets only commands and replies to its messages, " +
	"not plain @mentions; to answer mentions, turn privacy off in @BotFather (/setprivacy, then remove and re-add the bot to each group) " +
	"or make the bot a group admin"

// quiet turns the error of a cancelled run into nil: ending ctx is how Run is
// stopped.
func quiet(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && !errors.Is(err, ErrBadToken) {
		return nil
	}
	return err
}

// getMe learns the bot's id and username (for mentions and replies to the
// bot), retrying while Telegram cannot be reached.
func (a *Adapter) getMe(ctx context.Context) (Me, error) {
	var me Me
	err := a.retry(ctx, "getMe", func(ctx context.Context) error {
		u, err := a.api.GetMe(ctx)
		if err != nil {
			return err
		}
		if u == nil || u.ID == 0 {
			return errors.New("getMe answered without the bot's id")
		}
		me = Me{ID: u.ID, Username: u.Username, Name: u.FirstName, ReadsAllGroupMessages: u.CanReadAllGroupMessages}
		return nil
	})
	return me, err
}

// setCommands registers the command menu. A failure is logged; it never
// holds up the bot.
func (a *Adapter) setCommands(ctx context.Context) {
	cmds := make([]models.BotCommand, 0, len(a.opts.Commands))
	for _, c := range a.opts.Commands {
		name := strings.ToLower(strings.TrimPrefix(c.Name, "/"))
		help := truncateRunes(strings.TrimSpace(c.Help), 256)
		if name == "" || help == "" {
			continue
		}
		cmds = append(cmds, models.BotCommand{Command: name, Description: help})
	}
	ctx, cancel := context.WithTimeout(ctx, a.callTimeout)
	defer cancel()
	if _, err := a.api.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: cmds}); err != nil && ctx.Err() == nil {
		a.log.Warn("registering the command menu failed", "err", err)
		return
	}
	a.log.Debug("registered the command menu", "commands", len(cmds))
}

// retry runs fn until it succeeds, ctx ends, Telegram rejects the token, or
// Telegram refuses the call itself (400: retrying cannot help, e.g. a
// webhook URL it will not take); it waits with backoff (or retry_after) in
// between, and Health reports the failure meanwhile.
func (a *Adapter) retry(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, a.callTimeout)
		err := fn(cctx)
		cancel()
		if err == nil {
			a.setHealth(nil)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if bad := badToken(err, a.opts.APIURL); bad != nil {
			return bad
		}
		if errors.Is(err, bot.ErrorBadRequest) {
			err = fmt.Errorf("telegram: Telegram refused %s: %w", what, err)
			a.setHealth(err)
			return err
		}
		a.setHealth(fmt.Errorf("%s fails (%d attempts): %w", what, attempt+1, err))
		wait := a.backoff(attempt)
		var tm *bot.TooManyRequestsError
		if errors.As(err, &tm) {
			wait = time.Duration(max(tm.RetryAfter, 1)) * time.Second
		}
		a.log.Warn("Telegram call failed, retrying", "call", what, "retry_in", wait.Round(time.Millisecond), "err", err)
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// badToken returns ErrBadToken with an explanation when err is the Bot API's
// 401 or 404 (which it answers for an unknown token), else nil.
func badToken(err error, apiURL string) error {
	switch {
	case errors.Is(err, bot.ErrorUnauthorized):
		return fmt.Errorf("%w: Telegram answered 401 Unauthorized", ErrBadToken)
	case errors.Is(err, bot.ErrorNotFound):
		return fmt.Errorf("%w: %s answered 404 Not Found (also check telegram.api_url)", ErrBadToken, apiURL)
	}
	return nil
}

// backoff is the wait before retry number attempt (0-based).
func (a *Adapter) backoff(attempt int) time.Duration {
	return backoff.Delay(a.retryBase, a.retryMax, attempt)
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool { return backoff.Sleep(ctx, d) }

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Health reports whether updates are being received: nil while they are;
// otherwise the problem: Telegram cannot be reached or refuses a call, the
// store keeps failing to take incoming messages, or (long polling) no
// getUpdates call completed for three poll timeouts. It makes no call.
func (a *Adapter) Health() error {
	if !a.running.Load() {
		return errors.New("not running")
	}
	if p := a.health.Load(); p != nil {
		return *p
	}
	if a.polling.Load() {
		// A poll hangs at most PollTimeout plus a margin before it is
		// cancelled: three poll timeouts without one completing means
		// receiving is stuck, whatever the reason.
		since := a.now().Sub(time.Unix(0, a.lastPoll.Load()))
		if stale := 3 * a.opts.PollTimeout; since > stale {
			return fmt.Errorf("stale: no getUpdates call completed for %s (more than 3 poll timeouts)", since.Round(time.Second))
		}
	}
	return nil
}

func (a *Adapter) setHealth(err error) {
	if err == nil {
		a.health.Store(nil)
		return
	}
	a.health.Store(&err)
}
