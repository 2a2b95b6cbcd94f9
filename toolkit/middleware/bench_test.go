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

// BenchmarkRetry measures an in-process call of an idempotent tool
// through Retry (its waits skipped): answered by the first attempt of
// three, and by the second and last of two after an unavailable.
func BenchmarkRetry(b *testing.B) {
	noWait := func(context.Context, time.Duration) error { return nil }
	for _, bc := range []struct {
		name     string
		attempts int
		fails    bool
	}{
		{"first-attempt", 3, false},
		{"last-attempt", 2, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tk := toolkit.New(nil)
			tk.Use(middleware.Retry{MaxAttempts: bc.attempts, Sleep: noWait}.Middleware())
			n := 0
			tool := toolkit.Raw("flaky", "F.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				if n++; bc.fails && n%2 == 1 {
					return toolkit.NewError(toolkit.CodeUnavailable, "down")
				}
				return w.Write(toolkit.Text("ok"))
			})
			if err := tk.Add(tool, toolkit.WithIdempotency(toolkit.Idempotent)); err != nil {
				b.Fatal(err)
			}
			input := map[string]any{"q": "cats", "limit": 10, "lang": "en", "safe": true, "page": 2, "sort": "date"}
			call := toolkit.ToolCall{ID: "c", Name: "flaky", Session: "s", Input: input}
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
