package middleware_test

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// An attempt that asked its caller something (toolkit.Ask: a user was
// asked, and answered) is not run again when it fails: the caller would
// be asked the same question again, as output would be repeated.
func TestRetryNotAfterAsk(t *testing.T) {
	var runs, asks counter
	var s sleeps
	tk := newToolkit(t, middleware.Retry{MaxAttempts: 3, Sleep: s.sleep}.Middleware())
	mustAdd(t, tk, raw("asks", func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		runs.inc()
		if _, err := toolkit.Ask(ctx, w, "elicitation/create", map[string]any{"message": "Deploy?"}); err != nil {
			return err
		}
		return toolkit.NewError(toolkit.CodeOverloaded, "busy")
	}), toolkit.WithIdempotency(toolkit.Idempotent))
	ctx := toolkit.WithAsker(context.Background(), func(ctx context.Context, method string, params any) (any, error) {
		asks.inc()
		return map[string]any{"action": "accept"}, nil
	})
	_, final := run(t, tk, ctx, toolkit.ToolCall{Name: "asks"})
	if asks.runs() != 1 || runs.runs() != 1 || final.Code != toolkit.CodeOverloaded {
		t.Errorf("asked %d times, ran %d times, final %s; want the one ask, one run, overloaded", asks.runs(), runs.runs(), final.Code)
	}
}
