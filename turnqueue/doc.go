// Package turnqueue owns the queue of turns shared by Recall replicas on
// PostgreSQL (table turn_queue): any replica may receive an update, every
// replica may run it, and each update is answered once, in order within its
// conversation.
//
// Why a claimed queue row rather than a per-conversation advisory lock: a
// lock orders turns only by who asks first, and a turn lives only in the
// memory of the replica that received it — kill that replica and the turn
// is gone until it restarts. A row is durable the moment the update is
// acknowledged, its id is the order of receipt, and its lease says who runs
// it: a replica killed mid-turn stops renewing, the lease expires, and
// another replica claims the row and finishes the turn (the dedupe stage and
// the delivery journal then keep a reply that was already stored from being
// sent twice).
//
//   - Submit inserts a row; the unique (conversation, platform message id)
//     drops a redelivery, whichever replica receives it, as long as rows are
//     kept (Options.Keep, 48h by default: longer than Telegram retries).
//   - A worker claims the oldest unfinished row whose conversation has no
//     earlier unfinished row, skipping rows locked by other workers (FOR
//     UPDATE SKIP LOCKED), and leases it for Options.Lease; it renews the
//     lease while the turn runs and marks the row done when it ends. A row
//     whose lease expired is claimed again (attempts counts the claims).
//   - Inserts NOTIFY the replicas (LISTEN recall_turns), so an idle worker
//     starts at once; every replica also looks again every Options.Rescan,
//     which is how expired leases are found.
//
// Limits: a replica that stalls (not dies) for longer than a lease while
// its turn still runs is stopped when it next fails to renew, but what it
// sent before is sent; leases compare the replicas' clocks (NTP).
package turnqueue
