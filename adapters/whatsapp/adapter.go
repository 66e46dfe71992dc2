package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/socket"
	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/store/sqlstore"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"

	"github.com/recallbot/recall/backoff"
	"github.com/recallbot/recall/pipeline"
)

// recentMax is how many messages the adapter remembers (for dropping
// redeliveries and quoting replies in groups).
const recentMax = 4096

// Adapter connects one linked WhatsApp account to the pipeline: it receives
// messages, normalizes them, makes them durable with accept, hands them to
// submit, and sends the answers (it is the Sender).
type Adapter struct {
	opts   Options
	client Client
	store  *sqlstore.Container // the session store New opened; nil with Options.Client
	submit pipeline.SubmitFunc
	accept pipeline.AcceptFunc
	log    *slog.Logger
	now    func() time.Time

	// Timing, replaceable in tests.
	retryBase, retryMax time.Duration
	callTimeout         time.Duration                        // one send, one lookup, one receipt
	acceptTimeout       time.Duration                        // making one message durable
	sendWait            time.Duration                        // how long a send waits for the connection
	watchEvery          time.Duration                        // how often the watchdog looks at the connection
	downAfter           time.Duration                        // down this long with no fatal state: the watchdog reconnects
	silentAfter         time.Duration                        // keepalives unanswered this long: reconnect
	banRetry            time.Duration                        // a ban without an expiry: try again after this
	after               func(time.Duration) <-chan time.Time // the waits for a ban's expiry and after a refusal

	versions  versions
	running   atomic.Bool
	term      atomic.Int64 // Runs so far: the handler of an earlier Run stands aside
	standby   atomic.Bool  // RunLeader waits while another replica holds the lease
	refreshed atomic.Bool  // the client version was refreshed after a 405 since the last login
	conn      *connState
	seen      *lru[msgRef, struct{}]       // messages handed to the pipeline or stored as backlog
	quotes    *lru[msgRef, quote]          // group messages, for quoting the reply
	sentMsgs  *lru[string, *waE2E.Message] // the bot's messages by id, for retry receipts
	timers    *lru[string, uint32]         // chat JID → disappearing-messages timer (seconds)
	acceptErr atomic.Int32                 // accept failures in a row

	typingMu sync.Mutex
	typing   map[pipeline.Key]time.Time // conversations typing, and when "typing…" was last sent
	online   bool                       // the account's presence is "available" (typing somewhere)

	fatal    chan error                // LoggedOut, StreamReplaced: Run stops with it
	outdated chan struct{}             // ClientOutdated: Run updates the version and reconnects
	banned   chan *events.TemporaryBan // Run waits for the expiry, then reconnects
	refused  chan *events.ConnectFailure
	kick     chan string // Run reconnects (after a backoff); the reason

	pace    *pacer        // the global sending budget; nil: none
	partGap time.Duration // the pause between the parts of a reply (plus jitter)
	pause   func(ctx context.Context, d time.Duration) bool

	unread        unreadable
	undecryptWait time.Duration
	afterFunc     func(time.Duration, func()) (stop func() bool)

	phone       *phoneWatch
	phoneWarned time.Time // when the phone warning was last logged (Run's goroutine)

	stateMu sync.Mutex
	state   error // why the channel is not working, for /healthz; nil when it is

	mu       sync.Mutex
	stopping bool // Run ended: messages are left for WhatsApp to deliver again
	closed   bool
	bg       sync.WaitGroup // read receipts, presence
}

// New returns an adapter that hands messages to submit after accept has made
// them durable (accept may be nil: nothing is stored first). Without
// Options.Client it opens the session store <DataDir>/whatsapp.db (creating
// it) and builds the whatsmeow client; it makes no network call. Close
// releases what New opened.
func New(opts Options, submit pipeline.SubmitFunc, accept pipeline.AcceptFunc) (*Adapter, error) {
	if submit == nil {
		return nil, errors.New("whatsapp: a submit function is required")
	}
	switch opts.GroupsReply {
	case "":
		opts.GroupsReply = GroupsReplyMention
	case GroupsReplyMention, GroupsReplyAlways:
	default:
		return nil, fmt.Errorf("whatsapp: whatsapp.groups.reply must be %q or %q, got %q", GroupsReplyMention, GroupsReplyAlways, opts.GroupsReply)
	}
	if opts.BacklogWindow == 0 {
		opts.BacklogWindow = DefaultBacklogWindow
	}
	if opts.SplitLimit <= 0 {
		opts.SplitLimit = DefaultSplitLimit
	}
	if opts.SplitLimit < minSplitLimit {
		return nil, fmt.Errorf("whatsapp: whatsapp.split_limit must be at least %d, got %d", minSplitLimit, opts.SplitLimit)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("channel", Channel)
	var forced store.WAVersionContainer
	if opts.ClientVersion != "" {
		v, err := ParseClientVersion(opts.ClientVersion)
		if err != nil {
			return nil, fmt.Errorf("whatsapp: whatsapp.client_version: %w", err)
		}
		forced = v
	}
	a := &Adapter{
		opts: opts, submit: submit, accept: accept, log: log, now: time.Now,
		retryBase: time.Second, retryMax: 2 * time.Minute,
		callTimeout: 30 * time.Second, acceptTimeout: 15 * time.Second, sendWait: 2 * time.Minute,
		watchEvery: 30 * time.Second, downAfter: 5 * time.Minute, silentAfter: 90 * time.Second, banRetry: time.Hour,
		after:         time.After,
		undecryptWait: undecryptableWait,
		pace:          newPacer(sendPerMinute, sendBurst),
		partGap:       partGap,
		pause:         backoff.Sleep,
		afterFunc:     func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop },
		versions:      versions{forced: forced, latest: opts.LatestVersion, dir: opts.DataDir, log: log},
		conn:          newConnState(),
		seen:          newLRU[msgRef, struct{}](recentMax),
		quotes:        newLRU[msgRef, quote](recentMax),
		sentMsgs:      newLRU[string, *waE2E.Message](recentMax),
		timers:        newLRU[string, uint32](recentMax),
		typing:        map[pipeline.Key]time.Time{},
		fatal:         make(chan error, 1),
		outdated:      make(chan struct{}, 1),
		banned:        make(chan *events.TemporaryBan, 1),
		refused:       make(chan *events.ConnectFailure, 1),
		kick:          make(chan string, 1),
	}
	a.phone = newPhoneWatch(opts.DataDir, a.now())
	a.client = opts.Client
	if a.client == nil {
		if a.versions.latest == nil {
			a.versions.latest = fetchLatestVersion
		}
		if opts.DataDir == "" {
			return nil, errors.New("whatsapp: data.dir is empty")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := openSession(ctx, opts, log)
		if err != nil {
			return nil, err
		}
		cli, err := newWhatsmeow(ctx, c, log)
		if err != nil {
			return nil, errors.Join(err, c.Close())
		}
		cli.AutoReconnectHook = func(err error) bool {
			// whatsmeow waits 2s × failures before the next attempt; cap it
			// at 2 minutes.
			cli.AutoReconnectErrors = min(cli.AutoReconnectErrors, 60)
			log.Warn("reconnecting to WhatsApp failed; trying again", "attempt", cli.AutoReconnectErrors, "err", err)
			return true
		}
		// A reply a recipient's device could not decrypt is sent again
		// from the messages this process sent, or the stored replies.
		cli.GetMessageForRetry = func(_, to types.JID, id types.MessageID) *waE2E.Message {
			return a.messageForRetry(to, id)
		}
		a.store, a.client = c, &waClient{c: cli}
	}
	return a, nil
}

// BacklogWindow is the backlog window in effect (Options.BacklogWindow or
// its default): pass it to chat.Pending at start, so a message too old to
// be answered now is not answered after a restart either. Negative means no
// window.
func (a *Adapter) BacklogWindow() time.Duration { return a.opts.BacklogWindow }

// Run connects to WhatsApp with the stored session and receives messages
// until ctx ends (nil) or this channel cannot go on: ErrNotLinked when no
// account is linked (nothing is connected), ErrLoggedOut when the linked
// device was removed, ErrStreamReplaced when another client took the
// session over, an *OutdatedError (ErrOutdated) when WhatsApp keeps
// rejecting the client version. The other channels are not affected by
// any of them. A temporary ban or a refused connection is waited out (the
// ban's expiry; downAfter) and reported by Health meanwhile; a connection
// down for downAfter, or whose keepalives go unanswered, is reconnected.
//
// When ctx ends, messages that arrive are no longer taken (WhatsApp keeps
// them and delivers them again at the next start), but the connection stays
// up so the turns still running can send their replies: call Close after
// the dispatcher drained. Run returns after the goroutines it started
// ended; it may be called again after it returned (RunLeader does, each
// time this replica takes the lease), never twice at once.
func (a *Adapter) Run(ctx context.Context) (err error) {
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("whatsapp: Run called twice")
	}
	defer a.running.Store(false)
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return ErrClosed
	}
	a.stopping = false // an earlier Run's end
	a.mu.Unlock()
	defer a.endRun()
	defer func() {
		if err != nil {
			a.setState(err)
		}
	}()
	if !a.client.HasSession() {
		a.log.Error("WhatsApp is not linked yet: run `bot whatsapp login` (under Docker: docker compose run --rm -it recall whatsapp login); the other channels keep running")
		return ErrNotLinked
	}
	v, from := a.versions.pick(ctx)
	a.log.Info("WhatsApp Web client version", "version", v.String(), "from", from)
	// The client keeps every handler it was given: an earlier Run's
	// handler lets the events through (true acknowledges nothing by
	// itself: every handler must agree).
	term := a.term.Add(1)
	a.client.AddEventHandler(func(evt any) bool {
		if a.term.Load() != term {
			return true
		}
		return a.handle(ctx, evt)
	})
	if err := a.connect(ctx); err != nil {
		return a.quiet(ctx, err)
	}
	watch := time.NewTicker(a.watchEvery)
	defer watch.Stop()
	var downSince time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-a.fatal:
			a.client.Disconnect()
			return err
		case <-a.outdated:
			a.client.Disconnect()
			a.conn.poke()
			if err := a.refreshVersion(ctx); err != nil {
				return a.quiet(ctx, err)
			}
			if err := a.connect(ctx); err != nil {
				return a.quiet(ctx, err)
			}
		case b := <-a.banned:
			// whatsmeow does not reconnect after a ban: Run waits for
			// its expiry.
			wait := b.Expire
			if wait <= 0 {
				wait = a.banRetry
			}
			until := a.now().Add(wait)
			a.setState(fmt.Errorf("WhatsApp temporarily banned this account (%s); the channel is stopped until %s, then reconnects",
				b.Code.String(), until.UTC().Format(time.RFC3339)))
			a.log.Error("WhatsApp temporarily banned this account; the channel stops until the ban expires, then reconnects",
				"reason", b.Code.String(), "code", int(b.Code), "expires", until.UTC().Format(time.RFC3339), "in", wait)
			a.client.Disconnect()
			a.conn.poke()
			if !a.wait(ctx, wait) {
				return nil
			}
			if err := a.reconnect(ctx, "the ban expired"); err != nil {
				return a.quiet(ctx, err)
			}
		case f := <-a.refused:
			// whatsmeow does not reconnect after an unknown refusal
			// either: Run tries again after downAfter.
			a.setState(fmt.Errorf("WhatsApp refused the connection (%d %s%s); retrying in %s",
				int(f.Reason), f.Reason.String(), suffix(f.Message), a.downAfter))
			a.log.Error("WhatsApp refused the connection; retrying later", "reason", f.Reason.String(),
				"code", int(f.Reason), "message", f.Message, "retry_in", a.downAfter)
			a.client.Disconnect()
			a.conn.poke()
			if !a.wait(ctx, a.downAfter) {
				return nil
			}
			if err := a.reconnect(ctx, "retrying after WhatsApp refused the connection"); err != nil {
				return a.quiet(ctx, err)
			}
		case why := <-a.kick:
			if !sleep(ctx, a.backoff(int(a.acceptErr.Load()))) {
				return nil
			}
			if err := a.reconnect(ctx, why); err != nil {
				return a.quiet(ctx, err)
			}
		case <-watch.C:
			if err := a.phone.problem(a.now()); err != nil && a.now().Sub(a.phoneWarned) >= 24*time.Hour {
				a.phoneWarned = a.now()
				a.log.Warn(err.Error())
			}
			if a.ready() {
				downSince = time.Time{}
				continue
			}
			now := a.now()
			if downSince.IsZero() {
				downSince = now
			}
			if now.Sub(downSince) < a.downAfter {
				continue
			}
			downSince = time.Time{}
			if err := a.reconnect(ctx, fmt.Sprintf("not connected for %s", a.downAfter)); err != nil {
				return a.quiet(ctx, err)
			}
		}
	}
}

// wait waits d (a.after) or until ctx ends; false when ctx ended.
func (a *Adapter) wait(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-a.after(d):
		return true
	}
}

// reconnect drops the connection and connects again.
func (a *Adapter) reconnect(ctx context.Context, why string) error {
	a.log.Warn("reconnecting to WhatsApp", "why", why)
	a.client.Disconnect()
	a.conn.poke()
	return a.connect(ctx)
}

// suffix is ": msg", or "" without one.
func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// setState records why the channel is not working (nil: it is), for
// Health.
func (a *Adapter) setState(err error) {
	a.stateMu.Lock()
	defer a.stateMu.Unlock()
	a.state = err
}

func (a *Adapter) getState() error {
	a.stateMu.Lock()
	defer a.stateMu.Unlock()
	return a.state
}

// quiet turns the error of a cancelled run into nil.
func (a *Adapter) quiet(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

// endRun stops taking messages and waits for the background sends.
func (a *Adapter) endRun() {
	a.mu.Lock()
	a.stopping = true
	a.mu.Unlock()
	a.stopUnreadable()
	a.bg.Wait()
}

// Close disconnects from WhatsApp and closes the session store. Sends fail
// with ErrClosed afterwards. Call it after Run returned and the dispatcher
// drained; it is safe to call more than once.
func (a *Adapter) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed, a.stopping = true, true
	a.mu.Unlock()
	a.conn.close()
	a.bg.Wait()
	a.client.Disconnect()
	if a.store != nil {
		if err := a.store.Close(); err != nil {
			return fmt.Errorf("whatsapp: closing the session store: %w", err)
		}
	}
	return nil
}

func (a *Adapter) isClosed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closed
}

func (a *Adapter) isStopping() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopping
}

// goBG runs f in the background unless the adapter is stopping.
func (a *Adapter) goBG(f func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopping {
		return
	}
	a.bg.Go(f)
}

// connect opens the connection, retrying with backoff until it succeeds or
// ctx ends. A 405 "client outdated" answer refreshes the client version.
func (a *Adapter) connect(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		err := a.client.Connect()
		if err == nil || errors.Is(err, whatsmeow.ErrAlreadyConnected) {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var sc socket.ErrWithStatusCode
		if errors.As(err, &sc) && sc.StatusCode == 405 {
			if err := a.refreshVersion(ctx); err != nil {
				return err
			}
			continue
		}
		wait := a.backoff(attempt)
		a.log.Warn("connecting to WhatsApp failed; retrying", "retry_in", wait.Round(time.Millisecond), "err", err)
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// refreshVersion handles a 405 "client outdated": it sets the current
// WhatsApp Web version (fetched again) when it differs from the rejected
// one, once per login; otherwise it gives up with an *OutdatedError that
// says what the operator does.
func (a *Adapter) refreshVersion(ctx context.Context) error {
	rejected := currentClientVersion()
	outdated := func(cause error) error {
		err := &OutdatedError{Version: rejected, Forced: !a.versions.forced.IsZero(), Cause: cause}
		a.log.Error(err.Error())
		return err
	}
	if a.refreshed.Load() {
		return outdated(nil)
	}
	a.refreshed.Store(true)
	a.log.Warn("WhatsApp says this client version is outdated (405); fetching the current version and reconnecting", "version", rejected.String())
	got, changed, err := a.versions.refresh(ctx, rejected)
	if err != nil || !changed {
		return outdated(err)
	}
	a.log.Info("WhatsApp Web client version updated", "version", got.String(), "was", rejected.String())
	return nil
}

// backoff is the wait before retry number attempt (0-based).
func (a *Adapter) backoff(attempt int) time.Duration {
	return backoff.Delay(a.retryBase, a.retryMax, attempt)
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool { return backoff.Sleep(ctx, d) }

// stop ends Run with err (the first one wins).
func (a *Adapter) stop(err error) {
	select {
	case a.fatal <- err:
	default:
	}
}

// handle is the event handler. whatsmeow runs it for one message at a
// time, so it returns fast: it normalizes, accepts (a local database write)
// and submits; the turn runs in the dispatcher. Returning false leaves a
// message unacknowledged, so WhatsApp delivers it again.
func (a *Adapter) handle(ctx context.Context, evt any) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			// Not acknowledged: WhatsApp delivers it again.
			a.log.Error("handling a WhatsApp event panicked; it is left for WhatsApp to deliver again",
				"event", fmt.Sprintf("%T", evt), "panic", p, "stack", string(debug.Stack()))
			ok = false
			a.acceptErr.Add(1) // a message that keeps failing backs the reconnects off
			a.kickReconnect("an event handler panicked")
		}
	}()
	defer a.conn.poke() // a sender waiting for the connection looks again
	switch e := evt.(type) {
	case *events.Message:
		if e.Info.IsFromMe && isPhone(a.client.Me(), e.Info.Sender) {
			a.phone.saw(a.now())
		}
		a.readable(e.Info)
		return a.onMessage(ctx, e)
	case *events.Receipt:
		if isPhone(a.client.Me(), e.Sender) {
			a.phone.saw(a.now())
		}
	case *events.Connected:
		me := a.client.Me()
		v := currentClientVersion()
		a.log.Info("connected to WhatsApp", "account", me.PN.User, "name", me.Name, "version", v.String())
		a.refreshed.Store(false)
		a.versions.remember(v)
		a.setState(nil)
		a.goBG(a.announce)
	case *events.Disconnected:
		a.log.Warn("the connection to WhatsApp was lost; reconnecting")
	case *events.KeepAliveTimeout:
		a.log.Warn("WhatsApp does not answer keep-alives", "errors", e.ErrorCount, "last_success", e.LastSuccess)
		if !e.LastSuccess.IsZero() && a.now().Sub(e.LastSuccess) >= a.silentAfter {
			a.kickReconnect(fmt.Sprintf("keepalives unanswered for %s", a.now().Sub(e.LastSuccess).Round(time.Second)))
		}
	case *events.PushNameSetting, *events.AppStateSyncComplete:
		a.goBG(a.announce) // the push name may be known now
	case *events.KeepAliveRestored:
		a.log.Info("WhatsApp answers keep-alives again")
	case *events.LoggedOut:
		err := fmt.Errorf("%w (reason: %s)", ErrLoggedOut, e.Reason.String())
		a.log.Error("the linked device was removed; run `bot whatsapp login` again; the WhatsApp channel stops, the others keep running", "reason", e.Reason.String())
		a.stop(err)
	case *events.StreamReplaced:
		a.log.Error(ErrStreamReplaced.Error())
		a.stop(ErrStreamReplaced)
	case *events.ClientOutdated:
		select {
		case a.outdated <- struct{}{}:
		default:
		}
	case *events.TemporaryBan:
		select {
		case a.banned <- e:
		default:
		}
	case *events.ConnectFailure:
		select {
		case a.refused <- e:
		default:
		}
	case *events.UndecryptableMessage:
		a.onUndecryptable(ctx, e)
	case *events.HistorySync, *events.OfflineSyncPreview, *events.OfflineSyncCompleted:
		// History is not imported; offline messages arrive as messages.
	}
	return true
}

// announce sets the account's presence to "unavailable" (the phone keeps
// its notifications; Typing makes it "available" while it types). WhatsApp
// takes a presence only once the push name is known, so it is tried again
// a few times, and again when the name arrives (PushNameSetting).
func (a *Adapter) announce() {
	for attempt := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), a.callTimeout)
		err := a.client.SendPresence(ctx, types.PresenceUnavailable)
		cancel()
		if err == nil {
			return
		}
		a.log.Debug("setting the account's presence failed", "err", err, "attempt", attempt+1)
		if a.isStopping() || !sleep(context.Background(), a.backoff(attempt)) {
			return
		}
	}
}

// onMessage takes one message: normalize, drop a redelivery seen in this
// process, accept (durable), then submit when it is to be answered.
func (a *Adapter) onMessage(ctx context.Context, ev *events.Message) bool {
	if key, id, sender, ok := revoked(ev, a.client.Me(), a.lidMapper(ctx)); ok {
		return a.onRevoke(ctx, key, id, sender)
	}
	in, answer, ok := toInbound(ev, a.client.Me(), a.lidMapper(ctx), a.opts.GroupsReply, a.now(), a.opts.BacklogWindow)
	if !ok {
		return true
	}
	if in.Media != nil {
		if _, msg := mediaOf(ev.Message); msg != nil {
			in.Media.Fetch = fetcher(a.client, msg, in.Media.Size)
		}
	}
	if a.isStopping() {
		return false // not acknowledged: WhatsApp delivers it again at the next start
	}
	ref := msgRef{chat: in.Key.Chat, id: in.MessageID}
	log := a.log.With("key", in.Key, "msg_id", in.MessageID)
	// The chat's disappearing-messages timer, for the replies.
	if _, ci := textOf(ev.Message); ci != nil || a.expirationOf(ev.Info.Chat.ToNonAD()) != 0 {
		for _, c := range []string{ev.Info.Chat.ToNonAD().String(), in.Key.Chat} { // a @lid chat is answered on the phone number
			a.timers.remove(c)
			a.timers.add(c, ci.GetExpiration())
		}
	}
	if _, dup := a.seen.get(ref); dup {
		log.Debug("dropped a redelivered message (seen in this process)")
		return true
	}
	if a.accept != nil {
		actx, cancel := context.WithTimeout(ctx, a.acceptTimeout)
		err := a.accept(actx, in)
		cancel()
		if err != nil {
			// Not acknowledged. WhatsApp delivers it again only on a new
			// connection: reconnect after a backoff (growing while storing
			// keeps failing) so the redelivery comes soon.
			n := a.acceptErr.Add(1)
			log.Error("storing an incoming message failed; it is not acknowledged, and WhatsApp delivers it again after a reconnect",
				"err", err, "failures_in_a_row", n)
			a.kickReconnect("an incoming message could not be stored")
			return false
		}
		a.acceptErr.Store(0)
	}
	if !answer {
		a.seen.add(ref, struct{}{})
		log.Info("message older than whatsapp.backlog_window: stored, not answered",
			"age", a.now().Sub(in.Time).Round(time.Second), "window", a.opts.BacklogWindow)
		return true
	}
	if in.IsGroup {
		a.quotes.add(ref, quote{sender: ev.Info.Sender.ToNonAD().String(), text: shorten(in.Text, quoteTextMax)})
	}
	if err := a.submit(in, a); err != nil {
		if errors.Is(err, pipeline.ErrStopped) {
			return false // shutting down: WhatsApp delivers it again at the next start
		}
		// Accepted, so it is answered at the next start (chat.Pending).
		log.Error("handing a message to the pipeline failed", "err", err)
		return true
	}
	a.seen.add(ref, struct{}{})
	if in.Addressed() {
		info := ev.Info
		a.goBG(func() { a.markRead(info) })
	}
	return true
}

// onRevoke forgets a message its sender deleted for everyone
// (Options.Revoked). When that fails, the deletion is not acknowledged, so
// WhatsApp delivers it again.
func (a *Adapter) onRevoke(ctx context.Context, key pipeline.Key, id, sender string) bool {
	if a.opts.Revoked == nil {
		return true
	}
	if a.isStopping() {
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, a.acceptTimeout)
	defer cancel()
	if err := a.opts.Revoked(rctx, key, id, sender); err != nil {
		a.log.Error("forgetting a message deleted for everyone failed; WhatsApp will deliver the deletion again", "key", key, "msg_id", id, "err", err)
		a.kickReconnect("a deletion could not be applied")
		return false
	}
	a.log.Debug("applied a deletion for everyone", "key", key, "msg_id", id, "by", sender)
	return true
}

// markRead sends the read receipt (blue ticks) of a message being answered.
func (a *Adapter) markRead(info types.MessageInfo) {
	ctx, cancel := context.WithTimeout(context.Background(), a.callTimeout)
	defer cancel()
	if err := a.client.MarkRead(ctx, []types.MessageID{info.ID}, a.now(), info.Chat, info.Sender); err != nil {
		a.log.Debug("sending a read receipt failed", "chat", info.Chat.String(), "msg_id", info.ID, "err", err)
	}
}

// lidMapper looks a @lid user's phone number up in the session store.
func (a *Adapter) lidMapper(ctx context.Context) func(types.JID) types.JID {
	return func(lid types.JID) types.JID {
		lctx, cancel := context.WithTimeout(ctx, a.callTimeout)
		defer cancel()
		pn, err := a.client.PNForLID(lctx, lid)
		if err != nil {
			a.log.Debug("looking up the phone number of a LID failed", "lid", lid.String(), "err", err)
			return types.EmptyJID
		}
		return pn
	}
}

// kickReconnect asks Run to reconnect (after a backoff).
func (a *Adapter) kickReconnect(why string) {
	select {
	case a.kick <- why:
	default:
	}
}

// messageForRetry is the bot's message id in the chat to, for a
// recipient's device that could not decrypt it (a retry receipt); nil when
// unknown. It is looked up among the messages this process sent, then
// among the stored replies of the conversation (Options.Replies), so a
// reply sent before a restart can be sent again too: a reply's part ids
// are derived from the reply (partID), so they are found again by
// rendering the stored replies. A direct chat is looked up under both its
// phone-number and its LID form, whichever the receipt names.
func (a *Adapter) messageForRetry(to types.JID, id types.MessageID) *waE2E.Message {
	if m, ok := a.sentMsgs.get(string(id)); ok {
		return m
	}
	if a.opts.Replies != nil && !to.IsEmpty() {
		ctx, cancel := context.WithTimeout(context.Background(), a.callTimeout)
		defer cancel()
		for _, chat := range a.chatForms(ctx, to.ToNonAD()) {
			if m := a.storedPart(ctx, chat, id); m != nil {
				return m
			}
		}
	}
	a.log.Debug("a retry receipt asks for a message the bot does not know", "chat", to.String(), "msg_id", id)
	return nil
}

// retryReplies is how many of a conversation's newest stored replies a
// retry receipt is matched against.
const retryReplies = 200

// storedPart renders the newest stored replies of chat and returns the
// part whose id is id; nil when none is.
func (a *Adapter) storedPart(ctx context.Context, chat types.JID, id types.MessageID) *waE2E.Message {
	key := pipeline.Key{Channel: Channel, Chat: chat.String()}
	replies, err := a.opts.Replies(ctx, key, retryReplies)
	if err != nil {
		a.log.Warn("looking up the stored replies for a retry receipt failed", "chat", chat.String(), "msg_id", id, "err", err)
		return nil
	}
	for _, r := range replies {
		if r.ReplyTo == "" {
			continue // its parts had random ids
		}
		for _, plain := range []bool{false, true} {
			for i, p := range a.render(r.Text, plain) {
				if partID(chat, r.ReplyTo, i, p) != id {
					continue
				}
				var q *quote
				if i == 0 && chat.Server == types.GroupServer {
					if v, ok := a.quotes.get(msgRef{chat: key.Chat, id: r.ReplyTo}); ok {
						q = &v
					}
				}
				return textMessage(p, r.ReplyTo, q, a.expirationOf(chat))
			}
		}
	}
	return nil
}

// chatForms are the forms under which chat's conversation may be stored:
// a direct chat by phone number and by LID, a group as it is.
func (a *Adapter) chatForms(ctx context.Context, chat types.JID) []types.JID {
	forms := []types.JID{chat}
	var other types.JID
	var err error
	switch chat.Server {
	case types.HiddenUserServer:
		other, err = a.client.PNForLID(ctx, chat)
	case types.DefaultUserServer:
		other, err = a.client.LIDForPN(ctx, chat)
	}
	if err != nil {
		a.log.Debug("looking up the other form of a chat failed", "chat", chat.String(), "err", err)
	}
	if other = other.ToNonAD(); other.User != "" && other != chat {
		forms = append(forms, other)
	}
	return forms
}

// Health reports whether the channel is connected to WhatsApp (for
// /healthz), and when not, why and what to do: a version WhatsApp rejects,
// a ban and its expiry, a refused connection, a removed device. It makes
// no network call.
func (a *Adapter) Health() error {
	if err := a.getState(); err != nil {
		return err
	}
	if !a.running.Load() {
		if a.standby.Load() {
			return nil // another replica holds the connection
		}
		return errors.New("not running (is the account linked? see bot whatsapp login)")
	}
	if !a.ready() {
		return errors.New("not connected to WhatsApp; reconnecting")
	}
	return a.phone.problem(a.now())
}
