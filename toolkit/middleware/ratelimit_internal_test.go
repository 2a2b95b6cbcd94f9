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

// A limiter keyed by sessions, which callers choose, keeps at most
// MaxKeys buckets (DefaultRateLimitKeys when zero), however many keys
// come within one refill: none of their buckets is full, so the sweep
// forgets none of them.
func TestLimiterKeysBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now } // never moves: no bucket refills
	for _, tt := range []struct {
		max, want int
	}{{100, 100}, {0, DefaultRateLimitKeys}} {
		l := newLimiter(RateLimit{Rate: 0.01, Burst: 2, MaxKeys: tt.max, Now: clock})
		for i := range tt.want + 5000 {
			if wait := l.take(fmt.Sprint("session-", i)); wait != 0 {
				t.Fatalf("MaxKeys %d: new key %d refused: %v", tt.max, i, wait)
			}
		}
		if n := l.size(); n > tt.want {
			t.Errorf("MaxKeys %d: %d buckets kept, want at most %d", tt.max, n, tt.want)
		}
		// The limit still holds for a key that stays.
		l.take("steady")
		l.take("steady")
		if wait := l.take("steady"); wait == 0 {
			t.Errorf("MaxKeys %d: a third call within the burst of 2 was let through", tt.max)
		}
	}
}
