package limits

import (
	"context"
	"testing"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/memory/pgtest"
)

// TestRateSharedByReplicas: two replicas on one PostgreSQL database count
// one window per user: the limit holds whichever replica each message
// reaches, the first refusal is told once across them, and the window
// slides for both.
func TestRateSharedByReplicas(t *testing.T) {
	pg, err := memory.OpenPostgres(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	now := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a := NewRate(3, Options{Now: clock}).WithWindows(pg)
	b := NewRate(3, Options{Now: clock}).WithWindows(pg)
	ctx := context.Background()
	steps := []struct {
		r           *Rate
		advance     time.Duration
		ok, told    bool
		retryAtMost time.Duration
	}{
		{r: a, ok: true},
		{r: b, advance: 10 * time.Second, ok: true},
		{r: a, advance: 10 * time.Second, ok: true},
		{r: b, advance: 10 * time.Second, ok: false, told: true, retryAtMost: 30 * time.Second},
		{r: a, ok: false, told: false, retryAtMost: 30 * time.Second},
		{r: b, advance: 31 * time.Second, ok: true}, // the first left the window
		{r: a, ok: false, told: true, retryAtMost: 10 * time.Second},
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		ok, retry, first := s.r.take(ctx, "telegram:42")
		if ok != s.ok || first != s.told || (!ok && (retry <= 0 || retry > s.retryAtMost)) {
			t.Fatalf("step %d: ok=%v retry=%v first=%v; want ok=%v first=%v retry≤%v", i, ok, retry, first, s.ok, s.told, s.retryAtMost)
		}
	}
	if ok, _, _ := a.take(ctx, "telegram:43"); !ok {
		t.Fatal("another user shares the first one's window")
	}
}

// TestQuotaSharedByReplicas: the daily token quota is counted in the
// database, so what one replica's answers used counts on every replica.
func TestQuotaSharedByReplicas(t *testing.T) {
	ctx := context.Background()
	db := pgtest.URL(t)
	open := func() *memory.Store {
		st, err := memory.Open(ctx, memory.Options{Dir: t.TempDir(), DatabaseURL: db})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close(context.Background()) })
		return st
	}
	clk := &clock{now: time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)}
	a := NewQuota(1000, open(), Options{Now: clk.Now})
	b := NewQuota(1000, open(), Options{Now: clk.Now})
	if err := a.Add(ctx, "telegram:5", 1100); err != nil { // answered on replica a
		t.Fatal(err)
	}
	if ok, used, _, err := b.Check(ctx, "telegram:5"); ok || used != 1100 || err != nil {
		t.Fatalf("replica b: Check = %v, %d, %v; want over the quota with 1100 used", ok, used, err)
	}
}
