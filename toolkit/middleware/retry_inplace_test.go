package middleware_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// An inner middleware (or the tool) that changed the input map in place,
// rather than handing on a new one, changed what the next attempt got:
// each retry saw the changes of every attempt before it ("x+", "x++",
// "x+++"). Each attempt now gets the input the first one got.
func TestRetryRestoresInputChangedInPlace(t *testing.T) {
	var c counter
	var seen []string
	mutate := func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			call.Input["text"] = call.Input["text"].(string) + "+"
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
