package telegram

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/connlimit"
)

// secretHeader carries the webhook's secret_token on every update.
const secretHeader = "X-Telegram-Bot-Api-Secret-Token"

// maxUpdate caps the size of one webhook update.
const maxUpdate = 8 << 20

// webhookConns caps the webhook server's connections (Telegram opens up to
// setWebhook's max_connections, 40 by default): a flood of silent
// connections cannot use up the file descriptors (see connlimit).
const webhookConns = 128

// shutdownGrace is how long the webhook server lets requests finish at stop.
const shutdownGrace = 10 * time.Second

// webhookPath is the path Telegram posts to: the path of the webhook URL.
func webhookPath(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("telegram: telegram.webhook.url must be an https URL, got %q", rawURL)
	}
	if u.Path == "" {
		return "/", nil
	}
	return u.Path, nil
}

// serveWebhook listens on Webhook.Listen, registers the webhook with
// Telegram (with the secret token, keeping pending updates), and serves
// updates until ctx ends; then it shuts the server down gracefully. The
// webhook stays registered, so Telegram keeps updates while the bot is down.
func (a *Adapter) serveWebhook(ctx context.Context, me Me) error {
	path, err := webhookPath(a.opts.Webhook.URL)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", a.opts.Webhook.Listen)
	if err != nil {
		return fmt.Errorf("telegram: listening on telegram.webhook.listen %q: %w", a.opts.Webhook.Listen, err)
	}
	h := a.webhookHandler(ctx, me)
	srv, guard := connlimit.Server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	}), webhookConns)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(guard.Listener(ln)) }()
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			a.log.Warn("webhook server shutdown", "err", err)
			_ = srv.Close() // the listener goes; the error says no more
		}
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Warn("webhook server", "err", err)
		}
	}
	a.log.Info("webhook server listening", "addr", ln.Addr().String(), "path", path)
	if a.listening != nil {
		a.listening <- ln.Addr().String()
	}
	err = a.retry(ctx, "setting the webhook", func(ctx context.Context) error {
		_, err := a.api.SetWebhook(ctx, &bot.SetWebhookParams{
			URL: a.opts.Webhook.URL, SecretToken: a.opts.Webhook.Secret, AllowedUpdates: allowedUpdates,
		})
		return err
	})
	if err != nil {
		stop()
		return err
	}
	select {
	case <-ctx.Done():
		stop()
		return nil
	case err := <-served:
		return fmt.Errorf("telegram: webhook server: %w", err)
	}
}

// webhookHandler serves Telegram's update posts. A request without the
// right secret gets 401 and is not looked at; a body that is not an update
// the bot can use gets 200 (logged: a 400 would make Telegram deliver it
// again and hold the chat up); an update is accepted (made durable) and handed to the pipeline,
// then answered 200 — or 500 when it could not be stored and 503 when the
// pipeline is stopping, so that Telegram delivers it again. bg is the
// lifetime of background work (button answers, notices).
func (a *Adapter) webhookHandler(bg context.Context, me Me) http.Handler {
	secret := []byte(a.opts.Webhook.Secret)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.Header.Get(secretHeader)), secret) != 1 {
			a.log.Warn("webhook request with a wrong or missing secret token", "remote", r.RemoteAddr)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxUpdate))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, "update too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "reading the update", http.StatusBadRequest)
			return
		}
		u, err := decodeUpdate(body)
		if u == nil || !json.Valid(body) {
			// Telegram would deliver it again and again (holding up the
			// chat's later updates for up to a day): take it, say so.
			a.log.Warn("webhook: skipping a body that is not an update the bot can use", "err", err)
			w.WriteHeader(http.StatusOK)
			return
		}
		if err != nil {
			a.log.Warn("an update did not fully decode; using its text, chat and sender", "update_id", u.ID, "err", err)
		}
		if err := a.handleOne(r.Context(), bg, me, u); err != nil {
			status := http.StatusInternalServerError
			if !errors.Is(err, errAccept) {
				status = http.StatusServiceUnavailable
			} else {
				a.setHealth(fmt.Errorf("storing incoming messages fails: %w", err))
			}
			a.log.Warn("webhook update not handled; Telegram will deliver it again", "update_id", u.ID, "err", err)
			http.Error(w, "try again later", status)
			return
		}
		a.setHealth(nil)
		w.WriteHeader(http.StatusOK)
	})
}

// errAccept marks an update that could not be stored.
var errAccept = errors.New("accepting the update")

// handleOne accepts and dispatches one webhook update.
func (a *Adapter) handleOne(ctx, bg context.Context, me Me, u *models.Update) error {
	items := []item{a.prepare(u, me)}
	if err := a.acceptPending(ctx, items, make([]bool, 1)); err != nil {
		return fmt.Errorf("%w: %w", errAccept, err)
	}
	a.migrate(ctx, items[0])
	return a.dispatch(bg, items[0])
}
