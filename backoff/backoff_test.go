package backoff

import (
	"context"
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	base, max := 100*time.Millisecond, 2*time.Second
	for attempt, want := range []time.Duration{100, 200, 400, 800, 1600, 2000, 2000} {
		want *= time.Millisecond
		for range 50 {
			if d := Delay(base, max, attempt); d < want/2 || d > want {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, want/2, want)
			}
		}
	}
	if d := Delay(0, time.Second, 3); d != 0 {
		t.Errorf("zero base gives %v", d)
	}
}

func TestSleepEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep did not stop when its context ended")
	}
	if !Sleep(context.Background(), time.Millisecond) {
		t.Error("Sleep reported a cancellation that did not happen")
	}
}
