package middleware

import (
	"fmt"
	"testing"
	"time"
)

// Buckets that have refilled are forgotten, so idle sessions cost nothing.
func TestLimiterForgetsFullBuckets(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLimiter(RateLimit{Rate: 10, Burst: 5, Now: func() time.Time { return now }})
	for i := range 1023 {
		if wait := l.take(fmt.Sprint("session-", i)); wait != 0 {
			t.Fatalf("new key refused: %v", wait)
		}
	}
	if n := len(l.buckets); n != 1023 {
		t.Fatalf("%d buckets", n)
	}
	now = now.Add(time.Second) // every bucket refills (1 token short of 5 at 10/s)
	l.take("busy")             // the 1024th take sweeps
	if n := len(l.buckets); n != 1 {
		t.Errorf("%d buckets after the sweep, want only the one just used", n)
	}
}
