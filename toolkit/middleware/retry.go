package middleware

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// DefaultRetryCodes are the codes Retry retries when Codes is nil: the
// ones that say "not now" rather than "not this".
var DefaultRetryCodes = []toolkit.Code{toolkit.CodeOverloaded, toolkit.CodeUnavailable}

// Retry runs a failed call again, for tools that declare it safe
// (Tool.Idempotency().Retryable(): idempotent or free of side effects);
// other tools pass through untouched.
//
// Only failures before the first chunk are retried. Chunks are forwarded
// as they are written, never buffered, so streaming keeps its latency; once
// the caller has seen output from an attempt, that attempt's failure is
// the call's result, because retrying would repeat output the caller
// already has. Nor is an attempt that asked its caller something
// (toolkit.Ask): its user would be asked again. Progress reports and log
// messages do not count.
//
// A failure is retried when its code (toolkit.CodeOf) is in Codes, the
// call's context is live, and attempts remain. The wait before attempt n+1
// is Base·2^(n-1), capped at Max, with jitter (a uniform pick in its upper
// half); an error's RetryAfter, when longer, is honoured, and one longer
// than Max ends the retrying instead. Each attempt gets the input the
// first one got, whatever inner middleware or the tool did to it: a new
// map handed on, or keys of the map set or deleted in place (each
// attempt but the last gets a copy, values nested in it shared; the
// last, which no attempt follows, gets the input itself).
//
// The zero value makes up to 3 attempts, waits from 100ms up to 2s, and
// retries DefaultRetryCodes.
type Retry struct {
	// MaxAttempts counts the first attempt; zero means 3, one disables
	// retrying.
	MaxAttempts int
	// Base is the first wait; zero means 100ms.
	Base time.Duration
	// Max caps each wait; zero means 2s.
	Max time.Duration
	// Codes are the retried codes; nil means DefaultRetryCodes. Add
	// toolkit.CodeToolError for tools whose failures are mostly transient,
	// or toolkit.CodeTimeout with a Timeout middleware inside Retry.
	Codes []toolkit.Code
	// Sleep waits d or until ctx ends; nil means a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Middleware returns the middleware.
func (r Retry) Middleware() toolkit.Middleware {
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = 3
	}
	if r.Base <= 0 {
		r.Base = 100 * time.Millisecond
	}
	if r.Max <= 0 {
		r.Max = 2 * time.Second
	}
	if r.Codes == nil {
		r.Codes = DefaultRetryCodes
	}
	r.Codes = slices.Clone(r.Codes)
	if r.Sleep == nil {
		r.Sleep = sleep
	}
	return func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			if call.Tool == nil || !call.Tool.Idempotency().Retryable() {
				return next(ctx, call, w)
			}
			input := call.Input
			for attempt := 1; ; attempt++ {
				call.Input = input
				if attempt < r.MaxAttempts { // kept as it came for the next, whatever this one changes in place
					call.Input = maps.Clone(input)
				}
				obs := &observer{w: w}
				err := next(ctx, call, obs)
				if err == nil || obs.chunks > 0 || obs.asked || attempt >= r.MaxAttempts || ctx.Err() != nil ||
					!slices.Contains(r.Codes, toolkit.CodeOf(err)) {
					return err
				}
				wait := r.backoff(attempt)
				var te *toolkit.Error
				if errors.As(err, &te) && te.RetryAfter > wait {
					if te.RetryAfter > r.Max {
						return err
					}
					wait = te.RetryAfter
				}
				if serr := r.Sleep(ctx, wait); serr != nil {
					return serr // the caller is gone: the call is interrupted
				}
			}
		}
	}
}

// backoff is the wait after the given failed attempt (1-based).
func (r Retry) backoff(attempt int) time.Duration {
	d := r.Max
	if shift := attempt - 1; shift < 30 {
		if b := r.Base << shift; b > 0 && b < r.Max {
			d = b
		}
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
