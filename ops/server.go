package ops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/recallbot/recall/connlimit"
)

// Handler routes GET /healthz to health and GET /metrics to metrics (nil:
// 404); / lists the two.
func Handler(health, metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", health)
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "Recall: GET /healthz (health as JSON), GET /metrics (Prometheus)")
	})
	return mux
}

// MaxConns caps the connections the server holds; at the cap a new one
// takes the place of the oldest silent one (see connlimit).
const MaxConns = 64

// ShutdownGrace is how long requests in progress may take once Serve's ctx
// ends.
const ShutdownGrace = 5 * time.Second

// Serve serves h on ln until ctx ends, then lets requests in progress finish
// (ShutdownGrace) and returns nil. It closes ln. Another error means the
// server failed.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv, guard := connlimit.Server(h, MaxConns)
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 30*time.Second
	served := make(chan error, 1)
	go func() { served <- srv.Serve(guard.Listener(ln)) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving http on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("stopping the http server: %w", err)
	}
	return nil
}
