package llm

import (
	"context"
	"time"
)

// SetSleep replaces the backoff sleep of c (tests only).
func SetSleep(c *Client, f func(ctx context.Context, d time.Duration) error) { c.sleep = f }

// SetJitter replaces the jitter function of c (tests only).
func SetJitter(c *Client, f func(limit time.Duration) time.Duration) { c.jitter = f }
