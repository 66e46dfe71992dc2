package memory

import (
	"context"
	"testing"
	"time"
)

// TestPostgresLockOutsideThePool: a summary's lock is held while the model
// writes the summary, and the summary then needs the store. Even with a
// pool of one connection, the store answers while the lock is held; a
// second TryLock of the same name (another replica) fails at once, and
// succeeds once the lock is released.
func TestPostgresLockOutsideThePool(t *testing.T) {
	ctx := context.Background()
	p, err := OpenPostgres(ctx, pgTestURL(t)+"&pool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	unlock, ok, err := p.TryLock(ctx, "recall-summary:telegram:1:")
	if err != nil || !ok {
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := p.SchemaVersion(qctx); err != nil {
		t.Fatalf("the store is stuck while a lock is held: %v", err)
	}
	if _, ok, err := p.TryLock(ctx, "recall-summary:telegram:1:"); ok || err != nil {
		t.Fatalf("a second holder took the lock: %v, %v", ok, err)
	}
	unlock()
	again, ok, err := p.TryLock(ctx, "recall-summary:telegram:1:")
	if err != nil || !ok {
		t.Fatalf("after unlock: TryLock = %v, %v", ok, err)
	}
	again()
}
