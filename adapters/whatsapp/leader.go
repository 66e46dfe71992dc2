package whatsapp

import "context"

// Lease is a leader lease shared by the replicas of one bot (on
// PostgreSQL; the lease package's *Lease satisfies it): Run campaigns until
// ctx ends, runs work while this replica holds the lease — cancelling
// work's context when the lease is lost (not renewed before it expired, or
// taken over) — and campaigns again; at the end it releases the lease, so
// another replica takes it at once. A replica that dies without releasing
// loses it when it expires.
type Lease interface {
	Run(ctx context.Context, work func(ctx context.Context) error) error
}

// RunLeader is Run on the replica that holds l only: WhatsApp accepts one
// connection per linked device (a second one replaces the first), so of
// the replicas sharing the session store (Options.DatabaseURL) exactly one
// connects. The others stand by, healthy, until the lease comes to them —
// at once when the holder stops, within the lease's expiry when it dies.
// When this replica loses the lease it disconnects before the next holder
// may connect; when ctx ends the connection stays up for the replies still
// being sent, as with Run (Close disconnects).
func (a *Adapter) RunLeader(ctx context.Context, l Lease) error {
	a.standby.Store(true)
	defer a.standby.Store(false)
	return l.Run(ctx, func(held context.Context) error {
		err := a.Run(held)
		if ctx.Err() == nil { // the lease was lost, or the channel failed: let go of the connection
			a.Yield()
			if err == nil {
				a.log.Warn("lost the WhatsApp lease: disconnected; another replica takes the connection over")
			}
		}
		return err
	})
}

// Yield disconnects once this replica lost the WhatsApp lease (or its
// run failed), so the next holder's connection is not replaced by this
// one (app.Channel.Yield). Run may be called again afterwards.
func (a *Adapter) Yield() {
	a.client.Disconnect()
	a.conn.poke()
}
