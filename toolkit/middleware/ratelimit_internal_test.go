package middleware

import (
	"fmt"
	"strings"
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

// A session name is the caller's to choose, bounded only by its
// request's size: MaxKeys buckets of sessions with 64 KiB names held
// 4 GiB of keys. A limiter keeps at most MaxRateLimitKeyBytes of keys,
// forgetting buckets at random past it as past MaxKeys.
func TestLimiterKeyBytesBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now } // never moves: no bucket refills
	l := newLimiter(RateLimit{Rate: 0.01, Burst: 2, Now: clock})
	long := strings.Repeat("x", 64<<10)
	n := MaxRateLimitKeyBytes/len(long) + 100
	for i := range n {
		if wait := l.take(fmt.Sprint(i, long)); wait != 0 {
			t.Fatalf("new key %d refused: %v", i, wait)
		}
	}
	l.mu.Lock()
	held := 0
	for k := range l.buckets {
		held += len(k)
	}
	counted := l.bytes
	l.mu.Unlock()
	if held > MaxRateLimitKeyBytes {
		t.Errorf("%d keys of %d KiB: %d KiB of keys kept, want at most %d KiB", n, len(long)>>10, held>>10, MaxRateLimitKeyBytes>>10)
	}
	if counted != held {
		t.Errorf("%d bytes of keys counted, %d held", counted, held)
	}
	// The limit still holds for a key that stays.
	l.take("steady")
	l.take("steady")
	if wait := l.take("steady"); wait == 0 {
		t.Error("a third call within the burst of 2 was let through")
	}
	// Swept buckets give their bytes back.
	now = now.Add(time.Hour)
	for i := range 1024 {
		l.take(fmt.Sprint("s", i))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	held = 0
	for k := range l.buckets {
		held += len(k)
	}
	if l.bytes != held {
		t.Errorf("after a sweep %d bytes of keys counted, %d held", l.bytes, held)
	}
}
