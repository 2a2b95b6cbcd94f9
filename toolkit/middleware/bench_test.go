package middleware_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// BenchmarkChain measures an in-process call of a trivial typed tool
// through real middlewares: logging (a JSON line to io.Discard), a rate
// limit that never refuses, and a timeout; plus the same with the cache
// answering.
func BenchmarkChain(b *testing.B) {
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	echo := toolkit.Func("echo", "Echo.", func(ctx context.Context, in textIn) (string, error) { return in.Text, nil })
	for _, bc := range []struct {
		name string
		mws  []toolkit.Middleware
	}{
		{"logging+ratelimit+timeout", []toolkit.Middleware{
			middleware.Logging(logger),
			middleware.RateLimit{Rate: 1e12}.Middleware(),
			middleware.Timeout{Default: time.Minute}.Middleware(),
		}},
		{"cache-hit", []toolkit.Middleware{middleware.Cache{}.Middleware()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tk := toolkit.New(nil)
			tk.Use(bc.mws...)
			if err := tk.Add(echo, toolkit.ReadOnly()); err != nil {
				b.Fatal(err)
			}
			call := toolkit.ToolCall{ID: "c", Name: "echo", Session: "s", Input: map[string]any{"text": "hi"}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if r := tk.Invoke(ctx, call); r.State != toolkit.StateSuccess {
					b.Fatal(r)
				}
			}
		})
	}
}
