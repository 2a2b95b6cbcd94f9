package main

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// chain returns the worker's middleware, outermost first: logging (so
// every call is logged, refused ones included), the mounts' middleware,
// the rate limits in config order, then the timeouts (so a call's deadline
// covers only the tool). timedOut, when set, is told of each call the
// timeouts ended (ops.timedOut).
func chain(cfg *config.Config, log *slog.Logger, mounted []toolkit.Middleware, timedOut func()) []toolkit.Middleware {
	m := cfg.Middleware
	out := []toolkit.Middleware{cfg.CallLog(log).Middleware()}
	out = append(out, mounted...)
	for _, r := range m.RateLimits {
		out = append(out, rateLimit(r))
	}
	if m.DefaultTimeout > 0 || len(m.Timeouts) > 0 {
		out = append(out, timeouts(middleware.Timeout{Default: m.DefaultTimeout, PerTool: m.Timeouts}, timedOut))
	}
	return out
}

// timeouts is t's middleware, telling timedOut (when set) of each call
// whose deadline from t ended it: the call ends with code timeout while
// its own context, the caller's, still lives. A call its caller's cancel
// or deadline ended is not told: the bus counts those
// (bus.WorkerCounters.Cancelled).
func timeouts(t middleware.Timeout, timedOut func()) toolkit.Middleware {
	mw := t.Middleware()
	if timedOut == nil {
		return mw
	}
	return func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			var expired bool
			err := mw(func(tctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				err := next(tctx, call, w)
				expired = errors.Is(context.Cause(tctx), middleware.ErrTimeout)
				return err
			})(ctx, call, w)
			if expired && ctx.Err() == nil && toolkit.CodeOf(err) == toolkit.CodeTimeout {
				timedOut()
			}
			return err
		}
	}
}

// rateLimit turns one configured token bucket into middleware. A limit
// with a tool list lets the other tools through untouched.
func rateLimit(r config.RateLimit) toolkit.Middleware {
	rl := middleware.RateLimit{Rate: r.Rate, Burst: r.Burst, MaxKeys: r.MaxKeys}
	switch r.Key {
	case config.KeyTool:
		rl.By = middleware.ByTool
	case config.KeyGlobal:
		rl.Key = func(*toolkit.Call) string { return "" }
	default:
		rl.By = middleware.BySession
	}
	limited := rl.Middleware()
	if len(r.Tools) == 0 {
		return limited
	}
	tools := slices.Clone(r.Tools)
	return func(next toolkit.Handler) toolkit.Handler {
		h := limited(next)
		return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			if slices.Contains(tools, call.Name) {
				return h(ctx, call, w)
			}
			return next(ctx, call, w)
		}
	}
}
