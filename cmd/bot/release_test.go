package main

import (
	"context"
	"errors"
	"testing"

	"github.com/recallbot/recall/ops"
)

// Start-up is over when every chat channel reports healthy, whatever the
// other parts say (an LLM down at start does not keep the pages resident).
func TestReadyWhenEveryChannelIsHealthy(t *testing.T) {
	ctx := context.Background()
	fail := func(context.Context) error { return errors.New("down") }
	ok := func(context.Context) error { return nil }
	h := ops.NewHealth(nil, ops.Check{Name: "llm", Run: fail})
	if !ready(ctx, h, nil) {
		t.Error("the terminal chat (no channels) is not ready")
	}
	if ready(ctx, h, []string{"telegram"}) {
		t.Error("ready before the telegram channel reports")
	}
	h.Add(ops.Check{Name: "telegram", Run: ok})
	h.Add(ops.Check{Name: "whatsapp", Run: fail})
	if !ready(ctx, h, []string{"telegram"}) {
		t.Error("not ready with telegram healthy and the LLM down")
	}
	if ready(ctx, h, []string{"telegram", "whatsapp"}) {
		t.Error("ready with whatsapp failing")
	}
}
