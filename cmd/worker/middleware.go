package main

import (
	"context"
	"log/slog"
	"slices"

	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// chain returns the worker's middleware, outermost first: logging (so
// every call is logged, refused ones included), the mounts' middleware,
// the rate limits in config order, then the timeouts (so a call's deadline
// covers only the tool).
func chain(cfg *config.Config, log *slog.Logger, mounted []toolkit.Middleware) []toolkit.Middleware {
	m := cfg.Middleware
	out := []toolkit.Middleware{cfg.CallLog(log).Middleware()}
	out = append(out, mounted...)
	for _, r := range m.RateLimits {
		out = append(out, rateLimit(r))
	}
	if m.DefaultTimeout > 0 || len(m.Timeouts) > 0 {
		out = append(out, middleware.Timeout{Default: m.DefaultTimeout, PerTool: m.Timeouts}.Middleware())
	}
	return out
}

// rateLimit turns one configured token bucket into middleware. A limit
// with a tool list lets the other tools through untouched.
func rateLimit(r config.RateLimit) toolkit.Middleware {
	rl := middleware.RateLimit{Rate: r.Rate, Burst: r.Burst}
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
