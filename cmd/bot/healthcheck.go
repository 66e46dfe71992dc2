package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/recallbot/recall/config"
)

// healthcheckTimeout bounds the whole request of `bot healthcheck`.
const healthcheckTimeout = 3 * time.Second

// runHealthcheck asks the running bot's /healthz (on http.listen) and
// returns nil when it answers 200; the report goes to stdout either way.
// Docker's HEALTHCHECK runs it: the image has no curl.
func runHealthcheck(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return usageError("usage: bot healthcheck (checks http://<http.listen>/healthz; exit 0 when healthy)")
	}
	url, err := healthURL(cfg.HTTP.Listen)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	// No proxy: the server is local.
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("unhealthy: %s did not answer within %s", url, healthcheckTimeout)
		}
		return fmt.Errorf("unhealthy: %w (is the bot running, with this http.listen?)", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return fmt.Errorf("unhealthy: reading the answer of %s: %w", url, err)
	}
	report := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("unhealthy: %s answered %s: %s", url, resp.Status, report)
	}
	fmt.Fprintln(stdout, report)
	return nil
}

// healthURL is the /healthz address for a listen address: a wildcard or
// empty host is reached on 127.0.0.1.
func healthURL(listen string) (string, error) {
	if listen == "" {
		return "", errors.New("http.listen is empty, so the health server is off and there is nothing to check; set http.listen (e.g. 127.0.0.1:9090)")
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("http.listen %q: %w", listen, err)
	}
	if port == "0" {
		return "", fmt.Errorf("http.listen %q has port 0 (a random port): set a fixed port to check it", listen)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz", nil
}
