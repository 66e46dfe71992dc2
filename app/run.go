package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/commands"
	"github.com/recallbot/recall/limits"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/metrics"
	"github.com/recallbot/recall/ops"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/turnqueue"
)

// Channel is a chat platform as the bot runs it: an adapter built by a
// ChannelFunc on the bot's Wiring.
type Channel struct {
	Name   string          // "telegram"
	Sender pipeline.Sender // sends to the platform
	// Run receives updates until ctx ends.
	Run func(ctx context.Context) error
	// Health reports the channel's state on /healthz; nil reports nothing.
	Health ops.HealthReporter
	// Close releases the adapter once the turns finished; may be nil.
	Close func() error
	// Window is how old an accepted but unanswered message may be to be
	// answered after a restart; 0 is PendingWindow.
	Window time.Duration
	// Leader: on PostgreSQL, Run runs on one replica at a time (the holder
	// of the channel's lease; Telegram's long polling); Run may then be
	// called again after it returned. The other replicas answer its turns
	// from the shared queue.
	Leader bool
	// LeaderTurns: with Leader, the channel's turns are answered by the
	// lease holder only, because only its Sender can send (WhatsApp: one
	// connection per linked device); the other replicas leave them in the
	// shared queue.
	LeaderTurns bool
	// Yield lets go of what only the lease holder may hold (WhatsApp's
	// connection) when this replica lost the channel's lease; not called
	// at shutdown. nil: nothing.
	Yield func()
	// Restore gives back what a turn loses in the shared queue of the
	// replicas (a media's download); nil: nothing.
	Restore func(pipeline.Inbound) pipeline.Inbound
	// Connects: the sender waits for the connection Run makes. The
	// replies the last run never sent go out once it runs (else before),
	// and a failure of Run is logged and stops this channel only (else it
	// stops the bot).
	Connects bool
}

// Wiring is what a channel needs from the bot to be built.
type Wiring struct {
	Submit func(in pipeline.Inbound, out pipeline.Sender) error // queues a turn (the dispatcher)
	Accept func(ctx context.Context, in pipeline.Inbound) error // makes an update durable before it is acknowledged (the intake)
	// AcceptStored is Accept that refuses while storage fails, so a
	// platform that redelivers what was not acknowledged (WhatsApp) keeps it.
	AcceptStored func(ctx context.Context, in pipeline.Inbound) error
	Allowed      func(userID string) bool // the access list
	Commands     []*commands.Command      // the platforms' command menu
	Known        []string                 // every command name that runs (admin ones too)
	Store        *memory.Store            // the store (a group that became a supergroup moves its data)
	Log          *slog.Logger
	Metrics      *metrics.Metrics
}

// ChannelFunc builds a channel on the bot's wiring.
type ChannelFunc func(w Wiring) (Channel, error)

// NewDispatcher returns a dispatcher running the chain, with
// pipeline.max_concurrent turns at a time and shutdown.timeout of grace. Run
// makes its own; a test that drives an adapter by hand uses this one.
func (a *App) NewDispatcher() *pipeline.Dispatcher {
	return pipeline.NewDispatcher(a.Handler, a.Config.Pipeline.MaxConcurrent, a.Log, pipeline.WithGrace(a.Config.Shutdown.Timeout),
		pipeline.WithRefuser(limits.Overflow(limits.Options{Discard: a.Store, Log: a.Log})))
}

// PendingWindow is how old an accepted but unanswered message may be to be
// answered after a restart.
const PendingWindow = time.Hour

// Run runs the channels and the dispatcher (pipeline.max_concurrent turns at
// a time) until ctx ends or a channel fails, then stops taking updates and
// lets turns in flight finish (shutdown.timeout). Each channel, in order,
// first sends the replies the last run stored but never sent, then answers
// the messages it accepted but never answered, then runs.
func (a *App) Run(ctx context.Context, channels ...ChannelFunc) error {
	cfg := a.Config
	if a.Embedding != nil {
		a.Embedding.Start() // embeds new messages until Close
	}
	disp := a.NewDispatcher()
	submit := disp.Submit
	queue := a.newQueue() // on PostgreSQL: the turns shared by the replicas
	if queue != nil {
		submit = queue.Submit
	}
	w := Wiring{Submit: submit, Accept: a.Intake.Accept, AcceptStored: a.Intake.AcceptStored, Allowed: a.Access.Allowed,
		Commands: a.Commands.List(), Known: a.Commands.Names(), Store: a.Store, Log: a.Log, Metrics: a.Metrics}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(runCtx)
	if queue != nil {
		g.Go(func() error { return queue.Run(gctx) })
	}
	var closers []func() error
	var err error
	for _, mk := range channels {
		var ch Channel
		if ch, err = mk(w); err != nil {
			break
		}
		if ch.Close != nil {
			closers = append(closers, ch.Close)
		}
		if queue != nil && !(ch.Leader && ch.LeaderTurns) {
			queue.Register(ch.Name, turnqueue.Channel{Out: ch.Sender, Restore: ch.Restore})
		}
		if err = a.start(ctx, gctx, g, submit, a.asLeader(ch, queue)); err != nil {
			break
		}
	}
	if err == nil {
		// Keep serving until asked to stop, even when a channel gave up.
		g.Go(func() error { <-gctx.Done(); return nil })
		if a.Access.Nobody() {
			a.Log.Warn("nobody may talk to the bot yet: access.open is false and no user or admin is allowed. Write to the bot, then run `bot allow CODE` with the code logged here, or list your id in access.admins")
		}
		a.Log.Info("running", "telegram", cfg.TelegramEnabled(), "whatsapp", cfg.WhatsApp.Enabled)
		err = g.Wait() // returns when ctx ends (or a channel fails)
		inFlight, queued := disp.Stats()
		a.Log.Info("stopping: no new updates; letting turns in flight finish",
			"cause", context.Cause(ctx), "in_flight", inFlight, "queued", queued, "timeout", cfg.Shutdown.Timeout)
	} else {
		// A channel could not start: the ones already running stop too.
		cancel()
		_ = g.Wait()
		if ctx.Err() != nil {
			// Asked to stop while starting (a query cut short by the
			// stop): that is a stop, not a failure.
			a.Log.Info("stopped while starting the channels", "cause", context.Cause(ctx), "err", err)
			err = nil
		}
	}
	derr := disp.Close()
	for _, c := range closers {
		derr = errors.Join(derr, c())
	}
	if err == nil && derr == nil {
		a.Log.Info("turns finished; flushing the write queue", "queued", a.Store.WriteStats().Queued)
	}
	return errors.Join(err, derr)
}

// start brings one channel up: replies left unsent → messages left
// unanswered → health → run.
func (a *App) start(ctx, gctx context.Context, g *errgroup.Group, submit func(pipeline.Inbound, pipeline.Sender) error, ch Channel) error {
	var unsent *chat.Redelivery
	if a.Outbox != nil {
		var err error
		if unsent, err = a.unsent(ctx, ch.Name); err != nil {
			return err
		}
	}
	if unsent != nil && !ch.Connects {
		// Replies stored but never sent by the last run go first, then
		// the messages accepted before a stop but never answered.
		if err := a.redeliver(ctx, unsent, ch.Name, ch.Sender); err != nil {
			return err
		}
	}
	window := ch.Window
	if window <= 0 {
		window = PendingWindow
	}
	pending, err := chat.Pending(ctx, a.Store, ch.Name, window)
	if err != nil {
		return fmt.Errorf("listing unanswered %s messages: %w", ch.Name, err)
	}
	for _, in := range pending {
		if err := submit(in, ch.Sender); err != nil {
			a.Log.Warn("resubmitting an unanswered message", "key", in.Key, "err", err)
		}
	}
	if len(pending) > 0 {
		a.Log.Info("answering messages left unanswered by the last run", "channel", ch.Name, "count", len(pending))
	}
	if ch.Health != nil {
		a.Health.Add(ops.Channel(ch.Name, ch.Health))
	}
	if a.Outbox != nil {
		// Replies the platform did not take (pipeline.ErrNotDelivered)
		// go out again once it does.
		g.Go(func() error { return a.Outbox.RunRetries(gctx, ch.Name, ch.Sender) })
	}
	if a.Shared != nil {
		// The same for every replica's replies, from the database.
		g.Go(func() error { return a.Shared.RunRetries(gctx, ch.Name, ch.Sender) })
	}
	if !ch.Connects {
		g.Go(func() error { return ch.Run(gctx) })
		return nil
	}
	if unsent != nil {
		// The sender waits for the connection, which Run makes: the
		// replies the last run never sent go out once it is up.
		g.Go(func() error {
			if err := a.redeliver(gctx, unsent, ch.Name, ch.Sender); err != nil && gctx.Err() == nil {
				a.Log.Error("sending the replies the last run never sent", "channel", ch.Name, "err", err)
			}
			return nil
		})
	}
	// A failure (not linked, logged out) stops only this channel: it is
	// logged, the others keep running.
	g.Go(func() error {
		if err := ch.Run(gctx); err != nil {
			a.Log.Error("a channel stopped; the other channels keep running", "channel", ch.Name, "err", err)
		}
		return nil
	})
	return nil
}

// unsent sorts out the replies of channel the last run stored but never
// sent; before anything of the channel is answered.
func (a *App) unsent(ctx context.Context, channel string) (*chat.Redelivery, error) {
	r, err := a.Outbox.Unsent(ctx, a.Store, channel, PendingWindow)
	if err != nil {
		return nil, fmt.Errorf("listing the %s replies left unsent by the last run: %w", channel, err)
	}
	return r, nil
}

// redeliver sends them.
func (a *App) redeliver(ctx context.Context, r *chat.Redelivery, channel string, out pipeline.Sender) error {
	sent, unsure, err := r.Send(ctx, out)
	if sent > 0 || unsure > 0 {
		a.Log.Info("sent the replies the last run stored but never sent", "channel", channel, "sent", sent, "maybe_delivered_not_resent", unsure)
	}
	if err != nil {
		return fmt.Errorf("sending the %s replies left unsent by the last run: %w", channel, err)
	}
	return nil
}
