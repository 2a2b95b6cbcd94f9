package middleware

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	if err := sleep(context.Background(), time.Nanosecond); err != nil {
		t.Errorf("sleep = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) { // returns at once: never hangs
		t.Errorf("sleep on a cancelled context = %v", err)
	}
}

func TestBackoffBounds(t *testing.T) {
	r := Retry{Base: 100 * time.Millisecond, Max: 2 * time.Second}
	for attempt := 1; attempt <= 70; attempt++ {
		want := min(r.Base<<min(attempt-1, 20), r.Max)
		for range 20 {
			if d := r.backoff(attempt); d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", attempt, d, want/2, want)
			}
		}
	}
}
