package app

import (
	"context"
	"fmt"

	"github.com/recallbot/recall/memory"
)

// Erase is /purge without the chat, for `bot purge`: it removes what scope
// selects from the store (the turn queue included on PostgreSQL), then what
// lies beside the store — replies waiting in the delivery journal, kept
// photos, the owner's /export files — and, when sender is set, the
// person's messages in the groups they wrote in (memory.Store.PurgeSender)
// with what was built from them. own and groups say what went.
func (a *App) Erase(ctx context.Context, scope memory.PurgeScope, sender *memory.SenderScope) (own, groups memory.PurgeReport, err error) {
	own, err = a.Store.Purge(ctx, scope)
	if err != nil {
		return own, groups, fmt.Errorf("purging %s: %w", scope.Owner, err)
	}
	if err := a.forgetUndelivered(scope); err != nil {
		return own, groups, fmt.Errorf("removing the purged data of %s beside the store: %w", scope.Owner, err)
	}
	if sender != nil {
		if groups, err = a.Store.PurgeSender(ctx, *sender); err != nil {
			return own, groups, err
		}
	}
	return own, groups, nil
}
