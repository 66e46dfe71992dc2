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

func TestCapAndFullJitter(t *testing.T) {
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{{0, 100 * time.Millisecond}, {3, 800 * time.Millisecond}, {4, time.Second}, {80, time.Second}} {
		if got := Cap(100*time.Millisecond, time.Second, tc.attempt); got != tc.want {
			t.Errorf("Cap(attempt %d) = %v, want %v", tc.attempt, got, tc.want)
		}
	}
	for range 1000 {
		if d := FullJitter(50 * time.Millisecond); d < 0 || d > 50*time.Millisecond {
			t.Fatalf("FullJitter out of range: %v", d)
		}
	}
	if d := FullJitter(0); d != 0 {
		t.Errorf("FullJitter(0) = %v", d)
	}
}
