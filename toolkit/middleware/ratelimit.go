package middleware

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// KeyBy chooses what a RateLimit counts calls by.
type KeyBy int

const (
	// BySession (the zero value): one bucket per session of a caller
	// identity (ToolCall.Scope: two identities' sessions of one name are
	// two). Calls without a session share their identity's bucket.
	BySession KeyBy = iota
	// ByTool: one bucket per tool, shared by every session.
	ByTool
	// BySessionAndTool: one bucket per session and tool.
	BySessionAndTool
)

// RateLimit refuses calls beyond a rate with a token bucket per key. The
// zero value limits nothing.
//
// A bucket holds up to Burst tokens and refills at Rate tokens per second;
// each call takes one. A call that finds the bucket empty does not run: it
// ends with code overloaded and a RetryAfter saying when a token will be
// there (the final response's metadata carries retry_after_ms). A call
// whose context has ended takes no token: it will not run. Buckets
// that have refilled completely are forgotten (a full bucket is the same
// as a new one), so memory stays proportional to the keys active in the
// last Burst/Rate seconds, and at most MaxKeys buckets are kept, and
// MaxRateLimitKeyBytes of their keys: a new key past either forgets
// buckets at random, whose keys start again with a full bucket. Sessions are the caller's to choose, so a limit by
// session bounds each session, not a caller who keeps naming new ones
// (that caller gets a full bucket for each anyway); give a limit by a key
// the caller cannot choose (Key, ByTool) for that, and a MaxKeys above
// the number of such keys active at once.
type RateLimit struct {
	// Rate is the sustained number of calls per second per key; zero (or
	// less) means no limit.
	Rate float64
	// Burst is how many calls a key may make at once; zero means
	// max(1, Rate) rounded up.
	Burst int
	// By chooses the key; the zero value is BySession.
	By KeyBy
	// Key, when set, computes the key instead of By.
	Key func(call *toolkit.Call) string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxKeys bounds the buckets kept; zero means DefaultRateLimitKeys.
	MaxKeys int
}

// DefaultRateLimitKeys is the number of buckets a RateLimit whose MaxKeys
// is zero keeps at most.
const DefaultRateLimitKeys = 65536

// MaxRateLimitKeyBytes bounds the bytes of the keys a RateLimit keeps
// buckets for: a session name is the caller's to choose, bounded only by
// its request's size. A key alone over it is kept alone.
const MaxRateLimitKeyBytes = 16 << 20

type bucket struct {
	tokens float64
	last   time.Time
}

type limiter struct {
	cfg     RateLimit
	burst   float64
	mu      sync.Mutex
	buckets map[string]*bucket
	max     int // the most buckets kept
	bytes   int // of the buckets' keys (MaxRateLimitKeyBytes)
	takes   int // since the last sweep
}

// Middleware returns the middleware with its own buckets.
func (r RateLimit) Middleware() toolkit.Middleware {
	if r.Rate <= 0 {
		return func(next toolkit.Handler) toolkit.Handler { return next }
	}
	return newLimiter(r).middleware
}

func newLimiter(r RateLimit) *limiter {
	l := &limiter{cfg: r, burst: float64(r.Burst), buckets: map[string]*bucket{}}
	if l.burst <= 0 {
		l.burst = math.Max(1, math.Ceil(r.Rate))
	}
	if l.cfg.Now == nil {
		l.cfg.Now = time.Now
	}
	l.max = r.MaxKeys
	if l.max <= 0 {
		l.max = DefaultRateLimitKeys
	}
	return l
}

func (l *limiter) middleware(next toolkit.Handler) toolkit.Handler {
	return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		if ctx.Err() != nil {
			// The call has ended (its caller cancelled it, its deadline
			// passed): it will not run, so it takes no token.
			return next(ctx, call, w)
		}
		if wait := l.take(l.key(call)); wait > 0 {
			return &toolkit.Error{
				Code:       toolkit.CodeOverloaded,
				Message:    fmt.Sprintf("RateLimitError: too many calls to '%s'; retry after %v.", call.Name, wait.Round(time.Millisecond)),
				RetryAfter: wait,
			}
		}
		return next(ctx, call, w)
	}
}

func (l *limiter) key(call *toolkit.Call) string {
	if l.cfg.Key != nil {
		return l.cfg.Key(call)
	}
	switch l.cfg.By {
	case ByTool:
		return call.Name
	case BySessionAndTool:
		return call.Scope() + "\x00" + call.Name
	}
	return call.Scope() // the caller's session: another identity's of that name is another
}

// maxWait is the longest wait take reports: the longest Duration, in
// whole milliseconds (as retry_after_ms and the message give it).
var maxWait = time.Duration(math.MaxInt64).Truncate(time.Millisecond)

// take takes a token for key, or returns how long until one is there.
func (l *limiter) take(key string) time.Duration {
	now := l.cfg.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		over := func() bool { return len(l.buckets) >= l.max || l.bytes+len(key) > MaxRateLimitKeyBytes }
		if over() {
			for k := range l.buckets { // at random: map order
				delete(l.buckets, k)
				l.bytes -= len(k)
				if !over() {
					break
				}
			}
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
		l.bytes += len(key)
	}
	if elapsed := now.Sub(b.last).Seconds(); elapsed > 0 {
		b.tokens = math.Min(l.burst, b.tokens+elapsed*l.cfg.Rate)
		b.last = now
	}
	if b.tokens < 1 {
		secs := (1 - b.tokens) / l.cfg.Rate
		if secs >= maxWait.Seconds() { // a rate so low the wait overflows (to 1ms)
			return maxWait
		}
		return max(time.Duration(secs*float64(time.Second)), time.Millisecond)
	}
	b.tokens--
	// A sweep every max(1024, buckets) takes: its cost, one look at each
	// bucket, comes to at most one look per take.
	if l.takes++; l.takes >= max(1024, len(l.buckets)) {
		l.takes = 0
		l.sweep(now)
	}
	return 0
}

// sweep forgets buckets that are full again; l.mu is held.
func (l *limiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.cfg.Rate >= l.burst {
			delete(l.buckets, k)
			l.bytes -= len(k)
		}
	}
}

// size reports the number of buckets kept (for tests).
func (l *limiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}
