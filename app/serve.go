package app

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"time"

	"github.com/recallbot/recall/media"
	"github.com/recallbot/recall/ops"
)

// ServeHTTP starts the health and metrics server on http.listen (nothing
// when it is empty) and returns the function that stops it. Failing to
// listen is an error naming http.listen, except when optional (the terminal
// chat, which runs without the server then: another Recall may hold the
// port).
func (a *App) ServeHTTP(optional bool) (stop func(), err error) {
	addr := a.Config.HTTP.Listen
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if optional {
			a.Log.Warn("the health and metrics server is off: cannot listen on http.listen", "addr", addr, "err", err)
			return func() {}, nil
		}
		return nil, fmt.Errorf("http.listen %s: %w (is another Recall running? set http.listen to a free host:port, or to \"\" in config.yaml to turn the health and metrics server off)", addr, err)
	}
	a.Log.Info("serving /healthz and /metrics", "addr", ln.Addr().String())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := ops.Serve(ctx, ln, ops.Handler(a.Health, a.Metrics.Handler())); err != nil {
			a.Log.Error("the health and metrics server failed", "addr", addr, "err", err)
		}
	}()
	return func() {
		cancel()
		<-done
	}, nil
}

// StartRetention runs the retention sweep (memory.retention_days) until ctx
// ends or the returned function is called; that function returns once the
// sweep stopped. Kept photos (media.keep_images, now or before) and the
// /export files in data/exports older than the retention go at each sweep
// too.
func (a *App) StartRetention(ctx context.Context) (stop func()) {
	cfg := a.Config
	var wg sync.WaitGroup
	rctx, cancel := context.WithCancel(ctx)
	wg.Go(func() {
		if err := a.Store.RunRetention(rctx, cfg.Memory.RetentionDays, cfg.Memory.RetentionInterval); err != nil && rctx.Err() == nil {
			a.Log.Error("the retention sweep stopped", "err", err)
		}
	})
	if cfg.Memory.RetentionDays > 0 {
		wg.Go(func() { a.fileRetention(rctx, cfg.Memory.RetentionDays, cfg.Memory.RetentionInterval) })
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// fileRetention removes kept photos and /export files older than days
// every interval until ctx ends.
func (a *App) fileRetention(ctx context.Context, days int, interval time.Duration) {
	if interval <= 0 {
		interval = time.Hour
	}
	kept := a.Kept
	if kept == nil { // photos kept while media.keep_images was on
		kept = media.NewKept(filepath.Join(a.Config.Data.Dir, MediaDir))
	}
	exports := filepath.Join(a.Config.Data.Dir, ExportsDir)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		cutoff := time.Now().AddDate(0, 0, -days)
		if n, err := kept.PurgeOlder(cutoff); err != nil {
			a.Log.Error("retention of kept photos", "err", err)
		} else if n > 0 {
			a.Log.Info("retention removed old kept photos", "photos", n)
		}
		if n, err := PurgeExportsOlder(exports, cutoff); err != nil {
			a.Log.Error("retention of exports", "err", err)
		} else if n > 0 {
			a.Log.Info("retention removed old exports", "files", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
