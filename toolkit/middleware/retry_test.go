package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// flaky fails with the given errors, one per attempt, then succeeds. When
// writeFirst is set, each attempt writes a chunk before failing.
func flaky(c *counter, writeFirst bool, errs ...error) toolkit.Handler {
	return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		n := c.inc()
		if writeFirst {
			if err := w.Write(toolkit.Text(fmt.Sprint("attempt ", n, " "))); err != nil {
				return err
			}
		}
		if n <= len(errs) {
			return errs[n-1]
		}
		return w.Write(toolkit.Text(fmt.Sprint("ok on attempt ", n)))
	}
}

type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return ctx.Err()
}

func TestRetry(t *testing.T) {
	overloaded := toolkit.NewError(toolkit.CodeOverloaded, "busy")
	unavailable := toolkit.NewError(toolkit.CodeUnavailable, "down")
	plain := errors.New("bad request")
	tests := []struct {
		name       string
		retry      middleware.Retry
		idem       toolkit.Idempotency
		writeFirst bool
		errs       []error
		wantRuns   int
		wantCode   toolkit.Code
		wantText   string
		wantWaits  [][2]time.Duration // each wait's [min, max]
	}{
		{
			name: "retries overloaded and unavailable with growing waits", idem: toolkit.Idempotent,
			retry: middleware.Retry{MaxAttempts: 4, Base: 10 * time.Millisecond, Max: time.Second},
			errs:  []error{overloaded, unavailable, overloaded}, wantRuns: 4, wantText: "ok on attempt 4",
			wantWaits: [][2]time.Duration{{5 * time.Millisecond, 10 * time.Millisecond}, {10 * time.Millisecond, 20 * time.Millisecond}, {20 * time.Millisecond, 40 * time.Millisecond}},
		},
		{
			name: "waits are capped at Max", idem: toolkit.NoSideEffects,
			retry: middleware.Retry{MaxAttempts: 4, Base: 10 * time.Millisecond, Max: 15 * time.Millisecond},
			errs:  []error{overloaded, overloaded, overloaded}, wantRuns: 4, wantText: "ok on attempt 4",
			wantWaits: [][2]time.Duration{{5 * time.Millisecond, 10 * time.Millisecond}, {7 * time.Millisecond, 15 * time.Millisecond}, {7 * time.Millisecond, 15 * time.Millisecond}},
		},
		{
			name: "gives up after MaxAttempts with the last failure", idem: toolkit.Idempotent,
			retry: middleware.Retry{MaxAttempts: 2, Base: time.Millisecond},
			errs:  []error{overloaded, unavailable, overloaded}, wantRuns: 2, wantCode: toolkit.CodeUnavailable, wantText: "down",
			wantWaits: [][2]time.Duration{{500 * time.Microsecond, time.Millisecond}},
		},
		{
			name: "the zero value makes 3 attempts", idem: toolkit.Idempotent,
			errs:     []error{overloaded, overloaded, overloaded},
			wantRuns: 3, wantCode: toolkit.CodeOverloaded, wantText: "busy",
			wantWaits: [][2]time.Duration{{50 * time.Millisecond, 100 * time.Millisecond}, {100 * time.Millisecond, 200 * time.Millisecond}},
		},
		{
			name: "tools that are not retryable run once", idem: toolkit.IdempotencyUnknown,
			errs: []error{overloaded}, wantRuns: 1, wantCode: toolkit.CodeOverloaded, wantText: "busy",
		},
		{
			name: "codes not listed are not retried", idem: toolkit.Idempotent,
			errs: []error{plain}, wantRuns: 1, wantCode: toolkit.CodeToolError, wantText: "bad request",
		},
		{
			name: "listed codes are", idem: toolkit.Idempotent,
			retry: middleware.Retry{Codes: []toolkit.Code{toolkit.CodeToolError}, Base: time.Millisecond},
			errs:  []error{plain}, wantRuns: 2, wantText: "ok on attempt 2",
			wantWaits: [][2]time.Duration{{500 * time.Microsecond, time.Millisecond}},
		},
		{
			name: "no retry once output was sent", idem: toolkit.Idempotent, writeFirst: true,
			errs: []error{overloaded}, wantRuns: 1, wantCode: toolkit.CodeOverloaded, wantText: "attempt 1 busy",
		},
		{
			name: "MaxAttempts 1 disables retrying", idem: toolkit.Idempotent,
			retry: middleware.Retry{MaxAttempts: 1},
			errs:  []error{overloaded}, wantRuns: 1, wantCode: toolkit.CodeOverloaded, wantText: "busy",
		},
		{
			name: "a longer RetryAfter is honoured", idem: toolkit.Idempotent,
			retry:    middleware.Retry{Base: time.Millisecond, Max: time.Second},
			errs:     []error{&toolkit.Error{Code: toolkit.CodeOverloaded, Message: "later", RetryAfter: 300 * time.Millisecond}},
			wantRuns: 2, wantText: "ok on attempt 2",
			wantWaits: [][2]time.Duration{{300 * time.Millisecond, 300 * time.Millisecond}},
		},
		{
			name: "a RetryAfter beyond Max ends the retrying", idem: toolkit.Idempotent,
			retry:    middleware.Retry{Base: time.Millisecond, Max: time.Second},
			errs:     []error{fmt.Errorf("wrapped: %w", &toolkit.Error{Code: toolkit.CodeOverloaded, Message: "much later", RetryAfter: time.Minute})},
			wantRuns: 1, wantCode: toolkit.CodeOverloaded, wantText: "wrapped: much later",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c counter
			var s sleeps
			tt.retry.Sleep = s.sleep
			tk := newToolkit(t, tt.retry.Middleware())
			mustAdd(t, tk, raw("flaky", flaky(&c, tt.writeFirst, tt.errs...)), toolkit.WithIdempotency(tt.idem))
			_, final := run(t, tk, context.Background(), toolkit.ToolCall{Name: "flaky"})
			if c.runs() != tt.wantRuns || final.Code != tt.wantCode || final.Text() != tt.wantText {
				t.Errorf("runs %d, final %s %q; want %d, %q %q", c.runs(), final.Code, final.Text(), tt.wantRuns, tt.wantCode, tt.wantText)
			}
			if len(s.d) != len(tt.wantWaits) {
				t.Fatalf("waits %v, want %d", s.d, len(tt.wantWaits))
			}
			for i, d := range s.d {
				if d < tt.wantWaits[i][0] || d > tt.wantWaits[i][1] {
					t.Errorf("wait %d = %v, want within %v", i, d, tt.wantWaits[i])
				}
			}
		})
	}
}

// Each attempt gets the original input, whatever inner middleware did.
func TestRetryRestoresInput(t *testing.T) {
	var c counter
	var seen []string
	mutate := func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			in := map[string]any{"text": call.Input["text"].(string) + "+"}
			call.Input = in
			return next(ctx, call, w)
		}
	}
	var s sleeps
	tk := newToolkit(t, middleware.Retry{Sleep: s.sleep}.Middleware(), mutate)
	mustAdd(t, tk, toolkit.Stream("echo", "E.", func(ctx context.Context, in textIn, w toolkit.Writer) error {
		seen = append(seen, in.Text)
		if c.inc() < 3 {
			return toolkit.NewError(toolkit.CodeUnavailable, "down")
		}
		return w.Write(toolkit.Text(in.Text))
	}), toolkit.WithIdempotency(toolkit.Idempotent))
	_, final := run(t, tk, context.Background(), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "x"}})
	if final.Text() != "x+" || fmt.Sprint(seen) != "[x+ x+ x+]" {
		t.Errorf("final %q, inputs seen %v", final.Text(), seen)
	}
}

// A call cancelled while waiting to retry ends as interrupted.
func TestRetryCancelledWhileWaiting(t *testing.T) {
	var c counter
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	retry := middleware.Retry{Sleep: func(ctx context.Context, d time.Duration) error {
		cancel() // the caller gives up during the wait
		<-ctx.Done()
		return ctx.Err()
	}}
	tk := newToolkit(t, retry.Middleware())
	mustAdd(t, tk, raw("flaky", flaky(&c, false, toolkit.NewError(toolkit.CodeOverloaded, "busy"))), toolkit.WithIdempotency(toolkit.Idempotent))
	_, final := run(t, tk, ctx, toolkit.ToolCall{Name: "flaky"})
	if final.Code != toolkit.CodeInterrupted || final.Text() != toolkit.InterruptedText || c.runs() != 1 {
		t.Errorf("final %s %q after %d runs", final.Code, final.Text(), c.runs())
	}
}
