package chat

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
)

// TestHugeMessageDoesNotCrashIntake: a 30 MB message was stored whole at
// intake, and SQLite's driver panicked indexing it, killing the bot; the
// platform then delivered it again at every restart. It is stored cut
// (memory.MaxMessageBytes), and Pending runs it again cut.
func TestHugeMessageDoesNotCrashIntake(t *testing.T) {
	f := newFixture(t, nil, Options{})
	in := &Intake{Store: f.store, Counter: llm.NewCounter("gpt-4o-mini"), Wait: time.Minute}
	ctx := context.Background()
	huge := strings.Repeat("paste other text ", 30<<20/17)
	must(t, in.Accept(ctx, inbound("1", huge)))
	must(t, f.store.Flush(ctx))
	again, err := Pending(ctx, f.store, key.Channel, time.Hour)
	must(t, err)
	if len(again) != 1 || len(again[0].Text) > memory.MaxMessageBytes || !strings.Contains(again[0].Text, "[… cut: the message was 30 MB") {
		t.Fatalf("pending after a huge message: %d messages", len(again))
	}
}
