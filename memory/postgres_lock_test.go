package memory

import (
	"context"
	"fmt"
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

// TestPostgresLocksShareOneSession: a replica summarizing 50 conversations
// at once holds 50 locks on one connection besides its pool, not on 50
// (200 users summarized at once ran PostgreSQL out of connections: "too
// many clients already", and their summaries failed). The locks are still
// each their own: another replica cannot take one that is held, this one
// cannot take it twice, and each is released alone, or all with the store.
func TestPostgresLocksShareOneSession(t *testing.T) {
	ctx := context.Background()
	url := pgTestURL(t) // one schema: the replicas' database
	app := fmt.Sprintf("recall-locks-%d", time.Now().UnixNano())
	a, err := OpenPostgres(ctx, url+"&pool_max_conns=1&application_name="+app)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenPostgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	name := func(i int) string { return fmt.Sprintf("recall-summary:telegram:%d:", i) }
	var unlocks []func()
	for i := range 50 {
		unlock, ok, err := a.TryLock(ctx, name(i))
		if err != nil || !ok {
			t.Fatalf("lock %d: TryLock = %v, %v", i, ok, err)
		}
		unlocks = append(unlocks, unlock)
	}
	var conns int
	if err := b.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&conns); err != nil {
		t.Fatal(err)
	}
	if conns > 2 {
		t.Errorf("holding 50 locks takes %d connections, want at most 2 (the pool's and the lock session)", conns)
	}
	if _, ok, err := b.TryLock(ctx, name(7)); ok || err != nil {
		t.Fatalf("another replica took a held lock: %v, %v", ok, err)
	}
	if _, ok, err := a.TryLock(ctx, name(7)); ok || err != nil {
		t.Fatalf("the holder took its lock a second time: %v, %v", ok, err)
	}
	unlocks[7]()
	unlocks[7]() // again: a no-op
	got, ok, err := b.TryLock(ctx, name(7))
	if err != nil || !ok {
		t.Fatalf("after unlock: TryLock = %v, %v", ok, err)
	}
	got()
	if _, ok, err := b.TryLock(ctx, name(8)); ok || err != nil {
		t.Fatalf("unlocking one lock released another: %v, %v", ok, err)
	}
	a.Close() // a replica stopping (or dying) releases what it held
	for _, i := range []int{8, 49} {
		unlock, ok, err := b.TryLock(ctx, name(i))
		if err != nil || !ok {
			t.Fatalf("lock %d once its holder closed: TryLock = %v, %v", i, ok, err)
		}
		unlock()
	}
	unlocks[9]() // after Close: a no-op
}
